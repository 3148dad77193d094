package store

import (
	"context"
	"database/sql"
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
	admin, err := sql.Open("pgx", server)
	if err != nil {
		dropTemplate()
		return nil, err
	}
	u, _ := url.Parse(tmplURL)
	pgRun.server, pgRun.admin, pgRun.template = server, admin, strings.TrimPrefix(u.Path, "/")
	return func() error {
		admin.Close()
		return dropTemplate()
	}, nil
}

// pgSeq numbers the run's test databases.
var pgSeq atomic.Int64

// pgDatabase returns the URL of the PostgreSQL database standing in for
// the SQLite file at path: a copy of the migrated template made for the
// first test that asks for path, dropped when that test ends.
func pgDatabase(tb testing.TB, path string) string {
	tb.Helper()
	if u, ok := pgRun.dbs.Load(path); ok {
		return u.(string)
	}
	name := fmt.Sprintf("admit_t_%d_%d", os.Getpid(), pgSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := pgRun.admin.ExecContext(ctx, `CREATE DATABASE `+name+` TEMPLATE `+pgRun.template); err != nil {
		tb.Fatalf("create a test database from the template: %v", err)
	}
	tb.Cleanup(func() {
		pgRun.dbs.Delete(path)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := pgRun.admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			tb.Errorf("drop the test database: %v", err)
		}
	})
	u, _ := url.Parse(pgRun.server)
	u.Path = "/" + name
	pgRun.dbs.Store(path, u.String())
	return u.String()
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
