package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"time"

	"admit/store"

	"github.com/google/uuid"
)

// The load generator's one seeder. Admitting 100,000 signups or more
// through HTTP would take most of a run, so the queue scenario and the
// scale mode stop admit and write, straight into its database file, what a
// signup writes: the entry, its receipt and its audit event, then each
// program's counters from its entries (store.RecountEntries). This is not
// admit's admission path: it only builds a realistic database in seconds
// (docs/PERFORMANCE.md#the-load-run).

// seedStates is how the seeded queue is spread over states, per 100 entries.
var seedStates = []struct {
	state string
	per   int
}{{"waiting", 85}, {"selected", 10}, {"declined", 3}, {"withdrawn", 2}}

// seedState is the state of the i-th seeded entry.
func seedState(i int) string {
	k := i % 100
	for _, s := range seedStates {
		if k < s.per {
			return s.state
		}
		k -= s.per
	}
	return seedStates[0].state
}

// seedProgram is the entries seedEntries writes into one program.
type seedProgram struct {
	ID string
	// N is how many entries the program gets.
	N int
	// Email is the address of the i-th entry.
	Email func(i int) string
	// Entry is the i-th entry's state and whether it is already due for
	// erasure (only a declined or withdrawn entry may be).
	Entry func(i int) (state string, due bool)
}

// seedEntries writes each program's entries into the database file at
// dbPath while admit is stopped, in transactions of at most chunk entries,
// with join times spread over the 30 days before now in ID order; the last
// transaction of a program sets its counters. A declined or withdrawn entry
// is due for erasure an hour before now if Entry says so, else in 30 days.
// The file is left as a stopped admit leaves it: the WAL checkpointed.
func seedEntries(ctx context.Context, dbPath string, now time.Time, chunk int, progs ...seedProgram) error {
	db, err := openWriter(ctx, dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	// A page cache that holds a whole transaction: no spills to the WAL
	// before the commit. This is loadgen's memory, not admit's.
	if _, err := db.ExecContext(ctx, `PRAGMA cache_size = -262144`); err != nil {
		return err
	}
	for _, p := range progs {
		for from := 0; from < p.N; from += chunk {
			if err := seedChunk(ctx, db, p, from, min(from+chunk, p.N), now); err != nil {
				return err
			}
		}
	}
	_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// seedChunk writes entries [from, to) of p in one transaction, and p's
// counters when they are its last.
func seedChunk(ctx context.Context, db *sql.DB, p seedProgram, from, to int, now time.Time) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var noticeID string
	if err := tx.QueryRowContext(ctx, `SELECT current_notice_id FROM programs WHERE id = ?`, p.ID).Scan(&noticeID); err != nil {
		return fmt.Errorf("read notice: %w", err)
	}
	entry, err := tx.PrepareContext(ctx, `INSERT INTO entries (id, program_id, email_key, notice_id, permission_at, state,
		created_at, updated_at, removal_hash, erase_after) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	receipt, err := tx.PrepareContext(ctx, `INSERT INTO signup_receipts (program_id, request_key, binding_hmac, response_code, accepted_at)
		VALUES (?, ?, ?, 202, ?)`)
	if err != nil {
		return err
	}
	event, err := tx.PrepareContext(ctx, `INSERT INTO audit_events (program_id, entry_id, actor_kind, event_type, event_at, details)
		VALUES (?, ?, 'public', 'signup', ?, '{"noticeVersion":1}')`)
	if err != nil {
		return err
	}
	span := 30 * 24 * time.Hour
	start := now.Add(-span).UnixMilli()
	step := span.Milliseconds() / int64(p.N)
	for i := from; i < to; i++ {
		at := start + int64(i)*step
		// Time-ordered IDs in join order, as admit gives its entries.
		u, err := uuidV7At(at)
		if err != nil {
			return err
		}
		id := u.String()
		state, due := p.Entry(i)
		var erase any
		switch {
		case state != "declined" && state != "withdrawn":
		case due:
			erase = now.Add(-time.Hour).UnixMilli()
		default:
			erase = now.Add(30 * 24 * time.Hour).UnixMilli()
		}
		hash := sha256.Sum256([]byte(id))
		if _, err := entry.ExecContext(ctx, id, p.ID, p.Email(i), noticeID, at, state, at, at, hash[:], erase); err != nil {
			return fmt.Errorf("insert entry: %w", err)
		}
		binding := make([]byte, 32)
		rand.Read(binding)
		if _, err := receipt.ExecContext(ctx, p.ID, uuid.NewString(), binding, at); err != nil {
			return fmt.Errorf("insert receipt: %w", err)
		}
		if _, err := event.ExecContext(ctx, p.ID, id, at); err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
	}
	if to == p.N {
		if err := store.RecountEntries(ctx, tx, p.ID); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// uuidV7At is a version 7 UUID whose time is the Unix millisecond ms.
func uuidV7At(ms int64) (uuid.UUID, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return u, err
	}
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return u, nil
}
