package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// SweepInterval is how often `admit serve` erases entries that are due. The
// privacy page adds it to every retention period it states.
const SweepInterval = 5 * time.Minute

// One sweep transaction erases at most sweepBatch entries and stops early
// once its erasures have taken sweepBudget, so writers never wait long
// behind it however costly an erasure is on a large database
// (docs/PERFORMANCE.md#chunked-retirement; docs/erasure.md).
const (
	sweepBatch  = 200
	sweepBudget = 10 * time.Millisecond
)

// receiptSweepBatch bounds the expired receipts one sweep transaction
// deletes; the sweep goes on in further transactions while there are more.
const receiptSweepBatch = 500

// Sweep erases every entry whose erase_after has passed (email replaced by
// a tombstone, removal hash cleared, no row deleted), deletes the signup
// receipts older than ReceiptLifetime, expired attempt counters and expired
// sign-in sessions. It returns how many entries it erased.
func (db *DB) Sweep(ctx context.Context) (int, error) {
	// A retirement's erasure dates are set before anything is swept, or
	// an interrupted retirement could leave entries to be erased late. If
	// that fails, what is already due is still erased on time.
	_, retireErr := db.FinishRetirements(ctx)
	total, err := db.sweepDue(ctx)
	return total, errors.Join(retireErr, err)
}

// sweepDue erases the entries that are due, in bounded transactions.
func (db *DB) sweepDue(ctx context.Context) (int, error) {
	total := 0
	for {
		n, more := 0, false
		err := db.Update(ctx, func(tx *Tx) error {
			if err := checkLease(ctx, tx); err != nil {
				return err
			}
			var err error
			if n, more, err = eraseDueEntries(ctx, tx); err != nil {
				return err
			}
			receiptsLeft, err := deleteExpiredReceipts(ctx, tx)
			if err != nil {
				return err
			}
			more = more || receiptsLeft
			if _, err := tx.ExecContext(ctx, `DELETE FROM network_counters WHERE expires_at <= ?`, Millis(tx.Now)); err != nil {
				return fmt.Errorf("delete expired counters: %w", err)
			}
			if err := deleteSpentOwnerInvites(ctx, tx); err != nil {
				return err
			}
			return deleteExpiredSessions(ctx, tx)
		})
		if err != nil {
			db.obs.Sweep(total)
			return total, err
		}
		total += n
		if !more {
			db.obs.Sweep(total)
			return total, nil
		}
	}
}

// eraseDueEntries erases up to sweepBatch entries whose erasure is due,
// stopping early once the transaction has taken sweepBudget. It returns how
// many it erased and whether more may be due.
func eraseDueEntries(ctx context.Context, tx *Tx) (n int, more bool, err error) {
	began := time.Now()
	rows, err := tx.QueryContext(ctx, `SELECT program_id, id FROM entries
		WHERE erase_after IS NOT NULL AND erased_at IS NULL AND erase_after <= ? LIMIT ?`, Millis(tx.Now), sweepBatch)
	if err != nil {
		return 0, false, fmt.Errorf("find due entries: %w", err)
	}
	type due struct{ program, entry string }
	var list []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.program, &d.entry); err != nil {
			rows.Close()
			return 0, false, err
		}
		list = append(list, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, false, err
	}
	more = len(list) == sweepBatch
	for i, d := range list {
		if err := eraseEntry(ctx, tx, d.program, d.entry, Actor{Kind: ActorSystem}, ErasedByRetention); err != nil {
			return n, more, err
		}
		n++
		if i < len(list)-1 && time.Since(began) >= sweepBudget {
			return n, true, nil // the rest go in the next transaction
		}
	}
	return n, more, nil
}

// deleteExpiredReceipts deletes up to receiptSweepBatch signup receipts
// past ReceiptLifetime and reports whether more may be left.
//
// rule (docs/erasure.md#request-receipts): a receipt answers replays for
// ReceiptLifetime after its request, then goes.
func deleteExpiredReceipts(ctx context.Context, tx *Tx) (more bool, err error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM signup_receipts WHERE (program_id, request_key) IN
		(SELECT program_id, request_key FROM signup_receipts WHERE accepted_at <= ? LIMIT ?)`,
		Millis(tx.Now.Add(-ReceiptLifetime)), receiptSweepBatch)
	if err != nil {
		return false, fmt.Errorf("delete expired receipts: %w", err)
	}
	deleted, _ := res.RowsAffected()
	if deleted > 0 {
		// The receipts' old bytes leave the log like an erased address.
		tx.erased = true
	}
	return deleted == receiptSweepBatch, nil
}

// RunSweeper sweeps at once and then every interval until ctx ends, so
// erasure never depends on a job someone must remember to schedule. The
// erased bytes leave the write-ahead log through RunEraser, like every
// other erasure.
func (db *DB) RunSweeper(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		began := time.Now()
		n, err := db.Sweep(ctx)
		took := time.Since(began).Round(time.Millisecond)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error("retention sweep failed", "err", err)
		case n > 0:
			log.Info("retention sweep erased entries", "count", n, "took", took)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// deleteSpentOwnerInvites deletes the owner invitations by address that
// were taken (the membership now holds the address) or expired unclaimed.
//
// rule (docs/erasure.md): an address an owner was invited by is kept only
// while the invitation can still be taken.
func deleteSpentOwnerInvites(ctx context.Context, tx *Tx) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM owner_invites WHERE claimed_at IS NOT NULL OR expires_at <= ?`, Millis(tx.Now))
	if err != nil {
		return fmt.Errorf("delete spent owner invites: %w", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		tx.erased = true // their addresses leave the log like an erased entry's
	}
	return nil
}
