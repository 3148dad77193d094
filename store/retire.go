package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
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
// (ownEntries). The owner's request returns at the retirement's commit; the
// steps run in the background (RunRetirer), and each records how many
// entries it reached, for the program page. A retirement interrupted by a
// stop or a crash stays pending: the retirer resumes it at the next start,
// and the sweep finishes it before it erases anything. The rules are
// written out in docs/erasure.md.

// A retirement step's size adapts to what it costs: it aims at
// retireStepTarget of work, so a step stays short whatever the program's
// size and however the database's pages are cached, and starts at
// defaultRetireChunk rows per table (docs/PERFORMANCE.md#chunked-retirement).
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

// RetirementProgress is how far a retired program's bookkeeping has gone:
// Done of its Total entries reached by the steps and dated for erasure, and
// Pending until the last step has run.
type RetirementProgress struct {
	Pending     bool
	Done, Total int64
}

// RetireProgram ends a program for good: signup closed, access disabled,
// issued invitations and active grants revoked, and every entry scheduled
// for erasure after the retired-program period, so no state keeps an email
// forever. The retirement takes effect in one transaction, and
// RetireProgram returns once it has committed: the per-entry bookkeeping is
// left pending, for the retirer (RunRetirer, woken at once) to do in short
// transactions, or for FinishRetirements and the next Sweep, whichever
// comes first. Program.Retirement says how far it has gone.
func (db *DB) RetireProgram(ctx context.Context, a Actor, programID string, ret Retirement) (*Program, error) {
	p, err := db.beginRetirement(ctx, a, programID, ret)
	if err != nil {
		return nil, err
	}
	db.wakeRetirer()
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
		// exactly the ones the steps revoke (the owner can no longer
		// revoke one: a retired program's entries are read-only).
		var entries, invites, grants int64
		if err := tx.QueryRowContext(ctx, `SELECT
				(SELECT CAST(coalesce(sum(n), 0) AS BIGINT) FROM entry_state_counts WHERE program_id = ?1),
				(SELECT count(*) FROM invitations WHERE program_id = ?1 AND state = 'issued'),
				(SELECT count(*) FROM grants WHERE program_id = ?1 AND active = 1)`, p.ID).
			Scan(&entries, &invites, &grants); err != nil {
			return fmt.Errorf("count what retirement ends: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE programs SET signup_open = 0, access_enabled = 0, retired_at = ?,
			retire_pending = 1, retire_cursor_at = NULL, retire_cursor_id = NULL, retire_done = 0, retire_total = ?,
			revision = revision + 1, updated_at = ? WHERE id = ?`, Millis(tx.Now), entries, Millis(tx.Now), p.ID); err != nil {
			return fmt.Errorf("retire program: %w", err)
		}
		if err := appendEvent(ctx, tx, p.ID, "", a, ProgramRetiredDetails{
			Entries: entries, InvitationsRevoked: invites, GrantsRevoked: grants,
		}); err != nil {
			return err
		}
		p, err = programWhere(ctx, tx, "p.id = ?", p.ID)
		return err
	})
	return p, err
}

// finishRetirement runs the program's pending retirement steps, one
// transaction each, until none is left or ctx ends. A step either commits
// whole or not at all, so ending ctx leaves the retirement pending at its
// last committed step, for the next run to resume from.
func (db *DB) finishRetirement(ctx context.Context, programID string) error {
	chunk, adapt := db.retireChunk, db.retireChunk <= 0
	if adapt {
		chunk = defaultRetireChunk
	}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("finish retirement: %w", err)
		}
		done, took, err := db.stepRetirement(ctx, programID, chunk)
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

// stepRetirement runs one step of chunk rows per table in its own
// transaction, and reports whether the retirement is finished and how long
// the step's work took.
func (db *DB) stepRetirement(ctx context.Context, programID string, chunk int) (done bool, took time.Duration, err error) {
	err = db.Update(ctx, func(tx *Tx) error {
		if err := checkLease(ctx, tx); err != nil {
			return err
		}
		began := time.Now()
		var err error
		done, err = db.retireStep(ctx, tx, programID, chunk)
		took = time.Since(began)
		return err
	})
	if err != nil {
		return false, took, err
	}
	if db.retireStepped != nil {
		db.retireStepped(programID, done)
	}
	return done, took, nil
}

// StepRetirement runs one step of the program's pending retirement, of
// Options.RetireChunk rows per table (or the first step's size when that
// is 0), and reports whether the retirement is now finished. It is how a
// test watches a retirement's progress step by step; admit serve runs the
// steps through the retirer.
func (db *DB) StepRetirement(ctx context.Context, programID string) (bool, error) {
	chunk := db.retireChunk
	if chunk <= 0 {
		chunk = defaultRetireChunk
	}
	done, _, err := db.stepRetirement(ctx, programID, chunk)
	return done, err
}

// FinishRetirements runs every pending retirement's steps to its end and
// reports how many retirements it finished. It returns early, leaving the
// rest pending, when ctx ends or a step fails. The retirer runs it in the
// background; the sweep runs it before it erases anything.
func (db *DB) FinishRetirements(ctx context.Context) (int, error) {
	var ids []string
	err := db.View(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM programs WHERE retire_pending = 1 ORDER BY retired_at, id`)
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
		return 0, err
	}
	for i, id := range ids {
		if err := db.finishRetirement(ctx, id); err != nil {
			return i, err
		}
	}
	return len(ids), nil
}

// RetireCheckInterval is how often the retirer looks for a pending
// retirement nothing woke it for: one left by a failed step, or committed
// by another process sharing the database.
const RetireCheckInterval = time.Minute

// retirerMaxRetry bounds the wait between attempts after a failed step.
const retirerMaxRetry = 30 * time.Second

// wakeRetirer tells the retirer that a retirement has committed. It never
// blocks: a signal already waiting covers this retirement too.
func (db *DB) wakeRetirer() {
	select {
	case db.retirements <- struct{}{}:
	default:
	}
}

// RunRetirer finishes retirements in the background until ctx ends: the
// pending ones at start (left by a stop or a crash), each new one as soon
// as RetireProgram commits it, and any other pending one every interval.
// It stops between two steps when ctx ends, leaving the retirement pending
// for the next start, so a shutdown never waits for a large retirement. A
// failed step is retried with backoff.
func (db *DB) RunRetirer(ctx context.Context, interval time.Duration, log *slog.Logger) {
	var backoff time.Duration
	for {
		// Retirements that commit from here on need a run of their own.
		select {
		case <-db.retirements:
		default:
		}
		began := time.Now()
		n, err := db.FinishRetirements(ctx)
		wait := interval
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			backoff = min(max(2*backoff, time.Second), retirerMaxRetry)
			wait = backoff
			log.Warn("finishing a retirement failed; retrying", "err", err, "retry_in", backoff)
		default:
			backoff = 0
			if n > 0 {
				log.Info("finished pending retirements", "count", n, "took", time.Since(began).Round(time.Millisecond))
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-db.retirements:
		case <-t.C:
		}
		t.Stop()
	}
}

// revokeRetiredChunk revokes up to chunk of a retired program's issued
// invitations and up to chunk of its active grants, at the retirement's
// instant, and reports how many of each it revoked.
func revokeRetiredChunk(ctx context.Context, tx *Tx, programID string, retiredAt int64, chunk int) (invites, grants int64, err error) {
	// The chunk is chosen by row ID: SQLite's rowid, PostgreSQL's ctid
	// (both tables' keys would do, at the cost of their index).
	res, err := tx.ExecContext(ctx, tx.engine.pick(`UPDATE invitations SET state = 'revoked', terminal_at = ?
		WHERE rowid IN (SELECT rowid FROM invitations WHERE program_id = ? AND state = 'issued' LIMIT ?)`,
		`UPDATE invitations SET state = 'revoked', terminal_at = ?
		WHERE ctid = ANY (ARRAY(SELECT ctid FROM invitations WHERE program_id = ? AND state = 'issued' LIMIT ?))`),
		retiredAt, programID, chunk)
	if err != nil {
		return 0, 0, fmt.Errorf("revoke invitations: %w", err)
	}
	invites, _ = res.RowsAffected()
	res, err = tx.ExecContext(ctx, tx.engine.pick(`UPDATE grants SET active = 0, revoked_at = ?
		WHERE rowid IN (SELECT rowid FROM grants WHERE program_id = ? AND active = 1 LIMIT ?)`,
		`UPDATE grants SET active = 0, revoked_at = ?
		WHERE ctid = ANY (ARRAY(SELECT ctid FROM grants WHERE program_id = ? AND active = 1 LIMIT ?))`),
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
	// SQLite's scalar max and min are PostgreSQL's GREATEST and LEAST
	// (which skip NULLs where SQLite's return NULL: no argument here is).
	greatest, least := tx.engine.pick(`max`, `GREATEST`), tx.engine.pick(`min`, `LEAST`)
	if _, err := tx.ExecContext(ctx, `UPDATE entries SET
			state = CASE state WHEN 'invited' THEN 'selected' WHEN 'active' THEN 'revoked' ELSE state END,
			updated_at = CASE WHEN state IN ('invited', 'active') THEN `+greatest+`(updated_at, ?1) ELSE updated_at END,
			erase_after = `+least+`(coalesce(erase_after, ?2), ?2, CASE WHEN state = 'active' THEN ?3 ELSE ?2 END)
		WHERE program_id = ?4 AND erased_at IS NULL
			AND (created_at, id) > (?5, ?6) AND (created_at, id) <= (?7, ?8)`,
		retiredAt.Int64, retired, revoked, programID, fromAt, fromID, toAt, toID); err != nil {
		return false, fmt.Errorf("retire entries: %w", err)
	}
	done := last && invites < int64(chunk) && grants < int64(chunk)
	// Progress counts entries by the cursor: a step that is not the last
	// reached exactly chunk entries (erased ones too, as retire_total
	// counts them); the last reaches the rest.
	switch {
	case done:
		_, err = tx.ExecContext(ctx, `UPDATE programs SET retire_pending = 0, retire_cursor_at = NULL, retire_cursor_id = NULL,
			retire_done = retire_total WHERE id = ?`, programID)
	case last:
		_, err = tx.ExecContext(ctx, `UPDATE programs SET retire_done = retire_total WHERE id = ?`, programID)
	default:
		_, err = tx.ExecContext(ctx, `UPDATE programs SET retire_cursor_at = ?, retire_cursor_id = ?,
			retire_done = `+tx.engine.pick(`min`, `LEAST`)+`(retire_done + ?, retire_total) WHERE id = ?`, toAt, toID, chunk, programID)
	}
	if err != nil {
		return false, fmt.Errorf("record retirement progress: %w", err)
	}
	return done, nil
}
