package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"admit/migrations"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib" // also registers the "pgx" driver
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Engine names the database engine a DB runs on.
type Engine string

const (
	// SQLite is a database file opened with Open.
	SQLite Engine = "sqlite"
	// PostgreSQL is a server database opened with OpenPostgres.
	PostgreSQL Engine = "postgres"
)

// Engine reports which engine the database runs on.
func (db *DB) Engine() Engine { return db.engine }

// Engine reports which engine the transaction runs on, for the few
// statements whose SQL differs between the two.
func (tx *Tx) Engine() Engine { return tx.engine }

// pick returns the SQL written for the engine: sqlite's on SQLite,
// postgres's on PostgreSQL.
func (e Engine) pick(sqlite, postgres string) string {
	if e == PostgreSQL {
		return postgres
	}
	return sqlite
}

// writeLockKey is the PostgreSQL advisory lock every write transaction
// takes right after BEGIN (docs/ARCHITECTURE.md#one-writer-on-postgresql):
// the ASCII of "admitwrt". It differs from goose's migration lock.
const writeLockKey int64 = 0x61646d6974777274

// maxWriteAttempts bounds how many times a write transaction runs when
// PostgreSQL aborts it for a reason that a new attempt removes (a
// serialisation failure, a deadlock, a connection lost before the commit).
const maxWriteAttempts = 5

// OpenPostgres opens the PostgreSQL database at url (a postgres:// URL or
// a key=value connection string), applies the embedded PostgreSQL
// migrations under goose's session lock, so that servers starting together
// migrate once, and refuses a database migrated by a newer admit, as Open
// does. Options mean what they mean for Open; NoAutoCheckpoint has no
// effect. Every write transaction, from every server on the database,
// holds one advisory lock from its BEGIN to its end: writes are serialised
// as on SQLite.
func OpenPostgres(ctx context.Context, dbURL string, opt Options) (*DB, error) {
	opt, err := opt.complete()
	if err != nil {
		return nil, err
	}
	name := describePostgres(dbURL)
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("open %s: the address does not parse", name)
	}
	// The writer waits at most BusyTimeout for a lock, the write lock
	// among them, as SQLite's busy_timeout bounds BEGIN IMMEDIATE.
	cfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(BusyTimeout.Milliseconds(), 10)
	w := stdlib.OpenDB(*cfg)
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("connect to %s: %w", name, err)
	}
	db := newDB(PostgreSQL, w, opt)
	if err := db.prepareSchema(ctx, name, opt); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sql.Open("pgx", dbURL)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open readers: %w", err)
	}
	r.SetMaxOpenConns(8)
	r.SetMaxIdleConns(8)
	db.reader = r
	db.rstmts = newStmtCache(r, PostgreSQL)
	if err := r.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to %s: %w", name, err)
	}
	db.signups = startSignupBatcher(db, opt.SignupQueue)
	return db, nil
}

// describePostgres names a PostgreSQL database for messages: its host,
// port and database name, never its user or password.
func describePostgres(dbURL string) string {
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		return "the PostgreSQL database (unreadable address)"
	}
	return fmt.Sprintf("postgres://%s/%s", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), cfg.Database)
}

// migratePostgres applies the pending PostgreSQL migrations, holding
// goose's session-level advisory lock so that a second server starting at
// the same moment waits and then finds nothing to do.
func migratePostgres(ctx context.Context, w *sql.DB, applied func(Migration)) error {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 600))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, w, migrations.Postgres, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	return runMigrations(ctx, p, applied)
}

// ReadSchemaPostgres reads which migrations the PostgreSQL database at
// url has, without migrating or locking anything.
func ReadSchemaPostgres(ctx context.Context, dbURL string) (*Schema, error) {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return readSchemaOn(ctx, PostgreSQL, db)
}

// rebound caches each query text's PostgreSQL form.
var rebound sync.Map // string → string

// rebind returns query with its ? placeholders numbered $1, $2, … for
// PostgreSQL. The store writes every query with ?; this is the one place
// they are rewritten. ?NNN becomes $NNN. A ? inside a string literal, a quoted identifier or
// a comment is left alone.
func rebind(query string) string {
	if q, ok := rebound.Load(query); ok {
		return q.(string)
	}
	if !strings.Contains(query, "?") {
		rebound.Store(query, query)
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(query) {
				if query[j] == c {
					if j+1 < len(query) && query[j+1] == c { // a doubled quote
						j += 2
						continue
					}
					break
				}
				j++
			}
			b.WriteString(query[i:min(j+1, len(query))])
			i = j
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				j = len(query) - i - 1
			}
			b.WriteString(query[i : i+j+1])
			i += j
		case c == '?':
			// ?NNN names parameter NNN, as in SQLite; a bare ? is the
			// one after the highest named so far.
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			if j > i+1 {
				k, _ := strconv.Atoi(query[i+1 : j])
				n = max(n, k)
				b.WriteString("$" + query[i+1:j])
				i = j - 1
				continue
			}
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	q := b.String()
	rebound.Store(query, q)
	return q
}

// pgError returns the PostgreSQL error err wraps, or nil.
func pgError(err error) *pgconn.PgError {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// pgCode returns the SQLSTATE of the PostgreSQL error err wraps, or "".
func pgCode(err error) string {
	if e := pgError(err); e != nil {
		return e.Code
	}
	return ""
}

// PostgreSQL error codes the store tells apart.
const (
	pgUniqueViolation      = "23505"
	pgForeignKeyViolation  = "23503"
	pgCheckViolation       = "23514"
	pgNotNullViolation     = "23502"
	pgRaiseException       = "P0001"
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"
	pgDiskFull             = "53100"
	pgReadOnlyTransaction  = "25006"
)

// isLostConnection reports an error that says the connection to the
// database server failed or was closed, as opposed to a refused statement.
// A cancelled or expired context is not one.
func isLostConnection(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if e := pgError(err); e != nil {
		// Class 08 is a connection exception; 57P01..57P03 are the server
		// shutting down or starting up.
		return strings.HasPrefix(e.Code, "08") || e.Code == "57P01" || e.Code == "57P02" || e.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.As(err, &ce) || errors.As(err, &ne) ||
		strings.Contains(err.Error(), "conn closed")
}

// retryable reports whether a write transaction that failed with err, on
// the given engine, runs again: on PostgreSQL, a serialisation failure or a
// deadlock (the server rolled it back), or a connection lost before the
// commit was sent (nothing was committed). A connection lost during the
// commit is not retried: the commit may have happened.
func retryable(engine Engine, err error, committing bool) bool {
	if engine != PostgreSQL || err == nil {
		return false
	}
	switch pgCode(err) {
	case pgSerializationFailure, pgDeadlockDetected:
		return true
	}
	if committing {
		// Only a commit that never left admit (the driver says nothing
		// was sent) is known not to have happened.
		return pgconn.SafeToRetry(err)
	}
	return isLostConnection(err)
}

// retryWait is the jittered pause before the attempt'th retry: up to
// 2^attempt milliseconds, so that two servers retrying do not collide
// again in step.
func retryWait(attempt int) time.Duration {
	limit := time.Millisecond << min(attempt, 8)
	return limit/2 + rand.N(limit/2+1)
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
