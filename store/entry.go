package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Entry states.
const (
	StateWaiting   = "waiting"
	StateSelected  = "selected"
	StateInvited   = "invited"
	StateActive    = "active"
	StateDeclined  = "declined"
	StateWithdrawn = "withdrawn"
	StateRevoked   = "revoked"
)

// OwnEntry is a signed-in person's view of one of their entries.
type OwnEntry struct {
	ProgramID     string
	Slug          string
	Name          string
	Purpose       string
	AccessEnabled bool
	State         string
	JoinedAt      time.Time
	NoticeVersion int
}

// placeholders returns "?, ?, …" for n arguments.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// OwnEntries lists the entries whose email equals one of the given verified,
// normalized addresses, across all programs. With no address it is empty:
// there is no global lookup.
func (db *DB) OwnEntries(ctx context.Context, verifiedEmails []string) ([]OwnEntry, error) {
	return db.ownEntries(ctx, "", verifiedEmails)
}

// OwnEntry returns the entry of the program at slug whose email equals one of
// the verified addresses; none is ENOTFOUND.
func (db *DB) OwnEntry(ctx context.Context, slug string, verifiedEmails []string) (*OwnEntry, error) {
	if !ValidSlug(slug) {
		return nil, Errorf(ENOTFOUND, "Not found.")
	}
	out, err := db.ownEntries(ctx, slug, verifiedEmails)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, Errorf(ENOTFOUND, "Not found.")
	}
	return &out[0], nil
}

func (db *DB) ownEntries(ctx context.Context, slug string, emails []string) ([]OwnEntry, error) {
	if len(emails) == 0 {
		return nil, nil
	}
	// An entry of a retired program reads as retirement leaves it, also
	// while the retirement's steps have not reached it yet (retire.go).
	q := `SELECT p.id, p.public_slug, p.name, p.purpose, p.access_enabled,
			CASE WHEN p.retired_at IS NULL THEN e.state WHEN e.state = 'invited' THEN 'selected'
				WHEN e.state = 'active' THEN 'revoked' ELSE e.state END,
			e.created_at, n.version
		FROM entries e
		JOIN programs p ON p.id = e.program_id
		JOIN workspaces w ON w.id = p.workspace_id AND w.active = 1
		JOIN notices n ON n.id = e.notice_id AND n.program_id = e.program_id
		WHERE e.erased_at IS NULL AND e.email_key IN (` + placeholders(len(emails)) + `)`
	args := make([]any, 0, len(emails)+1)
	for _, e := range emails {
		args = append(args, e)
	}
	if slug != "" {
		q += ` AND p.public_slug = ?`
		args = append(args, slug)
	}
	q += ` ORDER BY e.created_at, e.id`
	var out []OwnEntry
	err := db.View(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("own entries: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var o OwnEntry
			var joined int64
			if err := rows.Scan(&o.ProgramID, &o.Slug, &o.Name, &o.Purpose, &o.AccessEnabled, &o.State, &joined, &o.NoticeVersion); err != nil {
				return err
			}
			o.JoinedAt = FromMillis(joined)
			out = append(out, o)
		}
		return rows.Err()
	})
	return out, err
}
