package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"admit/internal/pgtest"
	"admit/internal/testutil"
)

func TestRebind_NumbersPlaceholdersOutsideLiteralsAndComments(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT ? , ?`, `SELECT $1 , $2`},
		{`WHERE a = ?2 AND b = ?1 AND c = ?3`, `WHERE a = $2 AND b = $1 AND c = $3`},
		{`WHERE a = ?2 AND b = ?`, `WHERE a = $2 AND b = $3`},
		{`WHERE s = '?' AND t = 'it''s ?' AND u = ?`, `WHERE s = '?' AND t = 'it''s ?' AND u = $1`},
		{`SELECT "odd?name" FROM t WHERE x = ?`, `SELECT "odd?name" FROM t WHERE x = $1`},
		{"SELECT ? -- what? \n, ?", "SELECT $1 -- what? \n, $2"},
		{`WHERE ? IN (?, ?)`, `WHERE $1 IN ($2, $3)`},
	} {
		if got := rebind(tc.in); got != tc.want {
			t.Errorf("rebind(%q)=%q, want %q", tc.in, got, tc.want)
		}
	}
}

// Two DB handles on one database are two servers: each has its own
// writer connection and write gate, so only the advisory lock every write
// transaction takes keeps them from admitting past a cap between them.
func TestPostgres_TwoServersKeepACapExact(t *testing.T) {
	postgresOnly(t)
	const attempts, capacity = 400, 150
	for _, tc := range []struct {
		name                    string
		queueCap, hourCap, netw int
	}{
		{"queue cap", capacity, 100000, 0},
		{"hourly cap", 100000, capacity, 0},
		// Every attempt from one network: the counter row is shared.
		{"network limit", 100000, 100000, capacity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testutil.NewClock(testEpoch)
			path := filepath.Join(t.TempDir(), "admit.db")
			opt := Options{BindingKey: signupTestKey, Now: clock.Now, SignupQueue: attempts}
			servers := []*DB{mustOpenWith(t, path, opt), mustOpenWith(t, path, opt)}
			sp := mustSignupProgram(t, servers[0], "two-servers", tc.queueCap, tc.hourCap)
			clock.Set(testEpoch.Add(17 * time.Minute))

			var admitted, limited atomic.Int64
			errs := make([]error, attempts)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range attempts {
				wg.Go(func() {
					<-start
					req := sp.signupReq(fmt.Sprintf("person%04d@example.com", i))
					if tc.netw > 0 {
						req.Attempts = &AttemptLimit{Key: func(hour time.Time) []byte {
							return []byte("one network " + hour.Format(time.RFC3339))
						}, Max: tc.netw}
					}
					_, err := servers[i%2].Signup(context.Background(), req)
					switch {
					case err == nil:
						admitted.Add(1)
					case errors.Is(err, ErrQueueFull) || errors.Is(err, ErrIntakeFull) || errors.Is(err, ErrTooManyAttempts):
						limited.Add(1)
					default:
						errs[i] = err
					}
				})
			}
			close(start)
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("signups: %v", err)
			}
			if got := admitted.Load(); got != capacity {
				t.Fatalf("admitted %d across two servers, want exactly %d", got, capacity)
			}
			if got := limited.Load(); got != attempts-capacity {
				t.Fatalf("refused %d at the cap, want %d", got, attempts-capacity)
			}
			if got := mustCount(t, servers[1], `SELECT count(*) FROM entries WHERE program_id = ?`, sp.Program.ID); got != capacity {
				t.Fatalf("stored %d entries, want %d", got, capacity)
			}
			mustCountersMatchEntries(t, servers[1], sp.Program.ID, hourStart(testEpoch), capacity)
			if tc.netw > 0 {
				if got := mustCount(t, servers[0], `SELECT attempts FROM network_counters`); got != tc.netw {
					t.Fatalf("the network's counter reads %d, want %d", got, tc.netw)
				}
			}
		})
	}
}

// A write transaction that PostgreSQL aborts as a deadlock victim runs
// again from the start, on a fresh Tx, and commits once. The deadlock is
// real: a second connection holds one row and waits for another that the
// transaction holds, while the transaction waits for the first.
func TestPostgres_ADeadlockedWriteRunsAgainAndCommitsOnce(t *testing.T) {
	postgresOnly(t)
	db := MustOpenDB(t)
	ctx := context.Background()
	mustUpdate(t, db, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE deadlock_probe (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)`)
		if err == nil {
			_, err = tx.ExecContext(ctx, `INSERT INTO deadlock_probe VALUES (1, 0), (2, 0)`)
		}
		return err
	})
	other, err := sql.Open("pgx", pgDatabase(t, testPath(db)))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otherTx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer otherTx.Rollback()
	if _, err := otherTx.ExecContext(ctx, `UPDATE deadlock_probe SET n = n + 100 WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	var pid int
	otherDone := make(chan error, 1)
	var attempts int
	var txs []*Tx
	err = db.Update(ctx, func(tx *Tx) error {
		attempts++
		txs = append(txs, tx)
		if len(tx.queuedEvents) != 0 || tx.newEntries != nil || tx.signupPrograms != nil || tx.erased {
			t.Errorf("attempt %d began with an earlier attempt's state", attempts)
		}
		tx.erased = true // state of this attempt only
		if _, err := tx.ExecContext(ctx, `UPDATE deadlock_probe SET n = n + 1 WHERE id = 1`); err != nil {
			return err
		}
		if attempts == 1 {
			// The server detects the deadlock in whichever waiter's
			// deadlock_timeout ends first: this transaction's, made short.
			if _, err := tx.ExecContext(ctx, `SET LOCAL deadlock_timeout = '50ms'`); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				return err
			}
			go func() {
				// Wait until this transaction waits for row 2, then take
				// row 1 on the other connection: a cycle.
				for deadline := time.Now().Add(30 * time.Second); ; {
					if time.Now().After(deadline) {
						otherDone <- errors.New("the transaction never waited for row 2")
						otherTx.Rollback()
						return
					}
					var waiting bool
					if err := other.QueryRowContext(ctx, `SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&waiting); err != nil {
						otherDone <- err
						return
					}
					if waiting {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				_, err := otherTx.ExecContext(ctx, `UPDATE deadlock_probe SET n = n + 100 WHERE id = 1`)
				if err == nil {
					err = otherTx.Commit()
				}
				otherDone <- err
			}()
		}
		_, err := tx.ExecContext(ctx, `UPDATE deadlock_probe SET n = n + 1 WHERE id = 2`)
		return err
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if err := <-otherDone; err != nil {
		t.Fatalf("the other connection: %v", err)
	}
	if attempts != 2 || txs[0] == txs[1] {
		t.Fatalf("the transaction ran %d times, want twice on two Tx", attempts)
	}
	got := mustColumn[int64](t, db, `SELECT n FROM deadlock_probe ORDER BY id`)
	if want := []int64{101, 101}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows hold %v, want %v: each side's update exactly once", got, want)
	}
}

// A serialisation failure the database keeps answering is retried a
// bounded number of times, and its error returned.
func TestPostgres_ASerialisationFailureIsRetriedABoundedNumberOfTimes(t *testing.T) {
	postgresOnly(t)
	db := MustOpenDB(t)
	ctx := context.Background()
	var attempts int
	err := db.Update(ctx, func(tx *Tx) error {
		attempts++
		_, err := tx.ExecContext(ctx, `DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = 'serialization_failure'; END $$`)
		return err
	})
	if pgCode(err) != pgSerializationFailure || attempts != maxWriteAttempts {
		t.Fatalf("err=%v after %d attempts, want SQLSTATE 40001 after %d", err, attempts, maxWriteAttempts)
	}
	// A failure that another attempt cannot remove runs once.
	attempts = 0
	err = db.Update(ctx, func(tx *Tx) error {
		attempts++
		_, err := tx.ExecContext(ctx, `INSERT INTO workspaces (id, name, active, created_at) VALUES ('short', 'x', 1, 1)`)
		return err
	})
	if pgCode(err) != pgCheckViolation || attempts != 1 {
		t.Fatalf("err=%v after %d attempts, want a check violation after 1", err, attempts)
	}
}

// A connection lost before the commit (here the server ends the writer's
// session) is retried on a new connection; a lost read is EUNAVAILABLE.
func TestPostgres_ALostConnectionBeforeTheCommitIsRetried(t *testing.T) {
	postgresOnly(t)
	db := MustOpenDB(t)
	ctx := context.Background()
	var attempts int
	err := db.Update(ctx, func(tx *Tx) error {
		attempts++
		if attempts == 1 {
			_, err := tx.ExecContext(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO workspaces (id, name, active, created_at) VALUES ('00000000-0000-4000-8000-000000000002', 'After the loss', 1, 1)`)
		return err
	})
	if err != nil || attempts != 2 {
		t.Fatalf("err=%v after %d attempts, want success on the second", err, attempts)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM workspaces WHERE name = 'After the loss'`); got != 1 {
		t.Fatalf("%d rows written, want 1", got)
	}
	err = db.View(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
		return err
	})
	if ErrorCode(err) != EUNAVAILABLE || ErrorMessage(err) == ErrorMessage(errors.New("x")) {
		t.Fatalf("a read whose connection was lost: err=%v, code %q, want %q", err, ErrorCode(err), EUNAVAILABLE)
	}
}

// Each SQLSTATE the store maps, produced by real statements.
func TestPostgres_ErrorsMapAsOnSQLite(t *testing.T) {
	postgresOnly(t)
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "error-codes")
	mustNotice(t, db, a, p.ID)
	exec := func(q string, args ...any) error {
		return db.Update(ctx, func(tx *Tx) error {
			_, err := tx.ExecContext(ctx, q, args...)
			return err
		})
	}
	for _, tc := range []struct {
		name, sqlstate, code string
		err                  error
	}{
		{"unique", pgUniqueViolation, ECONFLICT,
			exec(`INSERT INTO workspaces (id, name, active, created_at) VALUES ('00000000-0000-4000-8000-000000000003', ?, 1, 1)`, w.Name)},
		{"foreign key", pgForeignKeyViolation, ECONFLICT,
			exec(`UPDATE programs SET workspace_id = '00000000-0000-4000-8000-000000000004' WHERE id = ?`, p.ID)},
		{"check", pgCheckViolation, ECONFLICT, exec(`UPDATE programs SET queue_cap = 0 WHERE id = ?`, p.ID)},
		{"not null", pgNotNullViolation, ECONFLICT, exec(`UPDATE programs SET purpose = NULL WHERE id = ?`, p.ID)},
		{"trigger", pgRaiseException, ECONFLICT, exec(`DELETE FROM notices WHERE program_id = ?`, p.ID)},
		{"read only", pgReadOnlyTransaction, EUNAVAILABLE,
			db.Update(ctx, func(tx *Tx) error {
				// As on a standby: the transaction may only read.
				if _, err := tx.ExecContext(ctx, `SET TRANSACTION READ ONLY`); err != nil {
					return err
				}
				_, err := tx.ExecContext(ctx, `UPDATE programs SET queue_cap = 7 WHERE id = ?`, p.ID)
				return err
			})},
		{"disk full", pgDiskFull, EUNAVAILABLE,
			exec(`DO $$ BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = 'disk_full'; END $$`)},
	} {
		if got := pgCode(tc.err); got != tc.sqlstate {
			t.Errorf("%s: err=%v, want SQLSTATE %s", tc.name, tc.err, tc.sqlstate)
			continue
		}
		if got := ErrorCode(tc.err); got != tc.code {
			t.Errorf("%s: ErrorCode=%q, want %q (%v)", tc.name, got, tc.code, tc.err)
		}
	}
	// The full disk is ErrNoSpace, and marks writes as failing until one
	// succeeds, as on SQLite.
	err := exec(`DO $$ BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = 'disk_full'; END $$`)
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("disk full: err=%v, want ErrNoSpace", err)
	}
	if !db.health.failing() || !db.health.noSpace.Load() {
		t.Fatal("a full disk did not mark writes as failing for lack of space")
	}
	// The probe really writes, and clears the mark.
	if err := db.Writable(ctx); err != nil || db.health.failing() {
		t.Fatalf("the probe write: %v (failing %t), want writes to succeed again", err, db.health.failing())
	}
}

// Servers starting together on an empty database migrate it once: goose's
// session lock makes the second wait and then find nothing to do.
func TestOpenPostgres_ServersStartingTogetherMigrateOnce(t *testing.T) {
	postgresOnly(t)
	u := pgtest.NewDatabase(t)
	ctx := context.Background()
	const servers = 3
	var wg sync.WaitGroup
	dbs := make([]*DB, servers)
	errs := make([]error, servers)
	applied := make([][]Migration, servers)
	for i := range servers {
		wg.Go(func() {
			dbs[i], errs[i] = OpenPostgres(ctx, u, Options{BindingKey: signupTestKey,
				Migrated: func(m Migration) { applied[i] = append(applied[i], m) }})
		})
	}
	wg.Wait()
	for i, db := range dbs {
		if errs[i] != nil {
			t.Fatalf("server %d: %v", i, errs[i])
		}
		defer db.Close()
	}
	known, err := knownMigrationsOn(PostgreSQL)
	if err != nil {
		t.Fatal(err)
	}
	var total int
	for _, a := range applied {
		total += len(a)
	}
	if total != len(known) {
		t.Fatalf("the servers applied %d migrations between them, want each of the %d once", total, len(known))
	}
	if got := mustCount(t, dbs[0], `SELECT count(*) FROM goose_db_version WHERE version_id > 0`); got != len(known) {
		t.Fatalf("goose recorded %d migrations, want %d", got, len(known))
	}
	s, err := ReadSchemaPostgres(ctx, u)
	if err != nil || len(s.Pending) != 0 || len(s.Unknown) != 0 || s.Version() != KnownVersion() {
		t.Fatalf("schema %+v (%v): want every migration applied", s, err)
	}
}

// What belongs to SQLite's files does nothing on PostgreSQL, and the
// database's address is never quoted with its password.
func TestOpenPostgres_FileOperationsDoNothing(t *testing.T) {
	postgresOnly(t)
	db := MustOpenDB(t)
	ctx := context.Background()
	if db.Engine() != PostgreSQL || db.Path != "" {
		t.Fatalf("engine %q, path %q; want postgres and no path", db.Engine(), db.Path)
	}
	var lockTimeout string
	if err := db.writer.QueryRowContext(ctx, `SHOW lock_timeout`).Scan(&lockTimeout); err != nil || lockTimeout != "10s" {
		t.Fatalf("the writer's lock_timeout is %q (%v), want BusyTimeout, 10s", lockTimeout, err)
	}
	if err := db.Checkpoint(ctx); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	if n, err := db.TrimWAL(ctx); n != 0 || err != nil {
		t.Fatalf("trim WAL: %d, %v", n, err)
	}
	stop, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var flushes atomic.Int64
	go func() {
		db.RunEraser(stop, slog.New(slog.DiscardHandler), func(context.Context) error { flushes.Add(1); return nil })
		close(done)
	}()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "no-files")
	mustNotice(t, db, a, p.ID)
	id := mustEntryVia(t, db, a, p.ID, StateWaiting)
	if err := db.Update(ctx, func(tx *Tx) error {
		return eraseEntry(ctx, tx, p.ID, id, Actor{Kind: ActorSystem}, "retention")
	}); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if n := flushes.Load(); n != 0 {
		t.Fatalf("the eraser flushed %d times on PostgreSQL, want never", n)
	}

	for _, u := range []string{"postgres://admit:s3cret-pw@db.internal:6543/admitdb?sslmode=disable", "host=db.internal port=6543 dbname=admitdb user=admit password=s3cret-pw"} {
		if got := describePostgres(u); got != "postgres://db.internal:6543/admitdb" {
			t.Errorf("describePostgres(%q)=%q", u, got)
		}
	}
	_, err := OpenPostgres(ctx, "postgres://admit:s3cret-pw@127.0.0.1:1/admitdb?sslmode=disable&connect_timeout=5", Options{BindingKey: signupTestKey})
	if err == nil || strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("open on a closed port: err=%v, want an error without the password", err)
	}
	if _, err := OpenPostgres(ctx, pgDatabase(t, testPath(db)), Options{BindingKey: signupTestKey[:8]}); err == nil {
		t.Fatal("a short binding key was accepted")
	}
}

// A signup batch whose connection the server ends before the commit runs
// again whole on a new connection: every signup is answered once, stored
// once and counted once.
func TestPostgres_ASignupBatchWhoseConnectionIsLostRunsAgain(t *testing.T) {
	postgresOnly(t)
	clock := testutil.NewClock(testEpoch)
	db := mustOpenWith(t, filepath.Join(t.TempDir(), "admit.db"), Options{BindingKey: signupTestKey, Now: clock.Now})
	sp := mustSignupProgram(t, db, "lost-batch", 100, 100)
	ctx := context.Background()
	var writerPID int
	if err := db.writer.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&writerPID); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("pgx", pgDatabase(t, testPath(db)))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// Once, after the first batch's signups ran and before its queued
	// events are written and it commits, the server ends the writer's
	// session.
	var ran, killed atomic.Int64
	db.signupsRan = func() {
		ran.Add(1)
		if killed.Add(1) == 1 {
			if _, err := other.ExecContext(ctx, `SELECT pg_terminate_backend($1)`, writerPID); err != nil {
				t.Errorf("end the writer's session: %v", err)
			}
		}
	}
	const n = 12
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = db.Signup(ctx, sp.signupReq(fmt.Sprintf("lost-%02d@example.com", i)))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("signups: %v", err)
	}
	if killed.Load() == 0 || ran.Load() < 2 {
		t.Fatalf("the batch ran %d times and its session was ended %d times: the retry was not exercised", ran.Load(), killed.Load())
	}
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE program_id = ?`, sp.Program.ID); got != n {
		t.Fatalf("stored %d entries, want %d", got, n)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM audit_events WHERE program_id = ? AND event_type = 'signup'`, sp.Program.ID); got != n {
		t.Fatalf("recorded %d signup events, want %d", got, n)
	}
	mustCountersMatchEntries(t, db, sp.Program.ID, hourStart(testEpoch), n)
}

// actualRows matches the actual row count and loops of a plan node in
// EXPLAIN ANALYZE's text.
var actualRows = regexp.MustCompile(`actual time=[0-9.]+\.\.[0-9.]+ rows=([0-9]+) loops=([0-9]+)`)

// On PostgreSQL a page of a search reads, from each state's range of the
// search index, at most a page of entries, never the table nor the whole
// range of a prefix that every entry matches.
func TestQueueSearch_PostgresReadsAtMostAPagePerRange(t *testing.T) {
	postgresOnly(t)
	k := mustOwnerKit(t, "search-pg-plan", 5)
	mustSeedEntries(t, k.db, k.p.ID, k.notice.ID, 20_000)
	ctx := context.Background()
	if _, err := k.db.writer.ExecContext(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	cursor := encodeSearchCursor(uuid.NewString())
	for _, f := range []QueueFilter{
		{Query: "s"},
		{Query: "seed-0001"},
		{Query: "Seed-000042@example.test"},
		{Query: "seed", Cursor: cursor},
		{Query: "seed", Before: cursor},
		{Query: "seed", State: StateWaiting},
	} {
		f.Limit = DefaultPageSize
		q, args, err := queueQuery(PostgreSQL, k.p.ID, f, func(string) (string, error) { return "seed-010000@example.test", nil })
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		mustUpdate(t, k.db, func(tx *Tx) error {
			rows, err := tx.QueryContext(ctx, `EXPLAIN (ANALYZE) `+q, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					return err
				}
				plan = append(plan, line)
			}
			return rows.Err()
		})
		for _, line := range plan {
			if !strings.Contains(line, " on entries ") {
				continue
			}
			if !strings.Contains(line, "Index Scan using entries_state_search_idx") && !strings.Contains(line, "Index Scan Backward using entries_state_search_idx") {
				t.Errorf("%+v reads entries otherwise than by the search index: %s", f, strings.TrimSpace(line))
				continue
			}
			m := actualRows.FindStringSubmatch(line)
			if m == nil {
				continue // never executed
			}
			n, _ := strconv.Atoi(m[1])
			loops, _ := strconv.Atoi(m[2])
			if n*loops > f.Limit+1 {
				t.Errorf("%+v reads %d entries from one range for a page of %d:\n%s", f, n*loops, f.Limit, strings.Join(plan, "\n"))
			}
		}
	}
}

// A read transaction reads one snapshot: a write committed while it runs
// is not seen by its later statements.
func TestPostgres_AViewReadsOneSnapshot(t *testing.T) {
	postgresOnly(t)
	db := MustOpenDB(t)
	ctx := context.Background()
	mustOwner(t, db)
	var before, after int
	err := db.View(ctx, func(tx *Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM workspaces`).Scan(&before); err != nil {
			return err
		}
		mustOwner(t, db) // commits a new workspace meanwhile
		return tx.QueryRowContext(ctx, `SELECT count(*) FROM workspaces`).Scan(&after)
	})
	if err != nil {
		t.Fatal(err)
	}
	if before != 1 || after != 1 {
		t.Fatalf("the view read %d and then %d workspaces, want 1 both times", before, after)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM workspaces`); got != 2 {
		t.Fatalf("after the view: %d workspaces, want 2", got)
	}
}
