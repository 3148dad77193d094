// Package store holds admit's domain types and every operation on the
// database: a SQLite file (Open) or a PostgreSQL database (OpenPostgres).
// Each exported operation is one transaction.
package store

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"admit/migrations"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// BusyTimeout is how long a writer waits for the write lock before failing.
const BusyTimeout = 10 * time.Second

// DB is admit's database: one writer connection that serializes every write
// transaction with BEGIN IMMEDIATE (on PostgreSQL, an advisory lock taken
// after BEGIN), and a pool of read-only connections that read snapshots.
type DB struct {
	// Path is the SQLite database file; "" on PostgreSQL.
	Path string
	// engine is the database engine (Open or OpenPostgres).
	engine Engine
	// now is the clock (Options.Now), fixed at Open. Tx.Now is read from
	// it once, after the write lock is held.
	now func() time.Time

	// retention is the erasure policy in force (Options.Retention).
	retention Retention
	// bindingKey keys the HMAC that binds an idempotency key to its
	// request (Options.BindingKey); Open checked its length.
	bindingKey []byte

	writer *sql.DB
	reader *sql.DB
	// wstmts and rstmts hold each pool's prepared statements.
	wstmts, rstmts *stmtCache
	// wgate admits write transactions one at a time, in arrival order. The
	// writer pool's single connection serializes them anyway, but
	// database/sql hands a freed connection to a random waiter: under load
	// that left a few signups waiting many times longer than the rest.
	wgate chan struct{}
	// wslots bounds the write transactions other than signups' commits
	// that wait for the gate (Options.WriteReserve).
	wslots slots
	// gateWait, set only by tests, is called by a writer that finds the
	// gate taken, just before it waits there: proof that it waited.
	gateWait func()
	// signups gives concurrent signups one commit (group commit).
	signups *signupBatcher
	// signupsRan, set only by tests, is called in a signup batch's
	// transaction each time the signups it holds have run, before it looks
	// for late ones (signupBatcher.joinLate).
	signupsRan func()
	// lastCounterCleanup is when expired attempt counters were last
	// deleted (Unix ms); only write transactions touch it.
	lastCounterCleanup int64
	// erasures holds one signal when a committed transaction erased
	// personal data that the eraser has not yet flushed from the WAL
	// (see RunEraser); further erasures before it runs share the signal.
	erasures chan struct{}
	// retirements holds one signal when a retirement has committed that the
	// retirer has not yet started on (see RunRetirer).
	retirements chan struct{}
	// retireStepped, set only by tests, is told after each committed
	// retirement step whether it was the retirement's last.
	retireStepped func(programID string, done bool)
	// obs is told what the store does, for metrics.
	obs Observer
	// health says whether writes reach the disk, for readiness.
	health writeHealth
	// txHeld, when set (by benchmarks), is told how long each write
	// transaction's statements ran (work) and how long it held the write
	// lock in all (held: from BEGIN IMMEDIATE to the end of its commit or
	// rollback, so with the commit's fsync).
	txHeld func(work, held time.Duration)
	// retireChunk, when not zero (Options.RetireChunk), fixes the rows per
	// table of every retirement step instead of adapting them to their cost.
	retireChunk int
}

// Now reads the database's clock (Options.Now): the instant an answer is
// judged at outside a transaction, such as an invitation's displayed state.
func (db *DB) Now() time.Time { return db.now() }

// Tx is a transaction and the instant it runs at.
type Tx struct {
	*sql.Tx
	// Now is the transaction clock, read once after BEGIN IMMEDIATE returned,
	// so a lock wait across an hour boundary counts in the later hour. A
	// signup batch moves it forward, never back, for the signups that join
	// it while it runs (signupBatcher.joinLate).
	Now time.Time
	// retention is the database's retention policy, for the dates a read
	// reports (Program.EntriesErasedBy).
	retention Retention
	// engine is the database's engine, for the statements whose SQL
	// differs between engines.
	engine Engine

	// cache is the pool's statement cache; missed lists the queries this
	// transaction ran unprepared, to prepare once it has ended; stmts holds
	// this transaction's handles on cached statements.
	cache  *stmtCache
	missed []string
	stmts  map[string]*sql.Stmt
	// erased is set when the transaction erased personal data: once it
	// commits, the eraser is told to flush the old bytes from the WAL.
	erased bool
	// newEntries counts, per program, the entries this transaction
	// inserted, for the counters applyEntryCounts updates before the
	// commit (store/entry_counts.go).
	newEntries map[string]*entryCounts
	// signupPrograms keeps, per slug, the program's part of the signup
	// state that the transaction's first signup of it read
	// (readSignupState).
	signupPrograms map[string]programAdmission
	// queuedEvents are the values of the audit events left to the end of
	// the transaction (queueEvent, store/queued.go).
	queuedEvents []any
}

// BindingKeySize is the length in bytes of Options.BindingKey.
const BindingKeySize = 32

// Options are what Open needs besides the path: the store is complete when
// opened, and no operation checks its configuration again.
type Options struct {
	// BindingKey keys the HMAC that binds an idempotency key to its
	// request. It comes from the server's secrets, never from the
	// database, and must be BindingKeySize bytes: Open refuses any other.
	BindingKey []byte
	// Retention is the erasure policy; the zero value means DefaultRetention.
	Retention Retention
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// NoAutoCheckpoint turns off SQLite's automatic checkpoint on the
	// writer connection (wal_autocheckpoint=0), so that admit never copies
	// the WAL into the database file on its own: the process replicating
	// the WAL (Litestream) does, after it has read every frame. Set it
	// whenever litestream.yml names a replica. With the automatic
	// checkpoint on, a restart after a crash let admit's first commits
	// checkpoint frames Litestream had not yet read and restart the WAL
	// before Litestream resumed: every restore point from then on, until
	// the next full snapshot, was corrupt (found by the crash soak,
	// docs/RELIABILITY.md#the-crash-soak).
	NoAutoCheckpoint bool
	// Observer is told what the store does, for metrics; nil observes nothing.
	Observer Observer
	// SignupQueue bounds how many signups may wait for, or be in, a
	// commit; past it a signup is refused at once with ErrBusy. 0 means
	// DefaultSignupQueue.
	SignupQueue int
	// WriteReserve bounds how many other write transactions may wait for
	// the writer, apart from the signups; past it a write is refused at
	// once with ErrBusy. 0 means DefaultWriteReserve.
	WriteReserve int
	// RetireChunk, when not 0, fixes how many rows per table each
	// retirement step takes, so that a test can watch a retirement step by
	// step; 0 sizes each step from the last one's cost
	// (docs/PERFORMANCE.md#chunked-retirement), as admit serve does.
	RetireChunk int
	// NoMigrate opens the database without applying migrations: Open
	// refuses one that has migrations pending (SchemaBehindError). For a
	// command running beside a server, which alone migrates.
	NoMigrate bool
	// Migrated, when set, is told each migration Open applies, in order,
	// once it is committed: serve logs them (docs/DEPLOY.md, "Upgrading
	// and rolling back").
	Migrated func(Migration)
}

// newDB is the DB on engine around its writer pool w, before its schema
// is checked and its readers are opened.
func newDB(engine Engine, w *sql.DB, opt Options) *DB {
	return &DB{engine: engine, now: opt.Now, retention: opt.Retention,
		bindingKey: bytes.Clone(opt.BindingKey), writer: w, wstmts: newStmtCache(w, engine), wgate: make(chan struct{}, 1),
		wslots: newSlots(opt.WriteReserve, DefaultWriteReserve), retireChunk: max(opt.RetireChunk, 0),
		erasures: make(chan struct{}, 1), retirements: make(chan struct{}, 1), obs: observer(opt.Observer)}
}

// prepareSchema checks the schema of the database named name and, unless
// opt.NoMigrate, applies the migrations it lacks, on db's engine. rule: a
// database a newer admit migrated is never served or migrated by this one
// (docs/DEPLOY.md, "Upgrading and rolling back").
func (db *DB) prepareSchema(ctx context.Context, name string, opt Options) error {
	if err := checkSchemaOn(ctx, db.engine, db.writer, name, !opt.NoMigrate); err != nil {
		return err
	}
	if opt.NoMigrate {
		return nil
	}
	if db.engine == PostgreSQL {
		return migratePostgres(ctx, db.writer, opt.Migrated)
	}
	return migrate(ctx, db.writer, opt.Migrated)
}

// complete checks opt's binding key and fills in the defaults of the
// options left zero, for Open and OpenPostgres alike: it refuses a binding
// key of the wrong length before anything touches the database.
func (opt Options) complete() (Options, error) {
	if len(opt.BindingKey) != BindingKeySize {
		return opt, fmt.Errorf("binding key is %d bytes, want %d: refusing to start", len(opt.BindingKey), BindingKeySize)
	}
	if opt.Retention == (Retention{}) {
		opt.Retention = DefaultRetention
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return opt, nil
}

// dsn builds a modernc.org/sqlite DSN with the default Options.
func dsn(path string, readOnly bool) string { return dsnWith(path, readOnly, Options{}) }

// Every connection keeps SQLite's default page cache (2,000 KiB). In
// modernc.org/sqlite each cached page is one allocation of a little over
// 4 KiB, which its allocator serves from an 8 KiB slot, so a cache costs
// about twice its size in resident memory. A 32 MiB cache for the writer
// made no retirement or sweep transaction shorter at a million entries
// (docs/PERFORMANCE.md#chunked-retirement), so the writer has the default too.

// dsnWith builds a modernc.org/sqlite DSN. busy_timeout comes first so that
// the other pragmas wait for a lock instead of failing.
func dsnWith(path string, readOnly bool, opt Options) string {
	q := url.Values{}
	pragmas := []string{
		fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()),
		"journal_mode(WAL)",
		"foreign_keys(1)",
		"synchronous(FULL)",
		"secure_delete(1)",
		// Statement journals and temporary b-trees (sorts) stay in
		// memory instead of a temporary file.
		"temp_store(MEMORY)",
	}
	if readOnly {
		pragmas = append(pragmas, "query_only(1)")
	} else if opt.NoAutoCheckpoint {
		pragmas = append(pragmas, "wal_autocheckpoint(0)")
	}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	if !readOnly {
		q.Set("_txlock", "immediate")
	}
	return "file:" + path + "?" + q.Encode()
}

// Open opens (creating if needed) the database at path, applies the embedded
// migrations and checks that every required pragma took effect. It refuses a
// database with migrations this binary does not embed (SchemaTooNewError). The options
// hold from the first statement on: migrations run under them too. It
// refuses a binding key of the wrong length before touching the disk.
func Open(ctx context.Context, path string, opt Options) (*DB, error) {
	opt, err := opt.complete()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	w, err := sql.Open("sqlite", dsnWith(path, false, opt))
	if err != nil {
		return nil, fmt.Errorf("open writer: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	db := newDB(SQLite, w, opt)
	db.Path = path
	if err := checkPragmas(ctx, w, false); err != nil {
		w.Close()
		return nil, err
	}
	if opt.NoAutoCheckpoint {
		var pages int
		if err := w.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&pages); err != nil || pages != 0 {
			w.Close()
			return nil, fmt.Errorf("database pragma wal_autocheckpoint is %d (%v), want 0: refusing to start", pages, err)
		}
	}
	if err := db.prepareSchema(ctx, path, opt); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open readers: %w", err)
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	db.reader = r
	db.rstmts = newStmtCache(r, SQLite)
	if err := checkPragmas(ctx, r, true); err != nil {
		db.Close()
		return nil, err
	}
	db.signups = startSignupBatcher(db, opt.SignupQueue)
	db.keepReserve()
	return db, nil
}

// checkPragmas reads back the pragmas set in the DSN: a typo there is silent,
// and running without WAL, foreign keys or FULL sync breaks admit's promises.
func checkPragmas(ctx context.Context, pool *sql.DB, readOnly bool) error {
	want := map[string]string{
		"journal_mode":  "wal",
		"foreign_keys":  "1",
		"synchronous":   "2", // FULL
		"secure_delete": "1",
		"temp_store":    "2", // MEMORY
		"busy_timeout":  fmt.Sprint(BusyTimeout.Milliseconds()),
	}
	if readOnly {
		want["query_only"] = "1"
	}
	for name, v := range want {
		var got string
		if err := pool.QueryRowContext(ctx, "PRAGMA "+name).Scan(&got); err != nil {
			return fmt.Errorf("read pragma %s: %w", name, err)
		}
		if !strings.EqualFold(got, v) {
			return fmt.Errorf("database pragma %s is %q, want %q: refusing to start", name, got, v)
		}
	}
	return nil
}

// migrate applies the pending migrations and tells applied (when not nil)
// each one that was applied.
func migrate(ctx context.Context, w *sql.DB, applied func(Migration)) error {
	p, err := goose.NewProvider(goose.DialectSQLite3, w, migrations.FS)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	return runMigrations(ctx, p, applied)
}

// runMigrations applies p's pending migrations and tells applied (when
// not nil) each one that was applied.
func runMigrations(ctx context.Context, p *goose.Provider, applied func(Migration)) error {
	res, err := p.Up(ctx)
	if partial := new(goose.PartialError); errors.As(err, &partial) {
		res = partial.Applied // committed before the one that failed
	}
	if applied != nil {
		for _, r := range res {
			if r.Error == nil && r.Source != nil {
				applied(Migration{Version: r.Source.Version, Name: path.Base(r.Source.Path)})
			}
		}
	}
	if err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}

// Close closes both pools.
func (db *DB) Close() error {
	db.signups.stop() // after its current batch
	for _, c := range []*stmtCache{db.rstmts, db.wstmts} {
		if c != nil {
			c.close()
		}
	}
	var errs []error
	if db.reader != nil {
		errs = append(errs, db.reader.Close())
	}
	if db.writer != nil {
		errs = append(errs, db.writer.Close())
	}
	return errors.Join(errs...)
}

// Update runs fn in a write transaction. BEGIN IMMEDIATE takes the database
// write lock first; Tx.Now is read after it is held. fn's error rolls back.
// When Options.WriteReserve writes already wait for the writer, it returns
// ErrBusy at once and runs nothing.
func (db *DB) Update(ctx context.Context, fn func(*Tx) error) error {
	return db.update(ctx, true, fn)
}

// update is Update; reserved says whether the write takes a slot of the
// reserve (the signups' commits are bounded by their own queue instead).
//
// On PostgreSQL a transaction the server aborted for a reason a new attempt
// removes (retryable) runs again from the start, with a fresh Tx, up to
// maxWriteAttempts times in all; the write keeps its turn at the gate
// meanwhile.
func (db *DB) update(ctx context.Context, reserved bool, fn func(*Tx) error) error {
	if reserved {
		if !db.wslots.take() {
			return ErrBusy
		}
		defer db.wslots.give()
	}
	asked := time.Now()
	select {
	case db.wgate <- struct{}{}:
	default:
		if db.gateWait != nil {
			db.gateWait()
		}
		select {
		case db.wgate <- struct{}{}: // blocked senders are admitted first in, first out
		case <-ctx.Done():
			return fmt.Errorf("begin immediate: %w", ctx.Err())
		}
	}
	defer func() { <-db.wgate }()
	for attempt := 1; ; attempt++ {
		again, err := db.attempt(ctx, asked, fn)
		if !again || attempt == maxWriteAttempts {
			return err
		}
		if serr := sleepCtx(ctx, retryWait(attempt)); serr != nil {
			return err
		}
		asked = time.Now()
	}
}

// attempt runs fn once in a write transaction of its own, for update, and
// reports whether a failure may be retried.
func (db *DB) attempt(ctx context.Context, asked time.Time, fn func(*Tx) error) (again bool, err error) {
	sqlTx, err := db.writer.BeginTx(ctx, nil)
	if err == nil && db.engine == PostgreSQL {
		// rule (docs/ARCHITECTURE.md#one-writer-on-postgresql): every
		// write transaction, from every server, holds this one lock from
		// here to its end, so writes are serialised as on SQLite, where
		// BEGIN IMMEDIATE takes the database's write lock.
		if _, err = sqlTx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, writeLockKey); err != nil {
			sqlTx.Rollback()
		}
	}
	if err != nil {
		db.health.noteWrite(err)
		return retryable(db.engine, err, false), noSpace(fmt.Errorf("begin immediate: %w", err))
	}
	began := time.Now()
	db.obs.WriteLockWait(began.Sub(asked))
	tx := &Tx{Tx: sqlTx, Now: db.now().UTC(), cache: db.wstmts, retention: db.retention, engine: db.engine}
	var work time.Duration
	committing := false
	err = func() error {
		defer sqlTx.Rollback()
		err := fn(tx)
		if err == nil {
			err = tx.writeQueued(ctx)
		}
		if err == nil {
			err = tx.applyEntryCounts(ctx)
		}
		work = time.Since(began)
		if err != nil {
			return err
		}
		committing = true
		err = sqlTx.Commit()
		db.obs.WriteCommit(time.Since(began) - work)
		return err
	}()
	again = retryable(db.engine, err, committing)
	if err == nil && db.health.failing() {
		// rule: a commit that wrote nothing (a replay, a refusal) proves
		// nothing about the disk; while writes fail, only a write that
		// reaches the WAL says they succeed again.
		db.health.noteWrite(db.probeHeld())
	} else if !again {
		db.health.noteWrite(err)
	}
	err = noSpace(err)
	held := time.Since(began)
	db.obs.WriteLockHeld(held)
	if db.txHeld != nil {
		db.txHeld(work, held)
	}
	if err == nil && tx.erased {
		db.noteErasure()
	}
	// The writer's one connection is free again: prepare what was missed.
	if len(tx.missed) > 0 {
		db.wstmts.prepare(ctx, tx.missed)
	}
	return again, err
}

// View runs fn in a read-only transaction on a consistent snapshot: on
// PostgreSQL, a REPEATABLE READ transaction, whose every statement reads
// the snapshot its first one took.
func (db *DB) View(ctx context.Context, fn func(*Tx) error) error {
	opts := &sql.TxOptions{ReadOnly: true}
	if db.engine == PostgreSQL {
		opts.Isolation = sql.LevelRepeatableRead
	}
	sqlTx, err := db.reader.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	tx := &Tx{Tx: sqlTx, Now: db.now().UTC(), cache: db.rstmts, retention: db.retention, engine: db.engine}
	err = func() error {
		defer sqlTx.Rollback()
		return fn(tx)
	}()
	if len(tx.missed) > 0 {
		db.rstmts.prepare(ctx, tx.missed)
	}
	return err
}

// readRow runs a read of one statement on the reader pool outside a
// transaction: a single statement reads one consistent snapshot by itself,
// and skipping BEGIN and ROLLBACK halves the cost of a short lookup made on
// every page. Reads of more than one statement go through View.
func (db *DB) readRow(ctx context.Context, query string, args ...any) *sql.Row {
	args = engineArgs(db.engine, args)
	s, known := db.rstmts.lookup(query)
	if !known {
		db.rstmts.prepare(ctx, []string{query}) // no reader connection is held here
		s, _ = db.rstmts.lookup(query)
	}
	if s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return db.reader.QueryRowContext(ctx, db.rstmts.text(query), args...)
}

// Ping checks that both pools answer.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.writer.PingContext(ctx); err != nil {
		return err
	}
	return db.reader.PingContext(ctx)
}

// Millis converts an instant to the stored form: Unix milliseconds UTC.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis converts a stored instant back to UTC time.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// checkpointBusyTimeout is how long Checkpoint waits for readers to leave
// the WAL. It holds the writer's turn meanwhile, so it gives up early
// rather than stall signups behind a long reader; the eraser retries.
const checkpointBusyTimeout = 100 * time.Millisecond

// Checkpoint copies the WAL into the database file and truncates the WAL, so
// erased bytes (zeroed by secure_delete) leave no copy in either file. It
// waits its turn behind the writers already queued, like a write, and fails
// if a reader keeps the WAL busy for longer than checkpointBusyTimeout. Not
// while Litestream replicates the database: checkpoint through it then
// (backup.Replicator.Checkpoint).
//
// On PostgreSQL it does nothing: the server manages its own log.
func (db *DB) Checkpoint(ctx context.Context) error {
	if db.engine == PostgreSQL {
		return nil
	}
	select {
	case db.wgate <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("checkpoint: %w", ctx.Err())
	}
	defer func() { <-db.wgate }()
	conn, err := db.writer.Conn(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", checkpointBusyTimeout.Milliseconds())); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	var busy, logFrames, checkpointed int
	err = conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &checkpointed)
	// The connection is the writer's: restore its busy timeout whatever
	// happened, or close it so the pool opens a fresh one from the DSN.
	if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", BusyTimeout.Milliseconds())); rerr != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		err = errors.Join(err, fmt.Errorf("restore busy timeout: %w", rerr))
	}
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if busy != 0 {
		return errors.New("checkpoint: a reader kept the WAL busy")
	}
	return nil
}
