package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Program is one waitlist with its caps and gates.
type Program struct {
	ID          string
	WorkspaceID string
	Slug        string
	// Name is what people read; the slug stays the program's address.
	Name                 string
	Purpose              string
	SignupOpen           bool
	AccessEnabled        bool
	QueueCap             int
	HourlyCap            int
	SeatCap              int
	MaxInvitationDays    int
	Revision             int64
	CurrentNoticeID      string
	CurrentNoticeVersion int
	HasContent           bool
	Occupied             int
	RetiredAt            *time.Time
	CreatedAt            time.Time
	UpdatedAt            time.Time
	// EntriesErasedBy is, once the program is retired, when the sweeper
	// will have erased every entry's email address: the retired-program
	// retention after RetiredAt, plus one sweep interval.
	EntriesErasedBy *time.Time
	// Retirement is how far a retired program's bookkeeping has gone; the
	// zero value for a program that is not retired.
	Retirement RetirementProgress
	// WorkspaceName and WorkspaceContact are the display name and public
	// privacy contact ("" when unset) of the program's workspace.
	WorkspaceName    string
	WorkspaceContact string
	// IntakeThisHour is how many new entries the intake of the UTC hour
	// of the read took (HourlyCap bounds it); IntakeHourEnds is when that
	// hour ends and the next one's intake starts.
	IntakeThisHour int
	IntakeHourEnds time.Time
}

// QueueFull reports whether every queue place is taken: a signup is then
// refused (ErrQueueFull) until a place frees or the cap is raised.
func (p *Program) QueueFull() bool { return p.Occupied >= p.QueueCap }

// IntakeUsedUp reports whether this hour's intake is used up: a signup is
// then refused (ErrIntakeFull) until IntakeHourEnds.
func (p *Program) IntakeUsedUp() bool { return p.IntakeThisHour >= p.HourlyCap }

// readIntake fills the program's intake of the current UTC hour, by the
// transaction's clock.
func (p *Program) readIntake(ctx context.Context, tx *Tx) error {
	hour := hourStart(tx.Now)
	p.IntakeHourEnds = hour.Add(time.Hour)
	err := tx.QueryRowContext(ctx, `SELECT admitted_count FROM intake_hours WHERE program_id = ? AND bucket_start = ?`,
		p.ID, Millis(hour)).Scan(&p.IntakeThisHour)
	if errors.Is(err, sql.ErrNoRows) {
		p.IntakeThisHour = 0
		return nil
	}
	if err != nil {
		return fmt.Errorf("read intake: %w", err)
	}
	return nil
}

// Notice is one immutable, versioned privacy notice of a program.
type Notice struct {
	ID            string
	ProgramID     string
	Version       int
	Purpose       string
	ContactText   string
	RetentionText string
	PublishedAt   time.Time
}

var slugPattern = regexp.MustCompile(`^[a-z0-9-]{3,60}$`)

// ValidSlug reports whether s is a valid public program slug.
func ValidSlug(s string) bool { return slugPattern.MatchString(s) }

// SlugFromName makes an address name from a program's name: its ASCII
// letters and digits, lowercased, each run of anything else one hyphen, at
// most 60 characters; "" when fewer than 3 are left.
func SlugFromName(name string) string {
	var b strings.Builder
	gap := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if gap && b.Len() > 0 {
				b.WriteByte('-')
			}
			gap = false
			b.WriteRune(r)
			continue
		}
		gap = true
	}
	s := b.String()
	if len(s) > 60 {
		s = strings.TrimRight(s[:60], "-")
	}
	if len(s) < 3 {
		return ""
	}
	return s
}

// NewProgram holds the fields of a program being created; its JSON form is
// the body of POST /api/owner/programs (docs/API.md).
type NewProgram struct {
	WorkspaceID       string `json:"workspaceId"`
	Slug              string `json:"slug"`
	Name              string `json:"name"`
	Purpose           string `json:"purpose"`
	QueueCap          int    `json:"queueCap"`
	HourlyCap         int    `json:"hourlyCap"`
	SeatCap           int    `json:"seatCap"`
	MaxInvitationDays int    `json:"maxInvitationDays"`
}

// Validate checks every bound with a message for the field at fault.
func (p NewProgram) Validate() error {
	if !ValidSlug(p.Slug) {
		return Errorf(EINVALID, "The address name must be 3–60 lowercase letters, digits or hyphens.").On("slug")
	}
	if err := checkProgramName(p.Name); err != nil {
		return err
	}
	if !textBetween(p.Purpose, 1, 1000) {
		return Errorf(EINVALID, "The purpose must be 1–1000 characters.").On("purpose")
	}
	if err := checkCaps(&p.QueueCap, &p.HourlyCap, &p.SeatCap); err != nil {
		return err
	}
	if p.MaxInvitationDays < 1 || p.MaxInvitationDays > 30 {
		return Errorf(EINVALID, "The invitation lifetime must be 1–30 days.").On("maxInvitationDays")
	}
	return nil
}

// The range of a program's queue, hourly and seat caps. The schema's CHECKs
// on programs (migration 00001) hold the same bounds, and the owner's forms
// offer them (views).
const (
	MinProgramCap = 1
	MaxProgramCap = 100000
)

// checkCaps checks a program's queue, hourly and seat caps against
// MinProgramCap..MaxProgramCap, in that order; a nil cap is one a partial
// update leaves as it is.
func checkCaps(queue, hourly, seat *int) error {
	for _, c := range []struct {
		v    *int
		name string
	}{{queue, "queue"}, {hourly, "hourly"}, {seat, "seat"}} {
		if c.v != nil && (*c.v < MinProgramCap || *c.v > MaxProgramCap) {
			return Errorf(EINVALID, "The %s cap must be between %d and %d.", c.name, MinProgramCap, MaxProgramCap).On(c.name + "Cap")
		}
	}
	return nil
}

// MaxNameChars bounds a program's and a workspace's display name.
const MaxNameChars = 80

var errProgramName = Errorf(EINVALID, "The program name must be 1–80 characters.").On("name")

// checkProgramName checks a display name, already trimmed: one line of
// characters that show as themselves (docs/API.md#names), 1–80 of them.
func checkProgramName(name string) error {
	if err := checkVisibleLine(name, "The program name", "name"); err != nil {
		return err
	}
	if name != strings.TrimSpace(name) || !textBetween(name, 1, MaxNameChars) {
		return errProgramName
	}
	return nil
}

// textBetween reports whether s, trimmed, has between min and max characters.
func textBetween(s string, min, max int) bool {
	n := utf8.RuneCountInString(strings.TrimSpace(s))
	return utf8.ValidString(s) && n >= min && n <= max
}

const programColumns = `p.id, p.workspace_id, p.public_slug, p.purpose, p.signup_open, p.access_enabled,
	p.queue_cap, p.hourly_cap, p.seat_cap, p.max_invitation_days, p.revision, coalesce(p.current_notice_id, ''),
	coalesce((SELECT n.version FROM notices n WHERE n.id = p.current_notice_id), 0),
	EXISTS (SELECT 1 FROM early_access_content c WHERE c.program_id = p.id),
	p.occupied, p.retired_at, p.created_at, p.updated_at, p.name,
	p.retire_pending, p.retire_done, p.retire_total,
	(SELECT w.display_name FROM workspaces w WHERE w.id = p.workspace_id),
	coalesce((SELECT w.contact FROM workspaces w WHERE w.id = p.workspace_id), '')`

func scanProgram(row interface{ Scan(...any) error }) (*Program, error) {
	var p Program
	var retired sql.NullInt64
	var created, updated int64
	err := row.Scan(&p.ID, &p.WorkspaceID, &p.Slug, &p.Purpose, &p.SignupOpen, &p.AccessEnabled,
		&p.QueueCap, &p.HourlyCap, &p.SeatCap, &p.MaxInvitationDays, &p.Revision, &p.CurrentNoticeID,
		&p.CurrentNoticeVersion, &p.HasContent, &p.Occupied, &retired, &created, &updated, &p.Name,
		&p.Retirement.Pending, &p.Retirement.Done, &p.Retirement.Total,
		&p.WorkspaceName, &p.WorkspaceContact)
	if err != nil {
		return nil, err
	}
	if retired.Valid {
		t := FromMillis(retired.Int64)
		p.RetiredAt = &t
	}
	p.CreatedAt, p.UpdatedAt = FromMillis(created), FromMillis(updated)
	return &p, nil
}

// setErasedBy fills EntriesErasedBy from the retention policy.
func (p *Program) setErasedBy(r Retention) {
	if p.RetiredAt == nil {
		return
	}
	t := p.RetiredAt.Add(r.RetiredProgram + SweepInterval)
	p.EntriesErasedBy = &t
}

func programWhere(ctx context.Context, tx *Tx, where string, args ...any) (*Program, error) {
	p, err := scanProgram(tx.QueryRowContext(ctx, `SELECT `+programColumns+` FROM programs p WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Errorf(ENOTFOUND, "Not found.")
	}
	if err != nil {
		return nil, fmt.Errorf("read program: %w", err)
	}
	p.setErasedBy(tx.retention)
	if err := p.readIntake(ctx, tx); err != nil {
		return nil, err
	}
	return p, nil
}

// ownedProgram reads a program the actor currently owns. A missing program
// and a foreign one give the same not-found error.
func ownedProgram(ctx context.Context, tx *Tx, a Actor, programID string) (*Program, error) {
	if _, err := uuid.Parse(programID); err != nil {
		return nil, Errorf(ENOTFOUND, "Not found.")
	}
	p, err := programWhere(ctx, tx, "p.id = ?", programID)
	if err != nil {
		return nil, err
	}
	if err := requireOwner(ctx, tx, a, p.WorkspaceID); err != nil {
		return nil, err
	}
	return p, nil
}

// ownedForChange opens an owner's write: the program the actor currently
// owns (ownedProgram), refused unchanged when it is retired — with
// retiredRefusal, or, when that is empty, unchangedIfRetired's refusal for
// its entries, invitations and access.
func ownedForChange(ctx context.Context, tx *Tx, a Actor, programID, retiredRefusal string) (*Program, error) {
	p, err := ownedProgram(ctx, tx, a, programID)
	if err != nil {
		return nil, err
	}
	if p.RetiredAt != nil && retiredRefusal != "" {
		return nil, Errorf(ECONFLICT, "%s", retiredRefusal)
	}
	return p, unchangedIfRetired(p)
}

// programRetired is the refusal of a change to a retired program itself:
// its settings, content and assets.
const programRetired = "This program is retired."

// CreateProgram creates a closed program with no notice and no content.
func (db *DB) CreateProgram(ctx context.Context, a Actor, np NewProgram) (*Program, error) {
	np.Purpose = strings.TrimSpace(np.Purpose)
	np.Name = strings.TrimSpace(np.Name)
	if err := np.Validate(); err != nil {
		return nil, err
	}
	var p *Program
	err := db.Update(ctx, func(tx *Tx) error {
		if err := requireOwner(ctx, tx, a, np.WorkspaceID); err != nil {
			return err
		}
		var taken int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM programs WHERE public_slug = ?`, np.Slug).Scan(&taken); err != nil {
			return fmt.Errorf("check slug: %w", err)
		}
		if taken > 0 {
			return Errorf(ECONFLICT, "Another program already uses that address name.")
		}
		id := uuid.NewString()
		_, err := tx.ExecContext(ctx, `INSERT INTO programs (id, workspace_id, public_slug, name, purpose, queue_cap, hourly_cap,
			seat_cap, max_invitation_days, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, np.WorkspaceID, np.Slug, np.Name, np.Purpose, np.QueueCap, np.HourlyCap, np.SeatCap, np.MaxInvitationDays,
			Millis(tx.Now), Millis(tx.Now))
		if err != nil {
			return fmt.Errorf("insert program: %w", err)
		}
		if err := appendEvent(ctx, tx, id, "", a, ProgramCreatedDetails{}); err != nil {
			return err
		}
		p, err = programWhere(ctx, tx, "p.id = ?", id)
		return err
	})
	return p, err
}

// NewNotice holds the texts of a notice being published; its JSON form is
// the body of POST /api/owner/programs/{id}/notices (docs/API.md).
type NewNotice struct {
	Purpose       string `json:"purpose"`
	ContactText   string `json:"contactText"`
	RetentionText string `json:"retentionText"`
}

// Validate checks the notice's bounds.
func (n NewNotice) Validate() error {
	switch {
	case !textBetween(n.Purpose, 1, 1000):
		return Errorf(EINVALID, "The purpose must be 1–1000 characters.").On("purpose")
	case !textBetween(n.ContactText, 1, 2000):
		return Errorf(EINVALID, "The contact text must be 1–2000 characters.").On("contactText")
	case !textBetween(n.RetentionText, 1, 1000):
		return Errorf(EINVALID, "The retention text must be 1–1000 characters.").On("retentionText")
	}
	return nil
}

// PublishNotice appends the next notice version and makes it current. The
// purpose must equal the program's: a new purpose needs a new program.
func (db *DB) PublishNotice(ctx context.Context, a Actor, programID string, nn NewNotice) (*Notice, error) {
	nn.Purpose = strings.TrimSpace(nn.Purpose)
	nn.ContactText = strings.TrimSpace(nn.ContactText)
	nn.RetentionText = strings.TrimSpace(nn.RetentionText)
	if err := nn.Validate(); err != nil {
		return nil, err
	}
	var n *Notice
	err := db.Update(ctx, func(tx *Tx) error {
		p, err := ownedForChange(ctx, tx, a, programID, programRetired)
		if err != nil {
			return err
		}
		// rule (docs/API.md#programs): a changed purpose requires a new
		// program and a new choice.
		if nn.Purpose != p.Purpose {
			return Errorf(ECONFLICT, "A notice must state the program's purpose exactly. For a new purpose, create a new program.").On("purpose")
		}
		n = &Notice{ID: uuid.NewString(), ProgramID: p.ID, Version: p.CurrentNoticeVersion + 1, Purpose: nn.Purpose,
			ContactText: nn.ContactText, RetentionText: nn.RetentionText, PublishedAt: tx.Now}
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) + 1 FROM notices WHERE program_id = ?`, p.ID).Scan(&n.Version); err != nil {
			return fmt.Errorf("next notice version: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO notices (id, program_id, version, purpose, contact_text, retention_text, published_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, n.ID, n.ProgramID, n.Version, n.Purpose, n.ContactText, n.RetentionText, Millis(tx.Now)); err != nil {
			return fmt.Errorf("insert notice: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE programs SET current_notice_id = ?, revision = revision + 1, updated_at = ? WHERE id = ?`,
			n.ID, Millis(tx.Now), p.ID); err != nil {
			return fmt.Errorf("set current notice: %w", err)
		}
		return appendEvent(ctx, tx, p.ID, "", a, NoticePublishedDetails{Version: n.Version})
	})
	return n, err
}

// ProgramSettings is a partial update of a program; nil fields stay as they
// are. Its JSON form is the body of PATCH /api/owner/programs/{id}.
type ProgramSettings struct {
	ExpectedRevision int64   `json:"expectedRevision"`
	Name             *string `json:"name"`
	SignupOpen       *bool   `json:"signupOpen"`
	AccessEnabled    *bool   `json:"accessEnabled"`
	QueueCap         *int    `json:"queueCap"`
	HourlyCap        *int    `json:"hourlyCap"`
	SeatCap          *int    `json:"seatCap"`
}

// UpdateProgram applies settings if the program is still at the expected
// revision. Signup opens only with a current notice, access only with
// content; the seat cap never drops below the seats in use; lowering a cap
// removes nobody.
func (db *DB) UpdateProgram(ctx context.Context, a Actor, programID string, s ProgramSettings) (*Program, error) {
	if s.Name != nil {
		name := strings.TrimSpace(*s.Name)
		if err := checkProgramName(name); err != nil {
			return nil, err
		}
		s.Name = &name
	}
	if err := checkCaps(s.QueueCap, s.HourlyCap, s.SeatCap); err != nil {
		return nil, err
	}
	var p *Program
	err := db.Update(ctx, func(tx *Tx) error {
		var err error
		if p, err = ownedProgram(ctx, tx, a, programID); err != nil {
			return err
		}
		if p.Revision != s.ExpectedRevision {
			return Errorf(ECONFLICT, "The program changed since you loaded it. Reload and try again.")
		}
		if p.RetiredAt != nil {
			return Errorf(ECONFLICT, "This program is retired.")
		}
		next := s.applied(*p)
		if err := checkSettingsChange(ctx, tx, p, &next); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE programs SET name = ?, signup_open = ?, access_enabled = ?, queue_cap = ?, hourly_cap = ?,
			seat_cap = ?, revision = revision + 1, updated_at = ? WHERE id = ?`,
			next.Name, next.SignupOpen, next.AccessEnabled, next.QueueCap, next.HourlyCap, next.SeatCap, Millis(tx.Now), p.ID)
		if err != nil {
			return fmt.Errorf("update program: %w", err)
		}
		if err := appendEvent(ctx, tx, p.ID, "", a, programChanged(p, &next)); err != nil {
			return err
		}
		p, err = programWhere(ctx, tx, "p.id = ?", p.ID)
		return err
	})
	return p, err
}

// applied is p with the settings s sets.
func (s ProgramSettings) applied(p Program) Program {
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	if s.Name != nil {
		p.Name = *s.Name
	}
	if s.SignupOpen != nil {
		p.SignupOpen = *s.SignupOpen
	}
	if s.AccessEnabled != nil {
		p.AccessEnabled = *s.AccessEnabled
	}
	set(&p.QueueCap, s.QueueCap)
	set(&p.HourlyCap, s.HourlyCap)
	set(&p.SeatCap, s.SeatCap)
	return p
}

// checkSettingsChange refuses a change of program p's settings to next
// that the program is not ready for: signup opens only with a current
// notice, access only with content, and the seat cap never drops below the
// seats in use.
func checkSettingsChange(ctx context.Context, tx *Tx, p, next *Program) error {
	if next.SignupOpen && !p.SignupOpen && p.CurrentNoticeID == "" {
		return Errorf(ECONFLICT, "Publish a notice before opening signup.").On("signupOpen")
	}
	if next.AccessEnabled && !p.AccessEnabled && !p.HasContent {
		return Errorf(ECONFLICT, "Write the private content before enabling access.").On("accessEnabled")
	}
	if next.SeatCap < p.SeatCap {
		used, err := seatsInUse(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		if next.SeatCap < used {
			return Errorf(ECONFLICT, "The seat cap cannot be below the %d seats in use (active grants and unexpired invitations).", used).On("seatCap")
		}
	}
	return nil
}

// seatsInUse counts active grants plus unexpired issued invitations, judged
// by the transaction clock.
func seatsInUse(ctx context.Context, tx *Tx, programID string) (int, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM grants WHERE program_id = ? AND active = 1) +
		(SELECT count(*) FROM invitations WHERE program_id = ? AND state = 'issued' AND expires_at > ?)`,
		programID, programID, Millis(tx.Now)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count seats: %w", err)
	}
	return n, nil
}

// ContentEdit replaces a program's private content: the new body, and the
// revision it was edited from (0 when there is no content yet).
type ContentEdit struct {
	ExpectedRevision int64  `json:"expectedRevision"`
	Body             string `json:"body"`
}

// PutContent replaces a program's private content if it is still at the
// expected revision (0 when there is none yet). It returns the new revision.
func (db *DB) PutContent(ctx context.Context, a Actor, programID string, edit ContentEdit) (int64, error) {
	expectedRevision, body := edit.ExpectedRevision, edit.Body
	if !textBetween(body, 1, 20000) {
		return 0, Errorf(EINVALID, "The private content must be 1–20000 characters.").On("body")
	}
	var rev int64
	err := db.Update(ctx, func(tx *Tx) error {
		p, err := ownedForChange(ctx, tx, a, programID, programRetired)
		if err != nil {
			return err
		}
		var cur int64
		err = tx.QueryRowContext(ctx, `SELECT revision FROM early_access_content WHERE program_id = ?`, p.ID).Scan(&cur)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read content: %w", err)
		}
		if cur != expectedRevision {
			return Errorf(ECONFLICT, "The content changed since you loaded it. Reload and try again.")
		}
		rev = cur + 1
		_, err = tx.ExecContext(ctx, `INSERT INTO early_access_content (program_id, revision, body, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (program_id) DO UPDATE SET revision = excluded.revision, body = excluded.body, updated_at = excluded.updated_at`,
			p.ID, rev, body, Millis(tx.Now))
		if err != nil {
			return fmt.Errorf("write content: %w", err)
		}
		return appendEvent(ctx, tx, p.ID, "", a, ContentUpdatedDetails{Revision: rev})
	})
	return rev, err
}

// OpenPrograms lists programs open for signup, for the public index.
func (db *DB) OpenPrograms(ctx context.Context) ([]Program, error) {
	return db.listPrograms(ctx, "open programs", `JOIN workspaces w ON w.id = p.workspace_id
		WHERE p.signup_open = 1 AND w.active = 1 AND p.current_notice_id IS NOT NULL ORDER BY p.created_at, p.id`)
}

// listPrograms reads every program the query tail selects.
func (db *DB) listPrograms(ctx context.Context, what, tail string, args ...any) ([]Program, error) {
	var out []Program
	err := db.View(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+programColumns+` FROM programs p `+tail, args...)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		defer rows.Close()
		for rows.Next() {
			p, err := scanProgram(rows)
			if err != nil {
				return err
			}
			p.setErasedBy(tx.retention)
			out = append(out, *p)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		for i := range out {
			if err := out[i].readIntake(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// PublicProgram returns the program at slug with its current notice, for the
// public signup page. A program without a notice is not found.
func (db *DB) PublicProgram(ctx context.Context, slug string) (*Program, *Notice, error) {
	if !ValidSlug(slug) {
		return nil, nil, Errorf(ENOTFOUND, "Not found.")
	}
	var p *Program
	var n *Notice
	err := db.View(ctx, func(tx *Tx) error {
		var err error
		p, err = programWhere(ctx, tx, `p.public_slug = ? AND p.current_notice_id IS NOT NULL
			AND EXISTS (SELECT 1 FROM workspaces w WHERE w.id = p.workspace_id AND w.active = 1)`, slug)
		if err != nil {
			return err
		}
		n, err = noticeByID(ctx, tx, p.CurrentNoticeID)
		return err
	})
	return p, n, err
}

// PublicNotice returns the program at slug with one of its notice versions.
// It is one query: the form's 202 page reads it after every signup.
func (db *DB) PublicNotice(ctx context.Context, slug string, version int) (*Program, *Notice, error) {
	if !ValidSlug(slug) {
		return nil, nil, Errorf(ENOTFOUND, "Not found.")
	}
	var p *Program
	n := &Notice{}
	err := db.View(ctx, func(tx *Tx) error {
		var at int64
		var err error
		p, err = scanProgram(alsoScan{tx.QueryRowContext(ctx, `SELECT `+programColumns+`,
				n.id, n.program_id, n.version, n.purpose, n.contact_text, n.retention_text, n.published_at
			FROM programs p JOIN notices n ON n.program_id = p.id AND n.version = ?
			WHERE p.public_slug = ?`, version, slug),
			[]any{&n.ID, &n.ProgramID, &n.Version, &n.Purpose, &n.ContactText, &n.RetentionText, &at}})
		if errors.Is(err, sql.ErrNoRows) {
			return Errorf(ENOTFOUND, "Not found.")
		}
		if err != nil {
			return fmt.Errorf("read program and notice: %w", err)
		}
		n.PublishedAt = FromMillis(at)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return p, n, nil
}

// alsoScan scans a row into the destinations its caller names, then into
// more: one row that joins a program with another table.
type alsoScan struct {
	row  interface{ Scan(...any) error }
	more []any
}

func (a alsoScan) Scan(dest ...any) error { return a.row.Scan(append(dest, a.more...)...) }

func noticeByID(ctx context.Context, tx *Tx, id string) (*Notice, error) {
	var n Notice
	var at int64
	err := tx.QueryRowContext(ctx, `SELECT id, program_id, version, purpose, contact_text, retention_text, published_at
		FROM notices WHERE id = ?`, id).Scan(&n.ID, &n.ProgramID, &n.Version, &n.Purpose, &n.ContactText, &n.RetentionText, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Errorf(ENOTFOUND, "Not found.")
	}
	if err != nil {
		return nil, fmt.Errorf("read notice: %w", err)
	}
	n.PublishedAt = FromMillis(at)
	return &n, nil
}

// OwnerPrograms lists the programs of every workspace the actor currently owns.
func (db *DB) OwnerPrograms(ctx context.Context, a Actor) ([]Program, error) {
	return db.listPrograms(ctx, "owner programs", `JOIN staff_members s ON s.workspace_id = p.workspace_id
			AND s.user_id = ? AND s.active = 1 AND s.role = 'owner'
		JOIN workspaces w ON w.id = p.workspace_id AND w.active = 1
		ORDER BY p.created_at, p.id`, a.UserID)
}
