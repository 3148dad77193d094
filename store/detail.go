package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// EntryDetail is everything an owner sees about one entry.
type EntryDetail struct {
	Entry       Entry
	Notice      Notice
	Invitations []Invitation
	Grant       *Grant
	Events      []Event
	// CaseTwins are the program's other entries whose address differs from
	// this one only in the letter case of the part before the @ (addresses
	// keep it as typed, so they are other entries), in address order.
	CaseTwins []CaseTwin
}

// CaseTwin is another entry of the same program whose address differs
// only in letter case.
type CaseTwin struct {
	ID, Email, State string
}

func scanEvents(rows *sql.Rows) ([]Event, error) {
	return scanEventRows(rows, false)
}

// scanEventsWithEmail scans events followed by their entry's address
// (NULL when none or erased).
func scanEventsWithEmail(rows *sql.Rows) ([]Event, error) {
	return scanEventRows(rows, true)
}

func scanEventRows(rows *sql.Rows, withEmail bool) ([]Event, error) {
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var ev Event
		var entry, email, actorID sql.NullString
		var at int64
		var details string
		var actorActive bool
		dest := []any{&ev.ID, &ev.ProgramID, &entry, &ev.ActorKind, &ev.Type, &at, &details, &actorID, &ev.ActorName, &actorActive}
		if withEmail {
			dest = append(dest, &email)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		ev.EntryID, ev.EntryEmail = entry.String, email.String
		ev.ActorID, ev.ActorFormer = actorID.String, actorID.Valid && !actorActive
		ev.At = FromMillis(at)
		ev.StoredDetails = json.RawMessage(details)
		var err error
		if ev.Details, err = DecodeEventDetails(ev.Type, ev.StoredDetails); err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

// eventColumns are an event's columns, read from audit_events a joined
// with eventActorJoin, followed by its actor's team membership.
const eventColumns = `a.id, a.program_id, a.entry_id, a.actor_kind, a.event_type, a.event_at, a.details,
	s.id, coalesce(s.name, s.email, ''), coalesce(s.active, 0)`

// eventActorJoin finds an owner event's actor in the program's team: the
// membership ID history shows instead of the identity provider's user ID,
// and the name the team knows now (docs/history.md#who-acted).
const eventActorJoin = ` JOIN programs pr ON pr.id = a.program_id
	LEFT JOIN staff_members s ON a.actor_kind = 'owner' AND s.workspace_id = pr.workspace_id AND s.user_id = a.actor_user_id`

// EntryDetail returns an entry with the exact notice it joined under, its
// invitations, grant and audit history.
func (db *DB) EntryDetail(ctx context.Context, a Actor, programID, entryID string) (*EntryDetail, error) {
	var d EntryDetail
	err := db.View(ctx, func(tx *Tx) error {
		p, err := ownedProgram(ctx, tx, a, programID)
		if err != nil {
			return err
		}
		e, err := entryByID(ctx, tx, p.ID, entryID)
		if err != nil {
			return err
		}
		d.Entry = *e
		n, err := noticeByID(ctx, tx, e.NoticeID)
		if err != nil {
			return err
		}
		d.Notice = *n
		rows, err := tx.QueryContext(ctx, `SELECT `+invitationColumns+` FROM invitations i
			WHERE i.entry_id = ? AND i.program_id = ? ORDER BY i.issued_at DESC, i.id`, e.ID, p.ID)
		if err != nil {
			return fmt.Errorf("list invitations: %w", err)
		}
		for rows.Next() {
			inv, err := scanInvitation(rows)
			if err != nil {
				rows.Close()
				return err
			}
			d.Invitations = append(d.Invitations, *inv)
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return fmt.Errorf("list invitations: %w", err)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("list invitations: %w", err)
		}
		g, err := scanGrant(tx.QueryRowContext(ctx, `SELECT `+grantColumns+` FROM grants g WHERE g.entry_id = ? AND g.program_id = ?`, e.ID, p.ID))
		switch {
		case err == nil:
			d.Grant = g
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("read grant: %w", err)
		}
		evRows, err := tx.QueryContext(ctx, `SELECT `+eventColumns+` FROM audit_events a`+eventActorJoin+`
			WHERE a.entry_id = ? AND a.program_id = ? ORDER BY a.id`, e.ID, p.ID)
		if err != nil {
			return fmt.Errorf("list events: %w", err)
		}
		if d.Events, err = scanEvents(evRows); err != nil {
			return err
		}
		if e.Email == "" {
			return nil
		}
		d.CaseTwins, err = caseTwins(ctx, tx, p.ID, e)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// caseTwins lists the program's other unerased entries with e's address in
// another letter case. rule: it reads entries_state_search_idx (migration
// 00007), one seek per state, like the owner's search.
func caseTwins(ctx context.Context, tx *Tx, programID string, e *Entry) ([]CaseTwin, error) {
	args := []any{programID}
	for _, st := range EntryStates {
		args = append(args, st)
	}
	args = append(args, strings.ToLower(e.Email), e.ID)
	// PostgreSQL has no INDEXED BY: its planner picks the index itself.
	rows, err := tx.QueryContext(ctx, `SELECT id, email_key, state FROM entries `+tx.engine.pick(`INDEXED BY entries_state_search_idx`, ``)+`
		WHERE program_id = ? AND state IN (?`+strings.Repeat(", ?", len(EntryStates)-1)+`)
		AND lower(email_key) = ? AND id <> ? AND erased_at IS NULL
		ORDER BY email_key, id LIMIT 20`, args...)
	if err != nil {
		return nil, fmt.Errorf("list case twins: %w", err)
	}
	defer rows.Close()
	var out []CaseTwin
	for rows.Next() {
		var t CaseTwin
		if err := rows.Scan(&t.ID, &t.Email, &t.State); err != nil {
			return nil, fmt.Errorf("list case twins: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list case twins: %w", err)
	}
	return out, nil
}

// EventPage is a page of a program's audit log, newest first.
type EventPage struct {
	Events     []Event
	NextCursor string
}

// EventFilter narrows a program's audit log. Each field is optional.
type EventFilter struct {
	// Type is one event type (EventTypes).
	Type string
	// EntryID is one entry's ID (EntryIDFor finds it from an address).
	EntryID string
	// Cursor is the opaque position returned as NextCursor, or "".
	Cursor string
	// Limit is 1–MaxPageSize; 0 means DefaultPageSize.
	Limit int
}

// ProgramEvents returns a page of the program's audit log, newest first.
func (db *DB) ProgramEvents(ctx context.Context, a Actor, programID, cursor string, limit int) (*EventPage, error) {
	return db.FilteredEvents(ctx, a, programID, EventFilter{Cursor: cursor, Limit: limit})
}

// FilteredEvents returns a page of the program's audit log, newest first,
// holding only the events the filter names. Each event of an entry that
// still has its address carries it (EntryEmail). Every filter reads one
// index range (docs/ARCHITECTURE.md#the-audit-log).
func (db *DB) FilteredEvents(ctx context.Context, a Actor, programID string, f EventFilter) (*EventPage, error) {
	limit := f.Limit
	if limit == 0 {
		limit = DefaultPageSize
	}
	if limit < 1 || limit > MaxPageSize {
		return nil, Errorf(EINVALID, "A page holds 1–%d events.", MaxPageSize)
	}
	before := int64(1<<62 - 1)
	if f.Cursor != "" {
		n, err := strconv.ParseInt(f.Cursor, 10, 64)
		if err != nil || n < 1 {
			return nil, Errorf(EINVALID, "The page position is not valid. Start again from the first page.")
		}
		before = n
	}
	if f.Type != "" && !oneOf(f.Type, EventTypes) {
		return nil, Errorf(EINVALID, "Choose an event type from the list.")
	}
	entryID := ""
	if f.EntryID != "" {
		u, err := uuid.Parse(f.EntryID)
		if err != nil || len(f.EntryID) != 36 {
			return nil, Errorf(EINVALID, "An entry filter is an entry's ID.")
		}
		entryID = u.String()
	}
	page := &EventPage{}
	err := db.View(ctx, func(tx *Tx) error {
		p, err := ownedProgram(ctx, tx, a, programID)
		if err != nil {
			return err
		}
		q := `SELECT ` + eventColumns + `, CASE WHEN e.erased_at IS NULL THEN e.email_key END
			FROM audit_events a LEFT JOIN entries e ON e.id = a.entry_id AND e.program_id = a.program_id` + eventActorJoin + `
			WHERE a.program_id = ? AND a.id < ?`
		args := []any{p.ID, before}
		if f.Type != "" {
			q += ` AND a.event_type = ?`
			args = append(args, f.Type)
		}
		if entryID != "" {
			q += ` AND a.entry_id = ?`
			args = append(args, entryID)
		}
		rows, err := tx.QueryContext(ctx, q+` ORDER BY a.id DESC LIMIT ?`, append(args, limit+1)...)
		if err != nil {
			return fmt.Errorf("list events: %w", err)
		}
		page.Events, err = scanEventsWithEmail(rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(page.Events) > limit {
		page.Events = page.Events[:limit]
		page.NextCursor = strconv.FormatInt(page.Events[limit-1].ID, 10)
	}
	return page, nil
}

// EntryIDFor finds the entry of the program that an owner names by its ID or
// by its address (while the entry keeps one), for filters that must not
// carry an address in a URL.
func (db *DB) EntryIDFor(ctx context.Context, a Actor, programID, idOrAddress string) (string, error) {
	v := strings.TrimSpace(idOrAddress)
	notFound := Errorf(EINVALID, "No entry of this program has that ID or address. An address must be whole and match letter for letter, capitals before the @ included; the queue's search finds an address by its start, in any letter case.")
	var id string
	err := db.View(ctx, func(tx *Tx) error {
		p, err := ownedProgram(ctx, tx, a, programID)
		if err != nil {
			return err
		}
		q, arg := `SELECT id FROM entries WHERE program_id = ? AND id = ?`, any(strings.ToLower(v))
		if _, err := uuid.Parse(v); err != nil || len(v) != 36 {
			email, err := NormalizeEmail(v)
			if err != nil {
				return Errorf(EINVALID, "Give an entry's ID or its whole email address; the queue's search finds an address by its start.")
			}
			// An erased entry is found by its ID only.
			q, arg = `SELECT id FROM entries WHERE program_id = ? AND email_key = ? AND erased_at IS NULL`, email
		}
		err = tx.QueryRowContext(ctx, q, p.ID, arg).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound
		}
		if err != nil {
			return fmt.Errorf("find entry: %w", err)
		}
		return nil
	})
	return id, err
}

// exportCountSQL counts the rows an export of the program holds. The sum
// of BIGINTs is a numeric on PostgreSQL: the cast makes it an integer on
// both engines.
const exportCountSQL = `SELECT CAST(coalesce(sum(n), 0) AS BIGINT) FROM entry_state_counts WHERE program_id = ?`

// ExportQueue records the export as an audit event (holding only the row
// count, no personal data) and then calls fn for every entry of the
// program, oldest first, from one consistent snapshot.
func (db *DB) ExportQueue(ctx context.Context, a Actor, programID string, fn func(Entry) error) error {
	err := db.Update(ctx, func(tx *Tx) error {
		p, err := ownedProgram(ctx, tx, a, programID)
		if err != nil {
			return err
		}
		// The state counters hold every entry, erased ones too, as the
		// export does: a few rows instead of counting the queue while the
		// write lock is held (docs/PERFORMANCE.md#scale).
		var n int
		if err := tx.QueryRowContext(ctx, exportCountSQL, p.ID).Scan(&n); err != nil {
			return fmt.Errorf("count entries: %w", err)
		}
		return appendEvent(ctx, tx, p.ID, "", a, QueueExportedDetails{Rows: n})
	})
	if err != nil {
		return err
	}
	return db.View(ctx, func(tx *Tx) error {
		if _, err := ownedProgram(ctx, tx, a, programID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+entryColumns+entryFrom+`WHERE e.program_id = ? ORDER BY e.created_at, e.id`, programID)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			e, err := scanEntry(rows)
			if err != nil {
				return err
			}
			if err := fn(*e); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

// OwnerContent returns a program's private content for its owner, with its
// revision (0 and "" when none is written yet).
func (db *DB) OwnerContent(ctx context.Context, a Actor, programID string) (body string, revision int64, err error) {
	err = db.View(ctx, func(tx *Tx) error {
		p, err := ownedProgram(ctx, tx, a, programID)
		if err != nil {
			return err
		}
		body, revision, err = ownerContent(ctx, tx, p.ID)
		return err
	})
	return body, revision, err
}

// ownerContent reads a program's private content and its revision.
func ownerContent(ctx context.Context, tx *Tx, programID string) (body string, revision int64, err error) {
	err = tx.QueryRowContext(ctx, `SELECT body, revision FROM early_access_content WHERE program_id = ?`, programID).Scan(&body, &revision)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil
	}
	return body, revision, err
}

// ProgramNotices lists a program's notice versions, newest first.
func (db *DB) ProgramNotices(ctx context.Context, a Actor, programID string) ([]Notice, error) {
	var out []Notice
	err := db.View(ctx, func(tx *Tx) error {
		p, err := ownedProgram(ctx, tx, a, programID)
		if err != nil {
			return err
		}
		out, err = programNotices(ctx, tx, p.ID)
		return err
	})
	return out, err
}

// programNotices lists a program's notice versions, newest first.
func programNotices(ctx context.Context, tx *Tx, programID string) ([]Notice, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, program_id, version, purpose, contact_text, retention_text, published_at
		FROM notices WHERE program_id = ? ORDER BY version DESC`, programID)
	if err != nil {
		return nil, fmt.Errorf("list notices: %w", err)
	}
	defer rows.Close()
	var out []Notice
	for rows.Next() {
		var n Notice
		var at int64
		if err := rows.Scan(&n.ID, &n.ProgramID, &n.Version, &n.Purpose, &n.ContactText, &n.RetentionText, &at); err != nil {
			return nil, err
		}
		n.PublishedAt = FromMillis(at)
		out = append(out, n)
	}
	return out, rows.Err()
}

// ProgramPage is everything the owner's program page shows, read from one
// snapshot.
type ProgramPage struct {
	Program *Program
	// Counts holds the number of entries in each state that has any.
	Counts map[string]int
	// Notices are the notice versions, newest first.
	Notices []Notice
	// Content is the private content and ContentRevision its revision
	// ("" and 0 while none is written).
	Content         string
	ContentRevision int64
	Assets          []AssetInfo
	// Stats are the program at a glance: counts, seats, days and funnel.
	Stats *ProgramStats
}

// ProgramPage reads a program and everything its owner's page shows in one
// read transaction, checking ownership once.
func (db *DB) ProgramPage(ctx context.Context, a Actor, programID string) (*ProgramPage, error) {
	var pg ProgramPage
	err := db.View(ctx, func(tx *Tx) error {
		var err error
		if pg.Program, err = ownedProgram(ctx, tx, a, programID); err != nil {
			return err
		}
		id := pg.Program.ID
		if pg.Counts, err = stateCounts(ctx, tx, id); err != nil {
			return err
		}
		if pg.Stats, err = programStats(ctx, tx, pg.Program); err != nil {
			return err
		}
		if pg.Notices, err = programNotices(ctx, tx, id); err != nil {
			return err
		}
		if pg.Content, pg.ContentRevision, err = ownerContent(ctx, tx, id); err != nil {
			return err
		}
		pg.Assets, err = assetInfos(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &pg, nil
}
