package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Workspace groups programs and their owners.
type Workspace struct {
	ID string
	// Name is the workspace's unique name, as the CLI addresses it.
	Name string
	// DisplayName is what people read; Contact is the public address or
	// https link for privacy questions, "" until an owner sets one.
	DisplayName string
	Contact     string
	Active      bool
	CreatedAt   time.Time
}

// StaffMember is a workspace owner membership.
type StaffMember struct {
	// ID is the membership's own ID: history names an owner's actions by it.
	ID          string
	WorkspaceID string
	UserID      string
	Role        string
	Active      bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Name and Email are what the team knows the owner by: a name given
	// when they were added, the address they were added by or last signed
	// in with; either may be "".
	Name, Email string
	// LastSeenAt is the owner's last request to the console, nil before it.
	LastSeenAt *time.Time
}

// validWorkspaceName checks the schema's bound with a clear message.
func validWorkspaceName(name string) error {
	// rule (docs/API.md#names): a new workspace shows its unique name
	// until an owner sets another.
	if err := checkVisibleLine(name, "A workspace name", ""); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(name)); n < 1 || n > 120 || name != strings.TrimSpace(name) {
		return Errorf(EINVALID, "A workspace name is 1–120 characters with no surrounding spaces.")
	}
	return nil
}

func validUserID(id string) error {
	if len(id) < 1 || len(id) > 128 || strings.ContainsAny(id, " \t\r\n") {
		return Errorf(EINVALID, "A user ID is 1–128 characters with no spaces.")
	}
	return nil
}

// workspaceByName reads a workspace by its unique name.
func workspaceByName(ctx context.Context, tx *Tx, name string) (*Workspace, error) {
	var w Workspace
	var created int64
	err := tx.QueryRowContext(ctx, `SELECT id, name, display_name, coalesce(contact, ''), active, created_at
		FROM workspaces WHERE name = ?`, name).
		Scan(&w.ID, &w.Name, &w.DisplayName, &w.Contact, &w.Active, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Errorf(ENOTFOUND, "No workspace is named %q.", name)
	}
	if err != nil {
		return nil, fmt.Errorf("read workspace: %w", err)
	}
	w.CreatedAt = FromMillis(created)
	return &w, nil
}

// ensureWorkspace returns the named workspace, creating it (audited) if needed.
func ensureWorkspace(ctx context.Context, tx *Tx, a Actor, name string) (*Workspace, error) {
	w, err := workspaceByName(ctx, tx, name)
	if ErrorCode(err) != ENOTFOUND {
		return w, err
	}
	w = &Workspace{ID: uuid.NewString(), Name: name, DisplayName: defaultDisplayName(name), Active: true, CreatedAt: tx.Now}
	if _, err := tx.ExecContext(ctx, `INSERT INTO workspaces (id, name, display_name, active, created_at) VALUES (?, ?, ?, 1, ?)`,
		w.ID, w.Name, w.DisplayName, Millis(tx.Now)); err != nil {
		return nil, fmt.Errorf("insert workspace: %w", err)
	}
	if err := appendWorkspaceEvent(ctx, tx, w.ID, a, "workspace_created", ""); err != nil {
		return nil, err
	}
	return w, nil
}

// AddOwner makes userID an active owner of the named workspace, creating the
// workspace if it does not exist. Every change is audited; adding an existing
// active owner changes nothing and records nothing. This is the only way a
// staff row comes to exist: signing in never creates one.
func (db *DB) AddOwner(ctx context.Context, a Actor, workspaceName, userID string) (*Workspace, error) {
	if err := validWorkspaceName(workspaceName); err != nil {
		return nil, err
	}
	if err := validUserID(userID); err != nil {
		return nil, err
	}
	var w *Workspace
	err := db.Update(ctx, func(tx *Tx) error {
		var err error
		if w, err = ensureWorkspace(ctx, tx, a, workspaceName); err != nil {
			return err
		}
		var active sql.NullBool
		err = tx.QueryRowContext(ctx, `SELECT active FROM staff_members WHERE workspace_id = ? AND user_id = ?`,
			w.ID, userID).Scan(&active)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, `INSERT INTO staff_members (id, workspace_id, user_id, role, active, created_at, updated_at)
				VALUES (?, ?, ?, 'owner', 1, ?, ?)`, uuid.NewString(), w.ID, userID, Millis(tx.Now), Millis(tx.Now))
		case err != nil:
			return fmt.Errorf("read staff: %w", err)
		case active.Bool:
			return nil // already an active owner
		default:
			_, err = tx.ExecContext(ctx, `UPDATE staff_members SET active = 1, updated_at = ? WHERE workspace_id = ? AND user_id = ?`,
				Millis(tx.Now), w.ID, userID)
		}
		if err != nil {
			return fmt.Errorf("write staff: %w", err)
		}
		return appendWorkspaceEvent(ctx, tx, w.ID, a, "owner_added", userID)
	})
	return w, err
}

// RemoveOwner deactivates userID's membership of the named workspace. The
// owner is denied from their next request on. The row stays for the audit
// trail.
func (db *DB) RemoveOwner(ctx context.Context, a Actor, workspaceName, userID string) error {
	if err := validUserID(userID); err != nil {
		return err
	}
	return db.Update(ctx, func(tx *Tx) error {
		w, err := workspaceByName(ctx, tx, workspaceName)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE staff_members SET active = 0, email = NULL, updated_at = ?
			WHERE workspace_id = ? AND user_id = ? AND active = 1`, Millis(tx.Now), w.ID, userID)
		if err != nil {
			return fmt.Errorf("deactivate staff: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return Errorf(ENOTFOUND, "That user is not an active owner of %q.", workspaceName)
		}
		tx.erased = true // the address leaves the log like an erased entry's
		return appendWorkspaceEvent(ctx, tx, w.ID, a, "owner_removed", userID)
	})
}

// ListOwners lists the named workspace's memberships, active and removed.
func (db *DB) ListOwners(ctx context.Context, workspaceName string) ([]StaffMember, error) {
	var out []StaffMember
	err := db.View(ctx, func(tx *Tx) error {
		w, err := workspaceByName(ctx, tx, workspaceName)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT workspace_id, user_id, role, active, created_at, updated_at
			FROM staff_members WHERE workspace_id = ? ORDER BY created_at, user_id`, w.ID)
		if err != nil {
			return fmt.Errorf("list staff: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var s StaffMember
			var c, u int64
			if err := rows.Scan(&s.WorkspaceID, &s.UserID, &s.Role, &s.Active, &c, &u); err != nil {
				return err
			}
			s.CreatedAt, s.UpdatedAt = FromMillis(c), FromMillis(u)
			out = append(out, s)
		}
		return rows.Err()
	})
	return out, err
}

// OwnedWorkspaces returns the active workspaces where userID is currently an
// active owner. The owner router calls it on every request, so a removed
// owner is denied on their next request.
func (db *DB) OwnedWorkspaces(ctx context.Context, userID string) ([]Workspace, error) {
	var out []Workspace
	err := db.View(ctx, func(tx *Tx) error {
		var err error
		out, err = ownedWorkspaces(ctx, tx, userID)
		return err
	})
	return out, err
}

// IsOwner reports whether userID is currently an active owner of at least
// one active workspace: what a page's navigation needs to show the owner
// console link, in one indexed read. Owner routes still check the
// membership itself on every request.
func (db *DB) IsOwner(ctx context.Context, userID string) (bool, error) {
	var owner bool
	err := db.readRow(ctx, `SELECT EXISTS (SELECT 1
		FROM staff_members s JOIN workspaces w ON w.id = s.workspace_id
		WHERE s.user_id = ? AND s.active = 1 AND s.role = 'owner' AND w.active = 1)`, userID).Scan(&owner)
	if err != nil {
		return false, fmt.Errorf("is owner: %w", err)
	}
	return owner, nil
}

func ownedWorkspaces(ctx context.Context, tx *Tx, userID string) ([]Workspace, error) {
	rows, err := tx.QueryContext(ctx, `SELECT w.id, w.name, w.display_name, coalesce(w.contact, ''), w.active, w.created_at
		FROM staff_members s JOIN workspaces w ON w.id = s.workspace_id
		WHERE s.user_id = ? AND s.active = 1 AND s.role = 'owner' AND w.active = 1
		ORDER BY w.name`, userID)
	if err != nil {
		return nil, fmt.Errorf("owned workspaces: %w", err)
	}
	defer rows.Close()
	var out []Workspace
	for rows.Next() {
		var w Workspace
		var c int64
		if err := rows.Scan(&w.ID, &w.Name, &w.DisplayName, &w.Contact, &w.Active, &c); err != nil {
			return nil, err
		}
		w.CreatedAt = FromMillis(c)
		out = append(out, w)
	}
	return out, rows.Err()
}

// requireOwner checks, inside a transaction, that a is a current owner of the
// active workspace. Absent, foreign, inactive or revoked all give the same
// not-found error.
func requireOwner(ctx context.Context, tx *Tx, a Actor, workspaceID string) error {
	if a.Kind != ActorOwner || a.UserID == "" {
		return Errorf(ENOTFOUND, "Not found.")
	}
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM staff_members s JOIN workspaces w ON w.id = s.workspace_id
		WHERE s.workspace_id = ? AND s.user_id = ? AND s.active = 1 AND s.role = 'owner' AND w.active = 1`,
		workspaceID, a.UserID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return Errorf(ENOTFOUND, "Not found.")
	}
	if err != nil {
		return fmt.Errorf("check owner: %w", err)
	}
	return nil
}

// defaultDisplayName is a new workspace's display name: its unique name,
// cut to the display bound.
func defaultDisplayName(name string) string {
	r := []rune(name)
	if len(r) > MaxNameChars {
		r = r[:MaxNameChars]
	}
	return strings.TrimSpace(string(r))
}

// WorkspaceSettings is a partial update of what a workspace shows people;
// nil fields stay as they are. Its JSON form is the body of
// PATCH /api/owner/workspaces/{id}.
type WorkspaceSettings struct {
	DisplayName *string `json:"displayName"`
	Contact     *string `json:"contact"`
}

// CheckContact checks a public privacy contact: an email address or an
// https link, returned in its stored form.
func CheckContact(v string) (string, error) {
	v = strings.TrimSpace(v)
	invalid := Errorf(EINVALID, "The privacy contact must be an email address (privacy@example.com) or an https:// link.").On("contact")
	if err := checkVisibleLine(v, "The privacy contact", "contact"); err != nil {
		return "", err
	}
	if len(v) > 254 {
		return "", invalid
	}
	if strings.HasPrefix(strings.ToLower(v), "https://") {
		u, err := url.Parse(v)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Hostname() == "" ||
			strings.ContainsAny(v, " \t\r\n<>\"") {
			return "", invalid
		}
		return v, nil
	}
	email, err := NormalizeEmail(v)
	if err != nil {
		return "", invalid
	}
	return email, nil
}

// Validate checks the settings and returns them trimmed.
func (s WorkspaceSettings) Validate() (WorkspaceSettings, error) {
	if s.DisplayName != nil {
		name := strings.TrimSpace(*s.DisplayName)
		if err := checkVisibleLine(name, "The workspace name people see", "displayName"); err != nil {
			return s, err
		}
		if !textBetween(name, 1, MaxNameChars) {
			return s, Errorf(EINVALID, "The workspace name people see must be 1–80 characters.").On("displayName")
		}
		s.DisplayName = &name
	}
	if s.Contact != nil {
		c, err := CheckContact(*s.Contact)
		if err != nil {
			return s, err
		}
		s.Contact = &c
	}
	return s, nil
}

// UpdateWorkspace changes what a workspace the actor owns shows people.
func (db *DB) UpdateWorkspace(ctx context.Context, a Actor, workspaceID string, s WorkspaceSettings) (*Workspace, error) {
	s, err := s.Validate()
	if err != nil {
		return nil, err
	}
	if _, err := uuid.Parse(workspaceID); err != nil {
		return nil, Errorf(ENOTFOUND, "Not found.")
	}
	var w *Workspace
	err = db.Update(ctx, func(tx *Tx) error {
		if err := requireOwner(ctx, tx, a, workspaceID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE workspaces SET display_name = coalesce(?, display_name),
			contact = coalesce(?, contact) WHERE id = ?`, s.DisplayName, s.Contact, workspaceID); err != nil {
			return fmt.Errorf("update workspace: %w", err)
		}
		var name string
		if err := tx.QueryRowContext(ctx, `SELECT name FROM workspaces WHERE id = ?`, workspaceID).Scan(&name); err != nil {
			return fmt.Errorf("read workspace: %w", err)
		}
		w, err = workspaceByName(ctx, tx, name)
		return err
	})
	return w, err
}

// PrivacyContact is who answers privacy questions about some programs.
type PrivacyContact struct {
	WorkspaceName string
	// Contact is an email address or https link; "" when none is set.
	Contact string
	// Programs are the names of the workspace's public programs.
	Programs []string
}

// PrivacyContacts lists, for the privacy page, every active workspace with
// a public program (one with a notice), its contact and those programs.
func (db *DB) PrivacyContacts(ctx context.Context) ([]PrivacyContact, error) {
	var out []PrivacyContact
	err := db.View(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT w.id, w.display_name, coalesce(w.contact, ''), p.name
			FROM workspaces w JOIN programs p ON p.workspace_id = w.id
			WHERE w.active = 1 AND p.current_notice_id IS NOT NULL
			ORDER BY w.display_name, w.id, p.created_at, p.id`)
		if err != nil {
			return fmt.Errorf("privacy contacts: %w", err)
		}
		defer rows.Close()
		last := ""
		for rows.Next() {
			var id, name, contact, program string
			if err := rows.Scan(&id, &name, &contact, &program); err != nil {
				return err
			}
			if id != last {
				out = append(out, PrivacyContact{WorkspaceName: name, Contact: contact})
				last = id
			}
			out[len(out)-1].Programs = append(out[len(out)-1].Programs, program)
		}
		return rows.Err()
	})
	return out, err
}
