package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"net/url"
	"time"

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

// seedQueue writes n entries into the program, as one transaction, with
// the state mix of seedState and none due for erasure (seedEntries).
func seedQueue(ctx context.Context, dbPath, programID string, n int) error {
	return seedEntries(ctx, dbPath, time.Now().UTC(), n, seedProgram{ID: programID, N: n,
		Email: func(i int) string { return fmt.Sprintf("seed-%06d@example.test", i) },
		Entry: func(i int) (string, bool) { return seedState(i), false }})
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
