package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"net/url"
	"time"

	"admit/store"

	"github.com/google/uuid"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// storeDSN opens a file the way admit's writer does (store.dsn): busy
// timeout first, WAL, foreign keys, synchronous=FULL, BEGIN IMMEDIATE.
func storeDSN(path string) string {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(FULL)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// openWriter opens one writer connection on path with storeDSN.
func openWriter(ctx context.Context, path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", storeDSN(path))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	var sync int
	if err := db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
		db.Close()
		return nil, err
	}
	if sync != 2 {
		db.Close()
		return nil, fmt.Errorf("synchronous is %d, want 2 (FULL)", sync)
	}
	return db, nil
}

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

// seedQueue inserts n entries into the program directly in the database
// file, in one transaction, while admit is stopped. It writes what a signup
// writes — the entry, its receipt and its audit event, then the program's
// counters from its entries (store.RecountEntries) — with join times spread over the last 30
// days. This is not admit's admission path: it only builds a realistic
// 100,000-entry database in seconds instead of the better part of an hour.
func seedQueue(ctx context.Context, dbPath, programID string, n int) error {
	db, err := openWriter(ctx, dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	// A page cache that holds the whole transaction: no spills to the WAL
	// before the commit. This is loadgen's memory, not admit's.
	if _, err := db.ExecContext(ctx, `PRAGMA cache_size = -262144`); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var noticeID string
	if err := tx.QueryRowContext(ctx, `SELECT current_notice_id FROM programs WHERE id = ?`, programID).Scan(&noticeID); err != nil {
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
	now := time.Now().UTC()
	span := 30 * 24 * time.Hour
	start := now.Add(-span).UnixMilli()
	step := span.Milliseconds() / int64(n)
	for i := range n {
		// Time-ordered IDs in join order, as admit gives its entries.
		u, err := uuid.NewV7()
		if err != nil {
			return err
		}
		id := u.String()
		at := start + int64(i)*step
		state := seedState(i)
		var erase any
		if state == "declined" || state == "withdrawn" {
			erase = now.Add(30 * 24 * time.Hour).UnixMilli()
		}
		hash := sha256.Sum256([]byte(id))
		if _, err := entry.ExecContext(ctx, id, programID, fmt.Sprintf("seed-%06d@example.test", i), noticeID, at,
			state, at, at, hash[:], erase); err != nil {
			return fmt.Errorf("insert entry: %w", err)
		}
		binding := make([]byte, 32)
		rand.Read(binding)
		if _, err := receipt.ExecContext(ctx, programID, uuid.NewString(), binding, at); err != nil {
			return fmt.Errorf("insert receipt: %w", err)
		}
		if _, err := event.ExecContext(ctx, programID, id, at); err != nil {
			return fmt.Errorf("insert event: %w", err)
		}
	}
	if err := store.RecountEntries(ctx, tx, programID); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	// Leave the file as a stopped admit leaves it: the WAL checkpointed.
	_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// ceiling measures the raw write ceiling on the disk under dir: one
// connection running single-row BEGIN IMMEDIATE INSERT transactions with
// synchronous=FULL in WAL mode, back to back, for dur (at most maxTx).
func ceiling(ctx context.Context, path string, dur time.Duration, maxTx int64) (*Result, error) {
	db, err := openWriter(ctx, path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS ceiling (id INTEGER PRIMARY KEY, k BLOB NOT NULL, at INTEGER NOT NULL) STRICT`); err != nil {
		return nil, err
	}
	insert := func(ctx context.Context, _ int, seq int64) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		k := sha256.Sum256(fmt.Appendf(nil, "%d", seq))
		if _, err := tx.ExecContext(ctx, `INSERT INTO ceiling (k, at) VALUES (?, ?)`, k[:], time.Now().UnixMilli()); err != nil {
			return err
		}
		return tx.Commit()
	}
	l := load{Clients: 1, Duration: dur, MaxRequests: maxTx, RequestTimeout: 10 * time.Second}
	return l.run(ctx, "ceiling: raw FULL txn", insert), nil
}
