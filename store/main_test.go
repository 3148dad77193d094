package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"admit/internal/pgtest"
)

// testEngine is the engine of the current run of the package's tests:
// TestMain runs them all on SQLite, then again on PostgreSQL.
var testEngine = SQLite

// pgRun is the PostgreSQL run's server: admin is a connection to its
// server database, template a migrated database every test's database is
// copied from (CREATE DATABASE … TEMPLATE), which costs a fraction of
// migrating each.
var pgRun struct {
	server   string
	admin    *sql.DB
	template string
	// dbs maps a test's database path to the PostgreSQL database standing
	// in for it, so that two opens of one path share one database.
	dbs sync.Map // string → string (URL)
	// paths maps each open *DB to the path it was opened at.
	paths sync.Map // *DB → string
	// schema is the template's (pgSchemaOf); idle holds the names of
	// databases a test has finished with and resetDatabase found as the
	// template left them: a CREATE DATABASE costs about half a second,
	// a reset a few milliseconds.
	schema string
	mu     sync.Mutex
	idle   []string
	all    []string
}

// pgSchemaSQL lists every relation (table, index, sequence), trigger and
// function of a PostgreSQL database's schema, each with its definition.
const pgSchemaSQL = `SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'i' THEN 'index' ELSE c.relkind::text END, c.relname,
				CASE c.relkind WHEN 'i' THEN pg_get_indexdef(c.oid) ELSE (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
					FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) END
			FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace
			UNION ALL SELECT 'trigger', t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
				WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal
			UNION ALL SELECT 'function', p.proname, pg_get_functiondef(p.oid) FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
			ORDER BY 2, 1`

// pgSchemaOf is the schema of the database q reads and goose's record of
// its migrations, as one text.
func pgSchemaOf(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (string, error) {
	var b strings.Builder
	for _, query := range []string{pgSchemaSQL, `SELECT id, version_id, is_applied, tstamp::text FROM goose_db_version ORDER BY id`} {
		rows, err := q.QueryContext(ctx, query)
		if err != nil {
			return "", err
		}
		cols, _ := rows.Columns()
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return "", err
			}
			fmt.Fprintln(&b, vals)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// resetDatabase empties every table of the test database at dbURL but
// goose's, as the migrated template has them, and reports whether it is
// then as the template was: its schema and migrations unchanged. Other
// connections to it are ended first.
func resetDatabase(ctx context.Context, dbURL string) (bool, error) {
	pool, err := sql.Open("pgx", dbURL)
	if err != nil {
		return false, err
	}
	defer pool.Close()
	conn, err := pool.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
		return false, err
	}
	schema, err := pgSchemaOf(ctx, conn)
	if err != nil || schema != pgRun.schema {
		return false, err
	}
	rows, err := conn.QueryContext(ctx, `SELECT quote_ident(tablename) FROM pg_catalog.pg_tables
		WHERE schemaname = current_schema() AND tablename <> 'goose_db_version'`)
	if err != nil {
		return false, err
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return false, err
		}
		tables = append(tables, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	// The history tables' triggers refuse TRUNCATE, as they should from
	// admit; a replica session fires no trigger.
	if _, err := conn.ExecContext(ctx, `SET session_replication_role = replica`); err != nil {
		return false, err
	}
	if _, err := conn.ExecContext(ctx, `TRUNCATE `+strings.Join(tables, ", ")+` RESTART IDENTITY`); err != nil {
		return false, err
	}
	return true, nil
}

// TestMain runs the package's tests on SQLite, then, when a PostgreSQL
// server is configured (pgtest), on PostgreSQL; without one it says the
// second run was skipped, and under CI fails.
func TestMain(m *testing.M) {
	fmt.Println("store: running the tests on SQLite")
	code := m.Run()
	ok, required := pgtest.Available()
	if !ok {
		if required {
			fmt.Printf("store: CI runs the tests on PostgreSQL too: set %s\n", pgtest.EnvURL)
			os.Exit(1)
		}
		fmt.Printf("store: skipped the run on PostgreSQL: set %s to run it (start a server with `.ci/postgres start`)\n", pgtest.EnvURL)
		os.Exit(code)
	}
	fmt.Println("store: running the tests on PostgreSQL")
	drop, err := startPostgresRun()
	if err != nil {
		fmt.Printf("store: prepare the PostgreSQL run: %v\n", err)
		os.Exit(1)
	}
	testEngine = PostgreSQL
	if pgCode := m.Run(); pgCode != 0 {
		code = pgCode
	}
	if err := drop(); err != nil {
		fmt.Printf("store: drop the template database: %v\n", err)
	}
	os.Exit(code)
}

// startPostgresRun creates and migrates the template database.
func startPostgresRun() (drop func() error, err error) {
	server, err := pgtest.ServerURL()
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	tmplURL, dropTemplate, err := pgtest.Create(ctx, server)
	if err != nil {
		return nil, err
	}
	db, err := OpenPostgres(ctx, tmplURL, Options{BindingKey: signupTestKey})
	if err == nil {
		err = db.Close()
	}
	if err != nil {
		dropTemplate()
		return nil, fmt.Errorf("migrate the template: %w", err)
	}
	tmpl, err := sql.Open("pgx", tmplURL)
	if err == nil {
		pgRun.schema, err = pgSchemaOf(ctx, tmpl)
		tmpl.Close()
	}
	if err != nil {
		dropTemplate()
		return nil, fmt.Errorf("read the template's schema: %w", err)
	}
	admin, err := sql.Open("pgx", server)
	if err != nil {
		dropTemplate()
		return nil, err
	}
	u, _ := url.Parse(tmplURL)
	pgRun.server, pgRun.admin, pgRun.template = server, admin, strings.TrimPrefix(u.Path, "/")
	return func() error {
		defer admin.Close()
		var errs []error
		for _, name := range pgRun.all {
			_, err := admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
			errs = append(errs, err)
		}
		return errors.Join(append(errs, dropTemplate())...)
	}, nil
}

// pgSeq numbers the run's test databases.
var pgSeq atomic.Int64

// pgDatabase returns the URL of the PostgreSQL database standing in for
// the SQLite file at path: for the first test that asks for path, a copy
// of the migrated template, or an earlier test's database reset to what
// the template holds; when that test ends it is reset or dropped.
func pgDatabase(tb testing.TB, path string) string {
	tb.Helper()
	if u, ok := pgRun.dbs.Load(path); ok {
		return u.(string)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pgRun.mu.Lock()
	var name string
	if n := len(pgRun.idle); n > 0 {
		name, pgRun.idle = pgRun.idle[n-1], pgRun.idle[:n-1]
	}
	pgRun.mu.Unlock()
	if name == "" {
		name = fmt.Sprintf("admit_t_%d_%d", os.Getpid(), pgSeq.Add(1))
		if _, err := pgRun.admin.ExecContext(ctx, `CREATE DATABASE `+name+` TEMPLATE `+pgRun.template); err != nil {
			tb.Fatalf("create a test database from the template: %v", err)
		}
		pgRun.mu.Lock()
		pgRun.all = append(pgRun.all, name)
		pgRun.mu.Unlock()
	}
	u, _ := url.Parse(pgRun.server)
	u.Path = "/" + name
	dbURL := u.String()
	tb.Cleanup(func() {
		pgRun.dbs.Delete(path)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// A database the test left as the template was is emptied for
		// the next test; any other is dropped.
		if clean, err := resetDatabase(ctx, dbURL); err == nil && clean {
			pgRun.mu.Lock()
			pgRun.idle = append(pgRun.idle, name)
			pgRun.mu.Unlock()
			return
		}
		if _, err := pgRun.admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			tb.Errorf("drop the test database: %v", err)
		}
	})
	pgRun.dbs.Store(path, dbURL)
	return dbURL
}

// openTestDB opens the test database at path on the run's engine: the
// SQLite file, or the PostgreSQL database standing in for it.
func openTestDB(tb testing.TB, path string, opt Options) (*DB, error) {
	tb.Helper()
	if testEngine == PostgreSQL {
		db, err := OpenPostgres(context.Background(), pgDatabase(tb, path), opt)
		if err == nil {
			pgRun.paths.Store(db, path)
		}
		return db, err
	}
	return Open(context.Background(), path, opt)
}

// testPath is the path db was opened at: db.Path on SQLite, and on
// PostgreSQL the path its database stands in for, so that a second open of
// it reaches the same database.
func testPath(db *DB) string {
	if p, ok := pgRun.paths.Load(db); ok {
		return p.(string)
	}
	return db.Path
}

// jsonField is SQL for the text of a top-level field of an audit event's
// details, on the run's engine.
func jsonField(name string) string {
	return testEngine.pick(`json_extract(details, '$.`+name+`')`, `(details::json->>'`+name+`')`)
}

// sqliteOnly skips a test about SQLite's files or behaviour on the
// PostgreSQL run, saying why.
func sqliteOnly(tb testing.TB, why string) {
	tb.Helper()
	if testEngine != SQLite {
		tb.Skip("SQLite only: " + why)
	}
}

// postgresOnly skips a test of PostgreSQL's behaviour on the SQLite run.
func postgresOnly(tb testing.TB) {
	tb.Helper()
	if testEngine != PostgreSQL {
		tb.Skip("PostgreSQL only: runs in the PostgreSQL run")
	}
}
