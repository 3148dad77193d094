package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// OwnerInviteLifetime is how long an owner added by address may take their
// place by signing in with it (docs/console.md#team).
const OwnerInviteLifetime = 7 * 24 * time.Hour

// OwnerInvite is an owner added by address who has not yet signed in with
// it: the place waits for the first sign-in with that address verified by
// the identity provider, until ExpiresAt.
type OwnerInvite struct {
	ID          string
	WorkspaceID string
	Email       string
	Name        string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// checkOwnerName checks an owner's optional name: at most 80 characters on
// one line.
func checkOwnerName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if len([]rune(name)) > 80 || strings.ContainsAny(name, "\r\n\t") {
		return "", Errorf(EINVALID, "A name is at most 80 characters on one line.").On("name")
	}
	return name, nil
}

// nullable is nil for "", so an absent text is NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// AddOwnerByEmail adds an owner by address from the command line,
// creating the workspace if it does not exist: the place is taken by the
// first sign-in with that address verified by the identity provider, within
// OwnerInviteLifetime. Audited.
func (db *DB) AddOwnerByEmail(ctx context.Context, a Actor, workspaceName, email, name string) (*Workspace, *OwnerInvite, error) {
	if err := validWorkspaceName(workspaceName); err != nil {
		return nil, nil, err
	}
	var w *Workspace
	var inv *OwnerInvite
	err := db.Update(ctx, func(tx *Tx) error {
		var err error
		if w, err = ensureWorkspace(ctx, tx, a, workspaceName); err != nil {
			return err
		}
		inv, err = inviteOwner(ctx, tx, a, w.ID, email, name)
		return err
	})
	return w, inv, err
}

// InviteOwner adds an owner by address to a workspace the actor owns (the
// Team page). See AddOwnerByEmail.
func (db *DB) InviteOwner(ctx context.Context, a Actor, workspaceID, email, name string) (*OwnerInvite, error) {
	var inv *OwnerInvite
	err := db.Update(ctx, func(tx *Tx) error {
		if err := requireOwner(ctx, tx, a, workspaceID); err != nil {
			return err
		}
		var err error
		inv, err = inviteOwner(ctx, tx, a, workspaceID, email, name)
		return err
	})
	return inv, err
}

func inviteOwner(ctx context.Context, tx *Tx, a Actor, workspaceID, email, name string) (*OwnerInvite, error) {
	norm, err := NormalizeEmail(email)
	if err != nil {
		return nil, Errorf(EINVALID, "Enter the address the owner signs in with.").On("email")
	}
	if name, err = checkOwnerName(name); err != nil {
		return nil, err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM staff_members WHERE workspace_id = ? AND active = 1 AND email = ?) +
		(SELECT count(*) FROM owner_invites WHERE workspace_id = ? AND email_key = ? AND claimed_at IS NULL AND expires_at > ?)`,
		workspaceID, norm, workspaceID, norm, Millis(tx.Now)).Scan(&n); err != nil {
		return nil, fmt.Errorf("check owner invite: %w", err)
	}
	if n > 0 {
		return nil, Errorf(ECONFLICT, "That address is already an owner or already waiting to sign in.").On("email")
	}
	inv := &OwnerInvite{ID: uuid.NewString(), WorkspaceID: workspaceID, Email: norm, Name: name,
		CreatedAt: tx.Now, ExpiresAt: tx.Now.Add(OwnerInviteLifetime)}
	if _, err := tx.ExecContext(ctx, `INSERT INTO owner_invites (id, workspace_id, email_key, name, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?)`, inv.ID, workspaceID, norm, nullable(name), Millis(inv.CreatedAt), Millis(inv.ExpiresAt)); err != nil {
		return nil, fmt.Errorf("insert owner invite: %w", err)
	}
	by, err := actorMemberID(ctx, tx, a, workspaceID)
	if err != nil {
		return nil, err
	}
	return inv, appendTeamEvent(ctx, tx, workspaceID, a, "owner_added", "", TeamEventDetails{By: by, InviteID: inv.ID, Pending: true})
}

// actorMemberID is an owner actor's membership ID in the workspace, "" for
// other actors.
func actorMemberID(ctx context.Context, tx *Tx, a Actor, workspaceID string) (string, error) {
	if a.Kind != ActorOwner {
		return "", nil
	}
	var id string
	err := tx.QueryRowContext(ctx, `SELECT id FROM staff_members WHERE workspace_id = ? AND user_id = ?`,
		workspaceID, a.UserID).Scan(&id)
	if err != nil {
		return "", fmt.Errorf("read actor membership: %w", err)
	}
	return id, nil
}

// HasOpenOwnerInvites reports whether any owner added by address is still
// waiting to sign in: only then does a request need the person's verified
// addresses to see whether it takes a place.
func (db *DB) HasOpenOwnerInvites(ctx context.Context) (bool, error) {
	var open bool
	err := db.readRow(ctx, `SELECT EXISTS (SELECT 1 FROM owner_invites WHERE claimed_at IS NULL AND expires_at > ?)`,
		Millis(db.Now())).Scan(&open)
	if err != nil {
		return false, fmt.Errorf("open owner invites: %w", err)
	}
	return open, nil
}

// ClaimOwnerInvites makes userID an owner of every workspace that added one
// of verifiedEmails by address and is still waiting: the first sign-in
// with the address verified takes the place, once. The caller passes only
// addresses the identity provider says are verified. It returns how many
// places were taken.
func (db *DB) ClaimOwnerInvites(ctx context.Context, userID string, verifiedEmails []string) (int, error) {
	if err := validUserID(userID); err != nil {
		return 0, err
	}
	if len(verifiedEmails) == 0 {
		return 0, nil
	}
	var taken int
	err := db.Update(ctx, func(tx *Tx) error {
		taken = 0
		for _, email := range verifiedEmails {
			rows, err := tx.QueryContext(ctx, `SELECT id, workspace_id, coalesce(name, '') FROM owner_invites
				WHERE email_key = ? AND claimed_at IS NULL AND expires_at > ? ORDER BY created_at`, email, Millis(tx.Now))
			if err != nil {
				return fmt.Errorf("read owner invites: %w", err)
			}
			var invs []OwnerInvite
			for rows.Next() {
				var inv OwnerInvite
				if err := rows.Scan(&inv.ID, &inv.WorkspaceID, &inv.Name); err != nil {
					rows.Close()
					return err
				}
				invs = append(invs, inv)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, inv := range invs {
				memberID, err := takeOwnerPlace(ctx, tx, inv.WorkspaceID, userID, email, inv.Name)
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `UPDATE owner_invites SET claimed_at = ?, claimed_by = ? WHERE id = ?`,
					Millis(tx.Now), memberID, inv.ID); err != nil {
					return fmt.Errorf("claim owner invite: %w", err)
				}
				if err := appendTeamEvent(ctx, tx, inv.WorkspaceID, Actor{Kind: ActorSystem}, "owner_added", userID,
					TeamEventDetails{MemberID: memberID, InviteID: inv.ID}); err != nil {
					return err
				}
				taken++
			}
		}
		return nil
	})
	return taken, err
}

// takeOwnerPlace makes userID an active owner of the workspace with the
// address and name it was added by, and returns the membership ID.
func takeOwnerPlace(ctx context.Context, tx *Tx, workspaceID, userID, email, name string) (string, error) {
	var id string
	err := tx.QueryRowContext(ctx, `SELECT id FROM staff_members WHERE workspace_id = ? AND user_id = ?`,
		workspaceID, userID).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		id = uuid.NewString()
		_, err = tx.ExecContext(ctx, `INSERT INTO staff_members (id, workspace_id, user_id, role, active, created_at, updated_at, name, email)
			VALUES (?, ?, ?, 'owner', 1, ?, ?, ?, ?)`, id, workspaceID, userID, Millis(tx.Now), Millis(tx.Now), nullable(name), email)
	case err != nil:
		return "", fmt.Errorf("read staff: %w", err)
	default:
		_, err = tx.ExecContext(ctx, `UPDATE staff_members SET active = 1, updated_at = ?, email = ?, name = coalesce(?, name)
			WHERE id = ?`, Millis(tx.Now), email, nullable(name), id)
	}
	if err != nil {
		return "", fmt.Errorf("write staff: %w", err)
	}
	return id, nil
}

// TeamMember is one owner membership as the Team page shows it.
type TeamMember struct {
	StaffMember
	// LastActiveAt is the owner's last action recorded in the history of
	// the workspace's programs, nil when there is none.
	LastActiveAt *time.Time
	// You is set for the owner looking at the page.
	You bool
}

// Team is a workspace's owners, current first then removed, and the places
// added by address that still wait for a sign-in.
type Team struct {
	Members []TeamMember
	Waiting []OwnerInvite
}

// WorkspaceTeam reads a workspace's team for one of its owners.
func (db *DB) WorkspaceTeam(ctx context.Context, a Actor, workspaceID string) (*Team, error) {
	t := &Team{}
	err := db.View(ctx, func(tx *Tx) error {
		if err := requireOwner(ctx, tx, a, workspaceID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT s.id, s.workspace_id, s.user_id, s.role, s.active, s.created_at, s.updated_at,
				coalesce(s.name, ''), coalesce(s.email, ''),
				(SELECT max(a.event_at) FROM audit_events a JOIN programs p ON p.id = a.program_id
					WHERE p.workspace_id = s.workspace_id AND a.actor_kind = 'owner' AND a.actor_user_id = s.user_id)
			FROM staff_members s WHERE s.workspace_id = ? ORDER BY s.active DESC, s.created_at, s.id`, workspaceID)
		if err != nil {
			return fmt.Errorf("read team: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var m TeamMember
			var id sql.NullString
			var created, updated int64
			var last sql.NullInt64
			if err := rows.Scan(&id, &m.WorkspaceID, &m.UserID, &m.Role, &m.Active, &created, &updated, &m.Name, &m.Email, &last); err != nil {
				return err
			}
			m.ID, m.CreatedAt, m.UpdatedAt, m.You = id.String, FromMillis(created), FromMillis(updated), m.UserID == a.UserID
			if last.Valid {
				t := FromMillis(last.Int64)
				m.LastActiveAt = &t
			}
			t.Members = append(t.Members, m)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		irows, err := tx.QueryContext(ctx, `SELECT id, workspace_id, email_key, coalesce(name, ''), created_at, expires_at FROM owner_invites
			WHERE workspace_id = ? AND claimed_at IS NULL AND expires_at > ? ORDER BY created_at`, workspaceID, Millis(tx.Now))
		if err != nil {
			return fmt.Errorf("read waiting owners: %w", err)
		}
		defer irows.Close()
		for irows.Next() {
			var inv OwnerInvite
			var created, expires int64
			if err := irows.Scan(&inv.ID, &inv.WorkspaceID, &inv.Email, &inv.Name, &created, &expires); err != nil {
				return err
			}
			inv.CreatedAt, inv.ExpiresAt = FromMillis(created), FromMillis(expires)
			t.Waiting = append(t.Waiting, inv)
		}
		return irows.Err()
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// RemoveMember removes an owner from a workspace the actor owns, by
// membership ID: they are denied from their next request on, and the row
// stays for history. The last current owner is never removed. Audited.
func (db *DB) RemoveMember(ctx context.Context, a Actor, workspaceID, memberID string) error {
	if _, err := uuid.Parse(memberID); err != nil {
		return Errorf(ENOTFOUND, "Not found.")
	}
	return db.Update(ctx, func(tx *Tx) error {
		if err := requireOwner(ctx, tx, a, workspaceID); err != nil {
			return err
		}
		var userID string
		var active bool
		err := tx.QueryRowContext(ctx, `SELECT user_id, active FROM staff_members WHERE workspace_id = ? AND id = ?`,
			workspaceID, memberID).Scan(&userID, &active)
		if errors.Is(err, sql.ErrNoRows) {
			return Errorf(ENOTFOUND, "Not found.")
		}
		if err != nil {
			return fmt.Errorf("read member: %w", err)
		}
		if !active {
			return Errorf(ECONFLICT, "This owner was already removed.")
		}
		var owners int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM staff_members WHERE workspace_id = ? AND active = 1`,
			workspaceID).Scan(&owners); err != nil {
			return fmt.Errorf("count owners: %w", err)
		}
		if owners <= 1 {
			return Errorf(ECONFLICT, "A workspace keeps at least one owner: add another owner before removing this one.")
		}
		if _, err := tx.ExecContext(ctx, `UPDATE staff_members SET active = 0, email = NULL, updated_at = ? WHERE id = ?`, Millis(tx.Now), memberID); err != nil {
			return fmt.Errorf("remove member: %w", err)
		}
		tx.erased = true // the address leaves the log like an erased entry's
		by, err := actorMemberID(ctx, tx, a, workspaceID)
		if err != nil {
			return err
		}
		return appendTeamEvent(ctx, tx, workspaceID, a, "owner_removed", userID, TeamEventDetails{By: by, MemberID: memberID})
	})
}
