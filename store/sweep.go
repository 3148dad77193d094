package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// SweepInterval is how often `admit serve` erases entries that are due. The
// privacy page adds it to every retention period it states.
const SweepInterval = 5 * time.Minute

// sweepBatch bounds one erasure transaction so writers never wait long.
const sweepBatch = 200

// Sweep erases every entry whose erase_after has passed (email replaced by
// a tombstone, removal hash cleared, no row deleted) and deletes expired
// attempt counters. It returns how many entries it erased.
func (db *DB) Sweep(ctx context.Context) (int, error) {
	total := 0
	for {
		n := 0
		err := db.Update(ctx, func(tx *Tx) error {
			rows, err := tx.QueryContext(ctx, `SELECT program_id, id FROM entries
				WHERE erase_after IS NOT NULL AND erased_at IS NULL AND erase_after <= ? LIMIT ?`, Millis(tx.Now), sweepBatch)
			if err != nil {
				return fmt.Errorf("find due entries: %w", err)
			}
			type due struct{ program, entry string }
			var list []due
			for rows.Next() {
				var d due
				if err := rows.Scan(&d.program, &d.entry); err != nil {
					rows.Close()
					return err
				}
				list = append(list, d)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, d := range list {
				if err := eraseEntry(ctx, tx, d.program, d.entry, Actor{Kind: ActorSystem}, "retention"); err != nil {
					return err
				}
			}
			n = len(list)
			if _, err := tx.ExecContext(ctx, `DELETE FROM network_counters WHERE expires_at <= ?`, Millis(tx.Now)); err != nil {
				return fmt.Errorf("delete expired counters: %w", err)
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < sweepBatch {
			return total, nil
		}
	}
}

// RunSweeper sweeps at once and then every interval until ctx ends, so
// erasure never depends on a job someone must remember to schedule. The
// erased bytes leave the write-ahead log through RunEraser, like every
// other erasure.
func (db *DB) RunSweeper(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := db.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("retention sweep failed", "err", err)
		case n > 0:
			log.Info("retention sweep erased entries", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RetireProgram ends a program for good, in one transaction: signup closed,
// access disabled, issued invitations and active grants revoked, and every
// entry scheduled for erasure after the retired-program period, so no state
// keeps an email forever.
func (db *DB) RetireProgram(ctx context.Context, a Actor, programID string, expectedRevision int64) (*Program, error) {
	var p *Program
	err := db.Update(ctx, func(tx *Tx) error {
		var err error
		if p, err = ownedProgram(ctx, tx, a, programID); err != nil {
			return err
		}
		if p.RetiredAt != nil {
			return Errorf(ECONFLICT, "This program is already retired.")
		}
		if p.Revision != expectedRevision {
			return Errorf(ECONFLICT, "The program changed since you loaded it. Reload and try again.")
		}
		if _, err := tx.ExecContext(ctx, `UPDATE programs SET signup_open = 0, access_enabled = 0, retired_at = ?,
			revision = revision + 1, updated_at = ? WHERE id = ?`, Millis(tx.Now), Millis(tx.Now), p.ID); err != nil {
			return fmt.Errorf("retire program: %w", err)
		}
		res, err := tx.ExecContext(ctx, `UPDATE invitations SET state = 'revoked', terminal_at = ? WHERE program_id = ? AND state = 'issued'`,
			Millis(tx.Now), p.ID)
		if err != nil {
			return fmt.Errorf("revoke invitations: %w", err)
		}
		invites, _ := res.RowsAffected()
		res, err = tx.ExecContext(ctx, `UPDATE grants SET active = 0, revoked_at = ? WHERE program_id = ? AND active = 1`,
			Millis(tx.Now), p.ID)
		if err != nil {
			return fmt.Errorf("revoke grants: %w", err)
		}
		grants, _ := res.RowsAffected()
		// States follow what was revoked: an invited entry is selected
		// again, an active one revoked. Then every entry gets its erasure
		// date: the earlier of its own and the retired-program period.
		rows, err := tx.QueryContext(ctx, `SELECT id, state FROM entries WHERE program_id = ? AND erased_at IS NULL`, p.ID)
		if err != nil {
			return fmt.Errorf("list entries: %w", err)
		}
		type ent struct{ id, state string }
		var list []ent
		for rows.Next() {
			var e ent
			if err := rows.Scan(&e.id, &e.state); err != nil {
				rows.Close()
				return err
			}
			list = append(list, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, e := range list {
			next := e.state
			switch e.state {
			case StateInvited:
				next = StateSelected
			case StateActive:
				next = StateRevoked
			}
			if err := db.setEntryState(ctx, tx, p.ID, e.id, next, true); err != nil {
				return err
			}
		}
		if err := appendEvent(ctx, tx, p.ID, "", a, EventProgramRetired, Details{
			"entries": len(list), "invitationsRevoked": invites, "grantsRevoked": grants,
		}); err != nil {
			return err
		}
		p, err = programWhere(ctx, tx, "p.id = ?", p.ID)
		return err
	})
	return p, err
}
