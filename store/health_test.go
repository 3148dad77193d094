package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"admit/internal/testutil"
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
			_, err := tx.ExecContext(ctx, `INSERT INTO workspaces (id, name, active, created_at) VALUES ('00000000-0000-4000-8000-000000000001', 'Held', 1, 1)`)
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
	if got := mustCount(t, db, `SELECT count(*) FROM workspaces WHERE name = 'Held'`); got != 1 {
		t.Errorf("held workspaces=%d, want 1", got)
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

// A write that fails for lack of space is ErrNoSpace (EUNAVAILABLE), and
// WriteStatus says disk full since the first failure: later failures keep
// that time, and a commit that writes nothing (a replay) does not clear
// it. Once space is freed, the next write that succeeds clears it.
func TestWriteStatus_DiskFullSinceTheFirstFailureUntilAWriteSucceeds(t *testing.T) {
	sqliteOnly(t, "a full disk under the database file")
	dir, fill := testutil.MustFullDisk(t)
	db := mustOpenAt(t, filepath.Join(dir, "admit.db"), testutil.NewClock(testEpoch))
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "full-disk", 100000, 100000)
	acknowledged := sp.signupReq("acknowledged@example.com")
	mustSignup(t, db, acknowledged)
	if st := db.WriteStatus(ctx); st.Failing() {
		t.Fatalf("WriteStatus before the disk is full: %+v", st)
	}

	fill()
	var first time.Time
	for i := 0; first.IsZero(); i++ {
		if i == 200 {
			t.Fatal("200 signups committed on a full disk")
		}
		before := time.Now()
		_, err := db.Signup(ctx, sp.signupReq(fmt.Sprintf("full%d@example.com", i)))
		if err == nil {
			continue // the WAL's existing room
		}
		if !errors.Is(err, ErrNoSpace) || ErrorCode(err) != EUNAVAILABLE {
			t.Fatalf("signup on a full disk: %v (code %s), want ErrNoSpace", err, ErrorCode(err))
		}
		st := db.WriteStatus(ctx)
		if !st.DiskFull || st.FailingSince.Before(before.Truncate(time.Millisecond)) || st.FailingSince.After(time.Now()) {
			t.Fatalf("WriteStatus after the first failure: %+v, want disk full since between %s and now", st, before)
		}
		first = st.FailingSince
	}
	if err := db.Update(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE programs SET name = name || ' again'`)
		return err
	}); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("an owner write on a full disk: %v, want ErrNoSpace", err)
	}
	if res, err := db.Signup(ctx, acknowledged); err != nil || !res.Replay {
		t.Fatalf("replay on a full disk: %+v, %v", res, err)
	}
	if st := db.WriteStatus(ctx); !st.DiskFull || !st.FailingSince.Equal(first) {
		t.Fatalf("WriteStatus after a replay and a second failure: %+v, want disk full since %s", st, first)
	}

	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	mustSignup(t, db, sp.signupReq("after@example.com"))
	if st := db.WriteStatus(ctx); st.Failing() {
		t.Fatalf("WriteStatus after a write succeeded: %+v", st)
	}
}
