package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPauseWrites_HoldsWriteTransactionsUntilResumed(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	resume, err := db.PauseWrites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- db.Update(ctx, func(tx *Tx) error {
			_, err := tx.ExecContext(ctx, `PRAGMA user_version = 7`)
			return err
		})
	}()
	select {
	case err := <-done:
		t.Fatalf("a write committed while writes were paused: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	// A second pause waits too, bounded by its context.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := db.PauseWrites(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second pause: err=%v, want the deadline", err)
	}
	resume()
	resume() // resuming twice is harmless
	if err := <-done; err != nil {
		t.Fatalf("the held write: %v", err)
	}
	if got := mustCount(t, db, `SELECT user_version FROM pragma_user_version`); got != 7 {
		t.Errorf("user_version=%d, want 7", got)
	}
}

func TestWritable_NilWhileWritesSucceed(t *testing.T) {
	db := MustOpenDB(t)
	if err := db.Writable(context.Background()); err != nil {
		t.Fatalf("Writable on a healthy database: %v", err)
	}
	// A refused statement is no storage failure.
	_ = db.Update(context.Background(), func(tx *Tx) error {
		_, err := tx.ExecContext(context.Background(), `INSERT INTO no_such_table VALUES (1)`)
		return err
	})
	if err := db.Writable(context.Background()); err != nil {
		t.Fatalf("Writable after a refused statement: %v", err)
	}
}
