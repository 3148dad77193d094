package store

import (
	"context"
	"database/sql"
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
	// InvitationSent says the owner recorded the send of the entry's
	// issued invitation: until then its code cannot be redeemed.
	InvitationSent bool
	// EraseAfter is when the address is due to be erased, nil while the
	// state keeps it (docs/erasure.md).
	EraseAfter *time.Time
	// Retired says the program has ended: nothing can be done with the
	// entry any more.
	Retired bool
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

// ownEntriesQuery is the SQL of ownEntries for that many addresses, and
// for one program's slug or every program. rule: the programs come first
// (CROSS JOIN keeps them the outer loop), and each program's entries are
// found by the unique (program_id, email_key) index: one seek per program
// and address, whatever the number of entries. There is no index on the
// address alone (migration 00010). The order's unary plus keeps the join
// time index, which would read the whole program in order, out of it.
// PostgreSQL has neither form (no CROSS JOIN … ON, no unary plus on text):
// its planner chooses the order of the join and the index itself.
func ownEntriesQuery(engine Engine, emails int, oneProgram bool) string {
	q := `SELECT p.id, p.public_slug, p.name, p.purpose, p.access_enabled,
			CASE WHEN p.retired_at IS NULL THEN e.state WHEN e.state = 'invited' THEN 'selected'
				WHEN e.state = 'active' THEN 'revoked' ELSE e.state END,
			e.created_at, n.version,
			EXISTS (SELECT 1 FROM invitations i WHERE i.entry_id = e.id AND i.program_id = e.program_id
				AND i.state = 'issued' AND i.delivery_recorded_at IS NOT NULL),
			e.erase_after, p.retired_at IS NOT NULL
		FROM programs p
		JOIN workspaces w ON w.id = p.workspace_id AND w.active = 1
		` + engine.pick(`CROSS JOIN`, `JOIN`) + ` entries e ON e.program_id = p.id
		JOIN notices n ON n.id = e.notice_id AND n.program_id = e.program_id
		WHERE `
	if oneProgram {
		q += `p.public_slug = ? AND `
	}
	return q + `e.email_key IN (` + placeholders(emails) + `) AND e.erased_at IS NULL ORDER BY ` +
		engine.pick(`+e.created_at, +e.id`, `e.created_at, e.id`)
}

func (db *DB) ownEntries(ctx context.Context, slug string, emails []string) ([]OwnEntry, error) {
	if len(emails) == 0 {
		return nil, nil
	}
	// An entry of a retired program reads as retirement leaves it, also
	// while the retirement's steps have not reached it yet (retire.go).
	q := ownEntriesQuery(db.engine, len(emails), slug != "")
	args := make([]any, 0, len(emails)+1)
	if slug != "" {
		args = append(args, slug)
	}
	for _, e := range emails {
		args = append(args, e)
	}
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
			var eraseAfter sql.NullInt64
			if err := rows.Scan(&o.ProgramID, &o.Slug, &o.Name, &o.Purpose, &o.AccessEnabled, &o.State, &joined, &o.NoticeVersion, &o.InvitationSent, &eraseAfter, &o.Retired); err != nil {
				return err
			}
			o.JoinedAt = FromMillis(joined)
			if eraseAfter.Valid {
				t := FromMillis(eraseAfter.Int64)
				o.EraseAfter = &t
			}
			out = append(out, o)
		}
		return rows.Err()
	})
	return out, err
}
