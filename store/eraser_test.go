package store

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// gatedFlush is a flush for RunEraser that counts its calls and, while
// hold is open, blocks in its first call until the test lets it go.
type gatedFlush struct {
	calls   atomic.Int32
	entered chan int32
	release chan struct{}
	fail    atomic.Int32 // calls still to fail
}

func newGatedFlush() *gatedFlush {
	return &gatedFlush{entered: make(chan int32, 100), release: make(chan struct{})}
}

func (g *gatedFlush) flush(ctx context.Context) error {
	n := g.calls.Add(1)
	g.entered <- n
	if n == 1 {
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if g.fail.Add(-1) >= 0 {
		return errors.New("checkpoint: the database was busy")
	}
	return nil
}

// next waits for the next flush call and returns its number.
func (g *gatedFlush) next(t *testing.T) int32 {
	t.Helper()
	select {
	case n := <-g.entered:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no flush within 10s")
	}
	return 0
}

func startGatedEraser(t *testing.T, db *DB, g *gatedFlush) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.RunEraser(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), g.flush)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func TestRunEraser_ABurstOfErasuresSharesOneFlushAfterItsLastCommit(t *testing.T) {
	sqliteOnly(t, "flushing erased bytes out of the WAL file")
	f := newLifecycleFixture(t)
	ctx := context.Background()
	var tokens []string
	for _, email := range []string{"a@example.com", "b@example.com", "c@example.com", "d@example.com", "e@example.com"} {
		_, tok := f.join(t, email)
		tokens = append(tokens, tok)
	}
	g := newGatedFlush()
	startGatedEraser(t, f.db, g)
	if n := g.next(t); n != 1 {
		t.Fatalf("first flush is call %d, want 1 (at start)", n)
	}
	// The start flush is still running: every removal commits meanwhile.
	for _, tok := range tokens {
		if err := f.db.RemoveByToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	close(g.release)
	if n := g.next(t); n != 2 {
		t.Fatalf("flush after the burst is call %d, want 2", n)
	}
	// One flush covers all five; nothing more is pending.
	select {
	case n := <-g.entered:
		t.Fatalf("flush call %d with no erasure since the last", n)
	case <-time.After(3 * eraserGap):
	}
	// A removal that matches nothing erases nothing: no flush.
	if err := f.db.RemoveByToken(ctx, tokens[0]); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-g.entered:
		t.Fatalf("flush call %d after a removal that erased nothing", n)
	case <-time.After(3 * eraserGap):
	}
}

func TestRunEraser_RetriesAFailedFlushUntilItSucceeds(t *testing.T) {
	sqliteOnly(t, "flushing erased bytes out of the WAL file")
	f := newLifecycleFixture(t)
	g := newGatedFlush()
	close(g.release)
	g.fail.Store(3)
	startGatedEraser(t, f.db, g)
	for want := int32(1); want <= 4; want++ {
		if n := g.next(t); n != want {
			t.Fatalf("flush call %d, want %d", n, want)
		}
	}
	select {
	case n := <-g.entered:
		t.Fatalf("flush call %d after one succeeded", n)
	case <-time.After(time.Second):
	}
}

func TestCheckpoint_GivesUpOnALongReaderAndKeepsTheWritersBusyTimeout(t *testing.T) {
	sqliteOnly(t, "flushing erased bytes out of the WAL file")
	f := newLifecycleFixture(t)
	ctx := context.Background()
	f.join(t, "first@example.com")
	// A reader holds a snapshot; a later commit puts frames in the WAL that
	// it does not see, so a TRUNCATE checkpoint must wait for it.
	rtx, err := f.db.reader.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rtx.Rollback()
	var n int
	if err := rtx.QueryRowContext(ctx, `SELECT count(*) FROM entries`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	f.join(t, "second@example.com")
	began := time.Now()
	if err := f.db.Checkpoint(ctx); err == nil {
		t.Fatal("checkpoint succeeded while a reader held an older snapshot")
	}
	if took := time.Since(began); took >= BusyTimeout {
		t.Fatalf("checkpoint waited %s for the reader: the writer's full busy timeout", took)
	}
	var timeout int64
	if err := f.db.writer.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&timeout); err != nil {
		t.Fatal(err)
	}
	if timeout != BusyTimeout.Milliseconds() {
		t.Fatalf("writer busy_timeout=%d after the checkpoint, want %d", timeout, BusyTimeout.Milliseconds())
	}
	// Once the reader is gone, the checkpoint succeeds.
	rtx.Rollback()
	if err := f.db.Checkpoint(ctx); err != nil {
		t.Fatalf("checkpoint with no reader: %v", err)
	}
}

// An erasure committed just before the eraser is stopped is flushed on the
// way out; with none pending, stopping flushes nothing.
func TestRunEraser_StoppingFlushesAnErasureStillPending(t *testing.T) {
	sqliteOnly(t, "flushing erased bytes out of the WAL file")
	for _, erase := range []bool{true, false} {
		f := newLifecycleFixture(t)
		_, tok := f.join(t, "late@example.com")
		g := newGatedFlush()
		close(g.release)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.db.RunEraser(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), g.flush)
		}()
		if n := g.next(t); n != 1 {
			t.Fatalf("first flush is call %d, want 1 (at start)", n)
		}
		time.Sleep(50 * time.Millisecond) // the start flush has returned: the eraser waits out its gap
		if erase {
			if err := f.db.RemoveByToken(context.Background(), tok); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		<-done
		want := int32(1)
		if erase {
			want = 2
		}
		if got := g.calls.Load(); got != want {
			t.Errorf("erasure pending=%v: %d flushes, want %d", erase, got, want)
		}
	}
}
