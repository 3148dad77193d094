package cli

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"admit/internal/testutil"
	"admit/store"
)

// leaseRow is a lease's row as serve left it.
type leaseRow struct {
	holder  string
	epoch   int64
	expires time.Time
}

// readLeaseRow reads the named lease's row; ok is false before its first
// taking.
func readLeaseRow(tb testing.TB, db *store.DB, name string) (r leaseRow, ok bool) {
	tb.Helper()
	var ms int64
	err := db.View(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT holder, epoch, expires_at FROM leases WHERE name = ?`, name).
			Scan(&r.holder, &r.epoch, &ms)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return leaseRow{}, false
	}
	if err != nil {
		tb.Fatal(err)
	}
	r.expires = store.FromMillis(ms)
	return r, true
}

// openClocked opens a fresh SQLite store in dir on a stopped fake clock.
func openClocked(tb testing.TB) (*store.DB, *testutil.Clock) {
	tb.Helper()
	clock := testutil.NewClock(time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC))
	db, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "admit.db"),
		store.Options{BindingKey: make([]byte, store.BindingKeySize), Now: clock.Now})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db, clock
}

func TestRunLeased_OnSQLiteAKilledServersLeaseIsTakenAtOnce(t *testing.T) {
	db, clock := openClocked(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The server before was killed holding the lease, minutes from expiry.
	if _, err := db.TakeLease(ctx, "sweeper", "killed-server", store.LeaseTTL); err != nil {
		t.Fatal(err)
	}
	leased := runLeased(ctx, db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	started, returned := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(returned)
		leased("sweeper", func(ctx context.Context) { close(started); <-ctx.Done() })
	}()
	select {
	case <-started:
	case <-time.After(time.Minute): // a guard: the lease is taken in one transaction
		t.Fatal("the sweeper did not start: the killed server's lease held it back")
	}
	r, _ := readLeaseRow(t, db, "sweeper")
	if r.holder == "killed-server" || r.epoch != 2 || !r.expires.Equal(clock.Now().Add(fileLeaseTTL)) {
		t.Fatalf("lease after the restart: %+v, want a new holder in epoch 2 until %v", r, clock.Now().Add(fileLeaseTTL))
	}
	cancel()
	<-returned
	if r, _ := readLeaseRow(t, db, "sweeper"); r.expires.After(clock.Now()) {
		t.Fatalf("lease after a clean stop: %+v, want it released", r)
	}
}

func TestStartErasure_RunsTheSweeperAndRetirerUnderLeasesReleasedAtStop(t *testing.T) {
	db, clock := openClocked(t)
	stop := startErasure(context.Background(), db, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var sweeper, retirer leaseRow
	for ok := false; !ok; {
		var s, r bool
		sweeper, s = readLeaseRow(t, db, "sweeper")
		retirer, r = readLeaseRow(t, db, "retirer")
		ok = s && r
		if !ok {
			time.Sleep(time.Millisecond) // until both goroutines have taken their lease
		}
	}
	if sweeper.holder != retirer.holder || sweeper.epoch != 1 || retirer.epoch != 1 ||
		!sweeper.expires.Equal(clock.Now().Add(fileLeaseTTL)) {
		t.Fatalf("sweeper %+v, retirer %+v: want both held by this server in epoch 1 for %v", sweeper, retirer, fileLeaseTTL)
	}
	stop()
	for _, name := range []string{"sweeper", "retirer"} {
		if r, _ := readLeaseRow(t, db, name); r.expires.After(clock.Now()) {
			t.Fatalf("%s after stop: %+v, want it released", name, r)
		}
	}
}
