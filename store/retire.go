package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Retiring a program is in two parts.
//
// The retirement itself is one short transaction: the program gets
// retired_at (signup closed, access disabled), its audit event, and a
// pending mark. Everything that could let someone in checks the program,
// not the entry: a signup, an invitation issue and a redemption are refused
// for a retired program, and the private content gate requires
// retired_at IS NULL and access enabled. So from that commit on nobody gets
// in, whatever state the program's entries, invitations and grants still
// show, and the retirement's visible effect is atomic.
//
// The bookkeeping that follows runs in short transactions (retireStep), so a
// signup to another program waits at most one of them, never the whole
// retirement: each step revokes up to a chunk of issued invitations and
// active grants and moves up to a chunk of entries (invited → selected,
// active → revoked) while setting their erasure dates. Every instant it
// writes is the retirement's (retired_at), not the step's: an entry reached
// by a later step is erased no later than one reached by the first, so
// nothing is erased late however long the bookkeeping takes. Until an entry
// is reached, the applicant's own status reads it as retirement leaves it
// (ownEntries). A retirement interrupted by a crash stays pending and the
// next sweep (at start) finishes it before it erases anything. The rules
// are written out in docs/erasure.md.

// A retirement step's size adapts to what it costs: it aims at
// retireStepTarget of work, so a step stays short whatever the program's
// size and however the database's pages are cached, and starts at
// defaultRetireChunk rows per table (BENCHMARKS.md, "Chunked retirement").
const (
	retireStepTarget   = 5 * time.Millisecond
	defaultRetireChunk = 250
	minRetireChunk     = 25
	maxRetireChunk     = 500
)

// nextRetireChunk sizes the next step from the last one's rows and work:
// it shrinks at once after a slow step and at most doubles after a quick one.
func nextRetireChunk(chunk int, took time.Duration) int {
	if took <= 0 {
		return min(2*chunk, maxRetireChunk)
	}
	next := int(float64(chunk) * float64(retireStepTarget) / float64(took))
	return max(minRetireChunk, min(next, 2*chunk, maxRetireChunk))
}

// Retirement is an owner's request to retire a program: the revision they
// saw, and the program's slug typed again to confirm (CheckRetireConfirmation),
// since retiring cannot be undone.
type Retirement struct {
	ExpectedRevision int64  `json:"expectedRevision"`
	Confirm          string `json:"confirm"`
}

// RetireProgram ends a program for good: signup closed, access disabled,
// issued invitations and active grants revoked, and every entry scheduled
// for erasure after the retired-program period, so no state keeps an email
// forever. The retirement takes effect in one transaction; the per-entry
// bookkeeping then runs in short transactions before RetireProgram returns,
// to its end even if ctx is cancelled. If that part fails, the program is
// retired all the same and the next sweep finishes it.
func (db *DB) RetireProgram(ctx context.Context, a Actor, programID string, ret Retirement) (*Program, error) {
	p, err := db.beginRetirement(ctx, a, programID, ret)
	if err != nil {
		return nil, err
	}
	// rule: if a step fails, the program is retired all the same; the
	// sweeper finishes a pending retirement and logs why a step failed.
	_ = db.finishRetirement(context.WithoutCancel(ctx), p.ID)
	return p, nil
}

// beginRetirement is the retirement's one visible transaction.
func (db *DB) beginRetirement(ctx context.Context, a Actor, programID string, ret Retirement) (*Program, error) {
	var p *Program
	err := db.Update(ctx, func(tx *Tx) error {
		var err error
		if p, err = ownedProgram(ctx, tx, a, programID); err != nil {
			return err
		}
		if err := CheckRetireConfirmation(ret.Confirm, p.Slug); err != nil {
			return err
		}
		if p.RetiredAt != nil {
			return Errorf(ECONFLICT, "This program is already retired.")
		}
		if p.Revision != ret.ExpectedRevision {
			return Errorf(ECONFLICT, "The program changed since you loaded it. Reload and try again.")
		}
		// What the retirement ends, counted by index: no invitation is
		// issued and no grant made once retired_at is set, so these are
		// exactly the ones the steps revoke (less any the owner revokes
		// meanwhile, which get their own events).
		var entries, invites, grants int64
		if err := tx.QueryRowContext(ctx, `SELECT
				(SELECT coalesce(sum(n), 0) FROM entry_state_counts WHERE program_id = ?1),
				(SELECT count(*) FROM invitations WHERE program_id = ?1 AND state = 'issued'),
				(SELECT count(*) FROM grants WHERE program_id = ?1 AND active = 1)`, p.ID).
			Scan(&entries, &invites, &grants); err != nil {
			return fmt.Errorf("count what retirement ends: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE programs SET signup_open = 0, access_enabled = 0, retired_at = ?,
			retire_pending = 1, retire_cursor_at = NULL, retire_cursor_id = NULL,
			revision = revision + 1, updated_at = ? WHERE id = ?`, Millis(tx.Now), Millis(tx.Now), p.ID); err != nil {
			return fmt.Errorf("retire program: %w", err)
		}
		if err := appendEvent(ctx, tx, p.ID, "", a, EventProgramRetired, Details{
			"entries": entries, "invitationsRevoked": invites, "grantsRevoked": grants,
		}); err != nil {
			return err
		}
		p, err = programWhere(ctx, tx, "p.id = ?", p.ID)
		return err
	})
	return p, err
}

// finishRetirement runs the program's pending retirement steps, one
// transaction each, until none is left.
func (db *DB) finishRetirement(ctx context.Context, programID string) error {
	chunk, adapt := db.retireChunk, db.retireChunk <= 0
	if adapt {
		chunk = defaultRetireChunk
	}
	for {
		var done bool
		var took time.Duration
		err := db.Update(ctx, func(tx *Tx) error {
			began := time.Now()
			var err error
			done, err = db.retireStep(ctx, tx, programID, chunk)
			took = time.Since(began)
			return err
		})
		if err != nil {
			return fmt.Errorf("finish retirement: %w", err)
		}
		if done {
			return nil
		}
		if adapt {
			chunk = nextRetireChunk(chunk, took)
		}
	}
}

// finishRetirements finishes every pending retirement (after a crash).
func (db *DB) finishRetirements(ctx context.Context) error {
	var ids []string
	err := db.View(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM programs WHERE retire_pending = 1`)
		if err != nil {
			return fmt.Errorf("pending retirements: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := db.finishRetirement(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// revokeRetiredChunk revokes up to chunk of a retired program's issued
// invitations and up to chunk of its active grants, at the retirement's
// instant, and reports how many of each it revoked.
func revokeRetiredChunk(ctx context.Context, tx *Tx, programID string, retiredAt int64, chunk int) (invites, grants int64, err error) {
	res, err := tx.ExecContext(ctx, `UPDATE invitations SET state = 'revoked', terminal_at = ?
		WHERE rowid IN (SELECT rowid FROM invitations WHERE program_id = ? AND state = 'issued' LIMIT ?)`,
		retiredAt, programID, chunk)
	if err != nil {
		return 0, 0, fmt.Errorf("revoke invitations: %w", err)
	}
	invites, _ = res.RowsAffected()
	res, err = tx.ExecContext(ctx, `UPDATE grants SET active = 0, revoked_at = ?
		WHERE rowid IN (SELECT rowid FROM grants WHERE program_id = ? AND active = 1 LIMIT ?)`,
		retiredAt, programID, chunk)
	if err != nil {
		return 0, 0, fmt.Errorf("revoke grants: %w", err)
	}
	grants, _ = res.RowsAffected()
	return invites, grants, nil
}

// retireStep does one step of a pending retirement, of up to chunk rows
// per table, and reports whether the retirement is now complete.
func (db *DB) retireStep(ctx context.Context, tx *Tx, programID string, chunk int) (bool, error) {
	var (
		retiredAt sql.NullInt64
		pending   bool
		cursorAt  sql.NullInt64
		cursorID  sql.NullString
	)
	if err := tx.QueryRowContext(ctx, `SELECT retired_at, retire_pending, retire_cursor_at, retire_cursor_id
		FROM programs WHERE id = ?`, programID).Scan(&retiredAt, &pending, &cursorAt, &cursorID); err != nil {
		return false, fmt.Errorf("read retirement: %w", err)
	}
	if !pending || !retiredAt.Valid {
		return true, nil
	}
	// rule: every instant is the retirement's, whenever the step runs.
	at := FromMillis(retiredAt.Int64)
	pol := db.retention
	retired := Millis(*pol.eraseAfter(StateWaiting, true, at))
	revoked := Millis(*pol.eraseAfter(StateRevoked, true, at))

	invites, grants, err := revokeRetiredChunk(ctx, tx, programID, retiredAt.Int64, chunk)
	if err != nil {
		return false, err
	}

	// The entries after the cursor, in (created_at, id) order: find the
	// last of this step's chunk, or learn that the rest fits in it.
	fromAt, fromID := int64(-1), ""
	if cursorAt.Valid && cursorID.Valid {
		fromAt, fromID = cursorAt.Int64, cursorID.String
	}
	var toAt int64
	var toID string
	last := true
	err = tx.QueryRowContext(ctx, `SELECT created_at, id FROM entries
		WHERE program_id = ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT 1 OFFSET ?`,
		programID, fromAt, fromID, chunk-1).Scan(&toAt, &toID)
	switch {
	case err == sql.ErrNoRows:
		toAt, toID = 1<<62, ""
	case err != nil:
		return false, fmt.Errorf("find retirement chunk: %w", err)
	default:
		last = false
	}
	// States follow what retirement revokes: an invited entry is selected
	// again, an active one revoked (from the retirement's instant). Every
	// entry keeps the earlier of its own erasure date and the
	// retired-program date: retiring never postpones erasure.
	if _, err := tx.ExecContext(ctx, `UPDATE entries SET
			state = CASE state WHEN 'invited' THEN 'selected' WHEN 'active' THEN 'revoked' ELSE state END,
			updated_at = CASE WHEN state IN ('invited', 'active') THEN max(updated_at, ?1) ELSE updated_at END,
			erase_after = min(coalesce(erase_after, ?2), ?2, CASE WHEN state = 'active' THEN ?3 ELSE ?2 END)
		WHERE program_id = ?4 AND erased_at IS NULL
			AND (created_at, id) > (?5, ?6) AND (created_at, id) <= (?7, ?8)`,
		retiredAt.Int64, retired, revoked, programID, fromAt, fromID, toAt, toID); err != nil {
		return false, fmt.Errorf("retire entries: %w", err)
	}
	done := last && invites < int64(chunk) && grants < int64(chunk)
	if done {
		_, err = tx.ExecContext(ctx, `UPDATE programs SET retire_pending = 0, retire_cursor_at = NULL, retire_cursor_id = NULL
			WHERE id = ?`, programID)
	} else if !last {
		_, err = tx.ExecContext(ctx, `UPDATE programs SET retire_cursor_at = ?, retire_cursor_id = ? WHERE id = ?`,
			toAt, toID, programID)
	}
	if err != nil {
		return false, fmt.Errorf("record retirement progress: %w", err)
	}
	return done, nil
}
