package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"admit/internal/testutil"
)

// schemaSnapshot is everything a migration could change: the schema objects
// and the goose version table.
type schemaSnapshot struct {
	Objects  []string
	Versions []string
}

func mustSchemaSnapshot(t *testing.T, db *DB) schemaSnapshot {
	t.Helper()
	ctx := context.Background()
	var s schemaSnapshot
	err := db.View(ctx, func(tx *Tx) error {
		// On PostgreSQL: every relation (table, index, sequence), trigger
		// and function of the schema, each with its definition.
		rows, err := tx.QueryContext(ctx, tx.engine.pick(`SELECT type, name, sql FROM sqlite_schema ORDER BY name`,
			pgSchemaSQL))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var typ, name string
			var text sql.NullString
			if err := rows.Scan(&typ, &name, &text); err != nil {
				return err
			}
			s.Objects = append(s.Objects, fmt.Sprintf("%s %s %q", typ, name, text.String))
		}
		if err := rows.Err(); err != nil {
			return err
		}
		vrows, err := tx.QueryContext(ctx, `SELECT id, version_id, is_applied, tstamp FROM goose_db_version ORDER BY id`)
		if err != nil {
			return err
		}
		defer vrows.Close()
		for vrows.Next() {
			var id, version int64
			var applied bool
			var tstamp any
			if err := vrows.Scan(&id, &version, &applied, &tstamp); err != nil {
				return err
			}
			s.Versions = append(s.Versions, fmt.Sprintf("%d %d %t %v", id, version, applied, tstamp))
		}
		return vrows.Err()
	})
	if err != nil {
		t.Fatalf("snapshot schema: %v", err)
	}
	return s
}

func TestOpen_MigrationsApplyTwiceWithoutChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admit.db")
	clock := testutil.NewClock(testEpoch)

	first, err := openTestDB(t, path, Options{BindingKey: signupTestKey, Now: clock.Now})
	if err != nil {
		t.Fatalf("first open: %v", err)
	}
	before := mustSchemaSnapshot(t, first)
	if err := first.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if len(before.Objects) < 20 {
		t.Fatalf("schema has %d objects after migrating, want the full schema", len(before.Objects))
	}
	if !strings.Contains(strings.Join(before.Objects, "\n"), "table entries") {
		t.Fatalf("schema lacks the entries table:\n%s", strings.Join(before.Objects, "\n"))
	}
	if len(before.Versions) < 2 { // goose's version 0 row plus at least one migration
		t.Fatalf("goose versions=%v, want applied migrations", before.Versions)
	}

	second := mustOpenAt(t, path, clock) // runs the migrations again
	after := mustSchemaSnapshot(t, second)
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("second open changed the database\nbefore: %v\nafter:  %v", before, after)
	}
}

func TestSchema_ReferenceRowsAreAppendOnly(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "append-only")
	mustNotice(t, db, a, p.ID)

	for _, table := range []string{"notices", "audit_events", "workspace_events"} {
		if n := mustCount(t, db, `SELECT count(*) FROM `+table); n == 0 {
			t.Fatalf("%s has no rows: the triggers would not fire", table)
		}
		for _, stmt := range []string{
			`UPDATE ` + table + ` SET id = id`,
			`DELETE FROM ` + table,
		} {
			err := db.Update(ctx, func(tx *Tx) error {
				_, err := tx.ExecContext(ctx, stmt)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), "immutable reference row") {
				t.Errorf("%s: err=%v, want immutable reference row", stmt, err)
			}
		}
	}
}

func TestOpen_PragmasReadBackOnBothPools(t *testing.T) {
	sqliteOnly(t, "pragmas")
	db := MustOpenDB(t)
	ctx := context.Background()
	want := map[string]string{
		"journal_mode":  "wal",
		"foreign_keys":  "1",
		"synchronous":   "2",
		"secure_delete": "1",
		"busy_timeout":  fmt.Sprint(BusyTimeout.Milliseconds()),
	}
	readPragmas := func(tx *Tx) (map[string]string, error) {
		got := map[string]string{}
		for _, name := range []string{"journal_mode", "foreign_keys", "synchronous", "secure_delete", "busy_timeout", "query_only"} {
			var v string
			if err := tx.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v); err != nil {
				return nil, fmt.Errorf("pragma %s: %w", name, err)
			}
			got[name] = strings.ToLower(v)
		}
		return got, nil
	}

	for _, pool := range []struct {
		name      string
		run       func(context.Context, func(*Tx) error) error
		queryOnly string
	}{
		{"writer", db.Update, "0"},
		{"reader", db.View, "1"},
	} {
		var got map[string]string
		err := pool.run(ctx, func(tx *Tx) error {
			var err error
			got, err = readPragmas(tx)
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", pool.name, err)
		}
		for name, v := range want {
			if got[name] != v {
				t.Errorf("%s: PRAGMA %s=%q, want %q", pool.name, name, got[name], v)
			}
		}
		if got, want := got["query_only"], pool.queryOnly; got != want {
			t.Errorf("%s: PRAGMA query_only=%q, want %q", pool.name, got, want)
		}
	}

	// The reader refuses writes even inside a transaction.
	key := make([]byte, 32)
	err := db.View(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO network_counters (key, attempts, expires_at) VALUES (?, 1, 1)`, key)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Fatalf("write in View: err=%v, want a read-only error", err)
	}
	if n := mustCount(t, db, `SELECT count(*) FROM network_counters`); n != 0 {
		t.Fatalf("network_counters has %d rows after a refused write, want 0", n)
	}
}

func TestCheckPragmas_RefusesPoolWithoutRequiredPragma(t *testing.T) {
	sqliteOnly(t, "pragmas")
	ctx := context.Background()
	without := func(readOnly bool, drop string, add ...string) string {
		d := dsn("PATH", readOnly)
		d = strings.Replace(d, "_pragma="+drop, "_pragma=x", 1)
		d = strings.ReplaceAll(d, "&_pragma=x", "")
		d = strings.ReplaceAll(d, "_pragma=x&", "")
		for _, p := range add {
			d += "&_pragma=" + p
		}
		return d
	}
	for _, tc := range []struct {
		name     string
		dsn      string // PATH is replaced by a fresh file
		readOnly bool
		wantErr  string
	}{
		{"bare DSN", "file:PATH", false, "pragma"},
		{"no WAL", without(false, "journal_mode%28WAL%29"), false, "journal_mode"},
		{"normal sync", without(false, "synchronous%28FULL%29", "synchronous%28NORMAL%29"), false, "synchronous"},
		{"no foreign keys", without(false, "foreign_keys%281%29"), false, "foreign_keys"},
		{"no secure delete", without(false, "secure_delete%281%29"), false, "secure_delete"},
		{"reader not query-only", without(true, "query_only%281%29"), true, "query_only"},
		{"writer as built", dsn("PATH", false), false, ""},
		{"reader as built", dsn("PATH", true), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "raw.db")
			pool, err := sql.Open("sqlite", strings.Replace(tc.dsn, "PATH", path, 1))
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer pool.Close()
			err = checkPragmas(ctx, pool, tc.readOnly)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("checkPragmas(%s)=%v, want nil", tc.dsn, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("checkPragmas(%s)=%v, want an error about %s", tc.dsn, err, tc.wantErr)
			}
		})
	}
}

// holdWriteLock runs db.Update in a goroutine whose fn inserts a workspace
// named name and then waits for release. It returns once the lock is held,
// with a channel that yields Update's result.
func holdWriteLock(t *testing.T, db *DB, name string) (release func(), done <-chan error, txNow <-chan time.Time) {
	t.Helper()
	ctx := context.Background()
	locked := make(chan struct{})
	releaseCh := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(releaseCh) }) }
	t.Cleanup(release)
	result := make(chan error, 1)
	now := make(chan time.Time, 1)
	go func() {
		result <- db.Update(ctx, func(tx *Tx) error {
			now <- tx.Now
			_, err := tx.ExecContext(ctx, `INSERT INTO workspaces (id, name, active, created_at) VALUES (?, ?, 1, ?)`,
				uuid.NewString(), name, Millis(tx.Now))
			close(locked)
			if err != nil {
				return err
			}
			<-releaseCh
			return nil
		})
	}()
	select {
	case <-locked:
	case err := <-result:
		t.Fatalf("holder's Update ended early: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("holder never took the write lock")
	}
	return release, result, now
}

func TestUpdate_SecondWriterBlocksOnBeginImmediate(t *testing.T) {
	db1, clock := mustOpenDBWithClock(t)
	db2 := mustOpenAt(t, testPath(db1), clock)
	ctx := context.Background()

	release, db1Done, _ := holdWriteLock(t, db1, "held by db1")

	started := make(chan struct{})
	type result struct {
		seen int
		err  error
	}
	db2Done := make(chan result, 1)
	go func() {
		var seen int
		err := db2.Update(ctx, func(tx *Tx) error {
			close(started)
			return tx.QueryRowContext(ctx, `SELECT count(*) FROM workspaces WHERE name = 'held by db1'`).Scan(&seen)
		})
		db2Done <- result{seen, err}
	}()

	// Negative check only: db2 must still be waiting for the lock.
	select {
	case <-started:
		t.Fatal("db2's transaction started while db1 held the write lock")
	case r := <-db2Done:
		t.Fatalf("db2's Update returned while db1 held the write lock: %v", r.err)
	case <-time.After(200 * time.Millisecond):
	}

	release()
	if err := <-db1Done; err != nil {
		t.Fatalf("db1 update: %v", err)
	}
	select {
	case r := <-db2Done:
		if r.err != nil {
			t.Fatalf("db2 update: %v", r.err)
		}
		if got, want := r.seen, 1; got != want {
			t.Fatalf("db2 saw %d of db1's rows, want %d", got, want)
		}
	case <-time.After(BusyTimeout):
		t.Fatal("db2 never got the write lock after db1 committed")
	}
}

// gateWaiters makes db report each writer that waits at the write gate;
// set it before any writer starts.
func gateWaiters(db *DB) <-chan struct{} {
	ch := make(chan struct{}, 16)
	db.gateWait = func() { ch <- struct{}{} }
	return ch
}

// mustSeeWaiter returns once a writer waits at the gate, or fails the test.
func mustSeeWaiter(t *testing.T, waiting <-chan struct{}) {
	t.Helper()
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the second writer never waited at the write gate")
	}
}

// TestUpdate_ClockIsReadAfterTheLock: a writer that waits for the lock
// (observed waiting at the write gate, as in production: one DB, many
// goroutines) stamps its transaction with the clock after the wait.
func TestUpdate_ClockIsReadAfterTheLock(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	ctx := context.Background()
	waiting := gateWaiters(db)

	early := time.Date(2025, time.March, 10, 10, 59, 59, 900_000_000, time.UTC)
	late := time.Date(2025, time.March, 10, 11, 0, 0, 100_000_000, time.UTC)
	clock.Set(early)

	release, holderDone, holderNow := holdWriteLock(t, db, "clock holder")
	if got := <-holderNow; !got.Equal(early) {
		t.Fatalf("holder tx.Now=%v, want %v", got, early)
	}

	started := make(chan struct{})
	waiterNow := make(chan time.Time, 1)
	waiterDone := make(chan error, 1)
	go func() {
		waiterDone <- db.Update(ctx, func(tx *Tx) error {
			close(started)
			waiterNow <- tx.Now
			return nil
		})
	}()
	mustSeeWaiter(t, waiting)
	select {
	case <-started:
		t.Fatal("the second transaction started while the first held the lock")
	default:
	}

	clock.Set(late)
	release()
	if err := <-holderDone; err != nil {
		t.Fatalf("holder update: %v", err)
	}
	if err := <-waiterDone; err != nil {
		t.Fatalf("waiter update: %v", err)
	}
	got := <-waiterNow
	if !got.Equal(late) {
		t.Fatalf("waiter tx.Now=%v, want %v (read after the lock)", got, late)
	}
	if got, want := got.Hour(), 11; got != want {
		t.Fatalf("waiter tx.Now hour=%d, want %d", got, want)
	}
}

// rawEntry inserts an entry row in any state, bypassing the store's
// operations but counted like every new entry (insertEntry).
func rawEntry(ctx context.Context, tx *Tx, programID, noticeID, state string) (string, error) {
	id := uuid.NewString()
	err := insertEntry(ctx, tx, newEntry{ID: id, ProgramID: programID, Email: id[:8] + "@example.test",
		NoticeID: noticeID, State: state, CreatedAt: Millis(tx.Now)})
	return id, err
}

// rawInvitation inserts an invitation row in the given state directly.
func rawInvitation(ctx context.Context, tx *Tx, programID, entryID, state string) (string, error) {
	id := uuid.NewString()
	token := make([]byte, 32)
	rand.Read(token)
	var terminal any
	if state != "issued" {
		terminal = Millis(tx.Now)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO invitations (id, program_id, entry_id, code_digest, state, issued_at, expires_at, terminal_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, id, programID, entryID, token, state, Millis(tx.Now),
		Millis(tx.Now.Add(24*time.Hour)), terminal)
	return id, err
}

// mustRawEntry inserts a raw entry and fails the test on error.
func mustRawEntry(t *testing.T, db *DB, programID, noticeID, state string) string {
	t.Helper()
	var id string
	mustUpdate(t, db, func(tx *Tx) error {
		var err error
		id, err = rawEntry(context.Background(), tx, programID, noticeID, state)
		return err
	})
	return id
}

// execRaw runs one statement in its own write transaction and returns its error.
func execRaw(db *DB, query string, args ...any) error {
	ctx := context.Background()
	return db.Update(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	})
}

// postgresSchemaErrors is, for each SQLite error a schema test expects,
// the SQLSTATE PostgreSQL answers the same statement with.
var postgresSchemaErrors = map[string]string{
	"CHECK constraint failed":                   pgCheckViolation,
	"UNIQUE constraint failed":                  pgUniqueViolation,
	"FOREIGN KEY constraint failed":             pgForeignKeyViolation,
	"cannot store TEXT value in INTEGER column": "22P02", // invalid text representation
}

// wantSchemaError fails the test unless err is the schema's refusal
// named by fragment (SQLite's words), or on PostgreSQL its SQLSTATE.
func wantSchemaError(t *testing.T, what string, err error, fragment string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want a constraint error", what)
		return
	}
	if testEngine == PostgreSQL {
		if want, ok := postgresSchemaErrors[fragment]; !ok || pgCode(err) != want {
			t.Errorf("%s: err=%v, want SQLSTATE %s (%s)", what, err, want, fragment)
		}
		return
	}
	if !strings.Contains(err.Error(), fragment) {
		t.Errorf("%s: err=%v, want it to mention %q", what, err, fragment)
	}
}

func TestSchema_ForeignKeysAreEnforced(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "fk-program")
	n := mustNotice(t, db, a, p.ID)

	err := db.Update(ctx, func(tx *Tx) error {
		_, err := rawEntry(ctx, tx, uuid.NewString(), n.ID, "waiting")
		return err
	})
	wantSchemaError(t, "entry with unknown program", err, "FOREIGN KEY constraint failed")
	err = db.Update(ctx, func(tx *Tx) error {
		_, err := rawEntry(ctx, tx, p.ID, uuid.NewString(), "waiting")
		return err
	})
	wantSchemaError(t, "entry with unknown notice", err, "FOREIGN KEY constraint failed")

	mustRawEntry(t, db, p.ID, n.ID, "waiting") // the same insert with real parents works
	if got, want := mustCount(t, db, `SELECT count(*) FROM entries`), 1; got != want {
		t.Fatalf("entries=%d, want %d", got, want)
	}
}

func TestSchema_StrictTablesRejectWrongTypes(t *testing.T) {
	db := MustOpenDB(t)
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "strict-program")
	n := mustNotice(t, db, a, p.ID)

	err := execRaw(db, `INSERT INTO entries (id, program_id, email_key, notice_id, permission_at, state, created_at, updated_at)
		VALUES (?, ?, 'a@example.test', ?, 'yesterday', 'waiting', 1, 1)`, uuid.NewString(), p.ID, n.ID)
	wantSchemaError(t, "text in entries.permission_at", err, "cannot store TEXT value in INTEGER column")
	err = execRaw(db, `UPDATE programs SET queue_cap = 'many' WHERE id = ?`, p.ID)
	wantSchemaError(t, "text in programs.queue_cap", err, "cannot store TEXT value in INTEGER column")
}

func TestSchema_ProgramChecksSlugAndCaps(t *testing.T) {
	db := MustOpenDB(t)
	_, w := mustOwner(t, db)
	insert := func(slug string, queueCap, hourlyCap, seatCap, days int) error {
		return execRaw(db, `INSERT INTO programs (id, workspace_id, public_slug, purpose, queue_cap, hourly_cap, seat_cap,
			max_invitation_days, created_at, updated_at) VALUES (?, ?, ?, 'A purpose.', ?, ?, ?, ?, 1, 1)`,
			uuid.NewString(), w.ID, slug, queueCap, hourlyCap, seatCap, days)
	}
	for _, tc := range []struct {
		name                      string
		slug                      string
		queue, hourly, seat, days int
	}{
		{"uppercase slug", "Bad-Slug", 1, 1, 1, 14},
		{"slug with space", "bad slug", 1, 1, 1, 14},
		{"slug with underscore", "bad_slug", 1, 1, 1, 14},
		{"short slug", "ab", 1, 1, 1, 14},
		{"long slug", strings.Repeat("a", 61), 1, 1, 1, 14},
		{"zero queue cap", "zero-queue", 0, 1, 1, 14},
		{"huge queue cap", "huge-queue", 100001, 1, 1, 14},
		{"zero hourly cap", "zero-hourly", 1, 0, 1, 14},
		{"huge hourly cap", "huge-hourly", 1, 100001, 1, 14},
		{"zero seat cap", "zero-seat", 1, 1, 0, 14},
		{"huge seat cap", "huge-seat", 1, 1, 100001, 14},
		{"zero invitation days", "zero-days", 1, 1, 1, 0},
		{"long invitation days", "long-days", 1, 1, 1, 31},
	} {
		wantSchemaError(t, tc.name, insert(tc.slug, tc.queue, tc.hourly, tc.seat, tc.days), "CHECK constraint failed")
	}
	if n := mustCount(t, db, `SELECT count(*) FROM programs`); n != 0 {
		t.Fatalf("programs=%d after rejected inserts, want 0", n)
	}
	// The bounds themselves are allowed.
	if err := insert("abc", 1, 1, 1, 1); err != nil {
		t.Fatalf("lower bounds: %v", err)
	}
	if err := insert(strings.Repeat("z", 60), 100000, 100000, 100000, 30); err != nil {
		t.Fatalf("upper bounds: %v", err)
	}
}

func TestSchema_OneIssuedInvitationPerEntry(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "one-invite")
	n := mustNotice(t, db, a, p.ID)
	first := mustRawEntry(t, db, p.ID, n.ID, "invited")
	second := mustRawEntry(t, db, p.ID, n.ID, "invited")

	invite := func(entryID, state string) error {
		return db.Update(ctx, func(tx *Tx) error {
			_, err := rawInvitation(ctx, tx, p.ID, entryID, state)
			return err
		})
	}
	if err := invite(first, "revoked"); err != nil {
		t.Fatalf("revoked invitation: %v", err)
	}
	if err := invite(first, "issued"); err != nil {
		t.Fatalf("issued invitation beside a revoked one: %v", err)
	}
	err := invite(first, "issued")
	wantSchemaError(t, "second issued invitation", err, "UNIQUE constraint failed")
	if got, want := ErrorCode(err), ECONFLICT; got != want {
		t.Errorf("ErrorCode(second issued)=%q, want %q", got, want)
	}
	if err := invite(second, "issued"); err != nil {
		t.Fatalf("issued invitation for another entry: %v", err)
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM invitations WHERE entry_id = ? AND state = 'issued'`, first), 1; got != want {
		t.Fatalf("issued invitations for one entry=%d, want %d", got, want)
	}
}

func TestSchema_GrantActiveMatchesRevokedAt(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "grant-check")
	n := mustNotice(t, db, a, p.ID)
	entry := mustRawEntry(t, db, p.ID, n.ID, "active")
	var invitation string
	mustUpdate(t, db, func(tx *Tx) error {
		var err error
		invitation, err = rawInvitation(ctx, tx, p.ID, entry, "redeemed")
		return err
	})
	grant := func(active int, revokedAt any) error {
		return execRaw(db, `INSERT INTO grants (id, program_id, entry_id, invitation_id, user_id, active, granted_at, revoked_at)
			VALUES (?, ?, ?, ?, 'user_recipient', ?, 1, ?)`, uuid.NewString(), p.ID, entry, invitation, active, revokedAt)
	}
	wantSchemaError(t, "active grant with revoked_at", grant(1, 5), "CHECK constraint failed")
	wantSchemaError(t, "revoked grant without revoked_at", grant(0, nil), "CHECK constraint failed")
	if err := grant(1, nil); err != nil {
		t.Fatalf("active grant: %v", err)
	}
	err := execRaw(db, `UPDATE grants SET active = 0 WHERE entry_id = ?`, entry)
	wantSchemaError(t, "revoking without revoked_at", err, "CHECK constraint failed")
	if err := execRaw(db, `UPDATE grants SET active = 0, revoked_at = 7 WHERE entry_id = ?`, entry); err != nil {
		t.Fatalf("revoke grant: %v", err)
	}
}

func TestSchema_AuditDetailsMustBeSmallJSONObjects(t *testing.T) {
	db := MustOpenDB(t)
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "audit-details")
	insert := func(details string) error {
		return execRaw(db, `INSERT INTO audit_events (program_id, actor_kind, event_type, event_at, details)
			VALUES (?, 'system', 'program_changed', 1, ?)`, p.ID, details)
	}
	big := `{"k":"` + strings.Repeat("x", 510) + `"}` // 518 bytes
	for _, tc := range []struct{ name, details string }{
		{"array", `[]`},
		{"string", `"text"`},
		{"number", `42`},
		{"invalid JSON", `{"a":`},
		{"over 512 bytes", big},
	} {
		wantSchemaError(t, tc.name, insert(tc.details), "CHECK constraint failed")
	}
	fits := `{"k":"` + strings.Repeat("x", 504) + `"}` // exactly 512 bytes
	if err := insert(fits); err != nil {
		t.Fatalf("512-byte object: %v", err)
	}
	if err := insert(`{"revision":2}`); err != nil {
		t.Fatalf("small object: %v", err)
	}
}

// Occupancy counts every entry not withdrawn: a new entry when its
// transaction commits (insertEntry), a change of state by the triggers.
func TestOccupancy_CountsEveryEntryNotWithdrawn(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "occupancy")
	n := mustNotice(t, db, a, p.ID)
	occupied := func() int {
		t.Helper()
		return mustCount(t, db, `SELECT occupied FROM programs WHERE id = ?`, p.ID)
	}
	setState := func(entryID, state string) {
		t.Helper()
		mustUpdate(t, db, func(tx *Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE entries SET state = ? WHERE id = ?`, state, entryID)
			return err
		})
	}
	var waiting, declined string
	steps := []struct {
		name string
		do   func()
		want int
	}{
		{"start", func() {}, 0},
		{"insert waiting", func() { waiting = mustRawEntry(t, db, p.ID, n.ID, "waiting") }, 1},
		{"insert withdrawn", func() { mustRawEntry(t, db, p.ID, n.ID, "withdrawn") }, 1},
		{"insert declined", func() { declined = mustRawEntry(t, db, p.ID, n.ID, "declined") }, 2},
		{"waiting to selected", func() { setState(waiting, "selected") }, 2},
		{"selected to withdrawn", func() { setState(waiting, "withdrawn") }, 1},
		{"withdrawn to withdrawn", func() { setState(waiting, "withdrawn") }, 1},
		{"withdrawn to waiting", func() { setState(waiting, "waiting") }, 2},
		{"declined to withdrawn", func() { setState(declined, "withdrawn") }, 1},
	}
	for _, s := range steps {
		s.do()
		if got := occupied(); got != s.want {
			t.Fatalf("after %s: occupied=%d, want %d", s.name, got, s.want)
		}
	}
	got, err := db.ProgramByID(ctx, a, p.ID)
	if err != nil {
		t.Fatalf("program: %v", err)
	}
	if got, want := got.Occupied, 1; got != want {
		t.Fatalf("Program.Occupied=%d, want %d", got, want)
	}
}

func TestErrorCode_MapsConstraintsDomainAndOtherErrors(t *testing.T) {
	db := MustOpenDB(t)
	_, w := mustOwner(t, db)
	constraint := execRaw(db, `INSERT INTO workspaces (id, name, active, created_at) VALUES (?, ?, 1, 1)`,
		uuid.NewString(), w.Name)
	if constraint == nil {
		t.Fatal("duplicate workspace name was accepted")
	}
	trigger := execRaw(db, `INSERT INTO workspace_events SELECT * FROM workspace_events LIMIT 1`)
	if trigger == nil {
		t.Fatal("a copy of a workspace event was accepted")
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"constraint failure", constraint, ECONFLICT},
		{"wrapped constraint failure", fmt.Errorf("insert workspace: %w", constraint), ECONFLICT},
		{"history trigger", trigger, ECONFLICT},
		{"text that only reads like a constraint failure", errors.New("UNIQUE constraint failed: workspaces.name"), EINTERNAL},
		{"domain error", Errorf(ENOTFOUND, "Not found."), ENOTFOUND},
		{"wrapped domain error", fmt.Errorf("op: %w", Errorf(ERATELIMITED, "Slow down.")), ERATELIMITED},
		{"plain error", errors.New("disk on fire"), EINTERNAL},
		{"no rows", sql.ErrNoRows, EINTERNAL},
	} {
		if got := ErrorCode(tc.err); got != tc.want {
			t.Errorf("ErrorCode(%s)=%q, want %q", tc.name, got, tc.want)
		}
	}
	if got := ErrorMessage(errors.New("secret detail")); strings.Contains(got, "secret") {
		t.Errorf("ErrorMessage leaked an internal error: %q", got)
	}
	if got, want := ErrorMessage(Errorf(EINVALID, "Bad slug.")), "Bad slug."; got != want {
		t.Errorf("ErrorMessage(domain)=%q, want %q", got, want)
	}
}

func TestOpen_RefusesABindingKeyOfTheWrongLengthBeforeTouchingTheDisk(t *testing.T) {
	for _, key := range [][]byte{nil, make([]byte, BindingKeySize-1), make([]byte, BindingKeySize+1)} {
		path := filepath.Join(t.TempDir(), "data", "admit.db")
		db, err := Open(context.Background(), path, Options{BindingKey: key})
		if err == nil {
			db.Close()
			t.Fatalf("Open accepted a %d-byte binding key", len(key))
		}
		if !strings.Contains(err.Error(), "binding key") {
			t.Errorf("Open with a %d-byte key: err=%v, want one naming the binding key", len(key), err)
		}
		if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Open with a %d-byte key created the data dir (stat: %v)", len(key), err)
		}
	}
}

// The writer's page cache holds a whole chunk of a retirement or sweep at a
// million entries; the readers keep SQLite's default.
// Page caches cost twice their size in resident memory under modernc's
// allocator, so no connection gets more than SQLite's default (see dsnWith).
func TestOpen_EveryConnectionKeepsTheDefaultPageCache(t *testing.T) {
	sqliteOnly(t, "pragmas")
	db := MustOpenDB(t)
	ctx := context.Background()
	cacheSize := func(run func(context.Context, func(*Tx) error) error) int {
		var n int
		if err := run(ctx, func(tx *Tx) error {
			return tx.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&n)
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := cacheSize(db.Update); got != -2000 {
		t.Errorf("writer cache_size = %d, want SQLite's default -2000", got)
	}
	if got := cacheSize(db.View); got != -2000 {
		t.Errorf("reader cache_size = %d, want SQLite's default -2000", got)
	}
}
