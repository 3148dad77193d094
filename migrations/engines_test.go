package migrations_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"admit/internal/pgtest"
	"admit/migrations"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// engine is one store engine's database, migrated by its own set of
// migrations, with the statements of these tests written once: `?`
// placeholders, rebound to $1..$n on PostgreSQL.
type engine struct {
	name string
	db   *sql.DB
	pg   bool
}

// newSQLite is a fresh SQLite file with foreign keys enforced, as the
// store opens it, migrated up to version (every migration when 0).
func newSQLite(t *testing.T, version int64) *engine {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admit.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	e := &engine{name: "sqlite", db: db}
	e.migrate(t, version)
	return e
}

// newPostgres is a fresh PostgreSQL database of the test's own, migrated
// up to version (every migration when 0). It skips without
// ADMIT_TEST_DATABASE_URL, and fails under CI (internal/pgtest).
func newPostgres(t *testing.T, version int64) *engine {
	t.Helper()
	db, err := sql.Open("pgx", pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := &engine{name: "postgres", db: db, pg: true}
	e.migrate(t, version)
	return e
}

// newPostgresICU is newPostgres on a database whose default collation is
// ICU's en-US, where text sorts by language rules and lower() folds every
// letter: the schema must not depend on the database's locale.
func newPostgresICU(t *testing.T, version int64) *engine {
	t.Helper()
	server := pgtest.Require(t)
	admin, err := sql.Open("pgx", server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "admit_test_icu_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(`CREATE DATABASE ` + name + ` TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`); err != nil {
		t.Fatalf("create a database with an ICU collation: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := &engine{name: "postgres-icu", db: db, pg: true}
	e.migrate(t, version)
	return e
}

// namedEngine opens a fresh database of one engine in a subtest of that
// name, so a PostgreSQL test that skips leaves the SQLite one running.
type namedEngine struct {
	name string
	open func(*testing.T, int64) *engine
}

var (
	onSQLite      = namedEngine{"sqlite", newSQLite}
	onPostgres    = namedEngine{"postgres", newPostgres}
	onPostgresICU = namedEngine{"postgres-icu", newPostgresICU}
)

func (e *engine) provider(t *testing.T, opts ...goose.ProviderOption) *goose.Provider {
	t.Helper()
	dialect, set := goose.DialectSQLite3, fs.FS(migrations.FS)
	if e.pg {
		dialect, set = goose.DialectPostgres, migrations.Postgres
	}
	p, err := goose.NewProvider(dialect, e.db, set, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *engine) migrate(t *testing.T, version int64) {
	t.Helper()
	p := e.provider(t)
	var err error
	if version == 0 {
		_, err = p.Up(context.Background())
	} else {
		_, err = p.UpTo(context.Background(), version)
	}
	if err != nil {
		t.Fatalf("%s: migrate: %v", e.name, err)
	}
}

var placeholder = regexp.MustCompile(`\?`)

// rebind turns `?` into $1..$n on PostgreSQL. The statements here hold no
// `?` inside a string literal.
func (e *engine) rebind(q string) string {
	if !e.pg {
		return q
	}
	n := 0
	return placeholder.ReplaceAllStringFunc(q, func(string) string {
		n++
		return fmt.Sprintf("$%d", n)
	})
}

func (e *engine) exec(ctx context.Context, q string, args ...any) error {
	_, err := e.db.ExecContext(ctx, e.rebind(q), args...)
	return err
}

func (e *engine) mustExec(t *testing.T, q string, args ...any) {
	t.Helper()
	if err := e.exec(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %s: %v", e.name, q, err)
	}
}

// tryInTx runs q in a transaction that is rolled back, so a case leaves
// the database as it found it, and returns q's error.
func (e *engine) tryInTx(ctx context.Context, q string, args ...any) error {
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, e.rebind(q), args...)
	return err
}

// refusal is how the schema refused a statement, the same words on both
// engines: "check", "unique", "foreign key", "not null", or "raise: "
// and a trigger's message. which names the rule on this engine (a check's
// expression on SQLite, its constraint's name on PostgreSQL).
type refusal struct {
	kind, which string
}

var (
	sqliteMessage = regexp.MustCompile(`(?s)^(?:constraint failed: )?(.*?)(?: \(\d+\))?$`)
	sqliteCheck   = regexp.MustCompile(`(?s)^CHECK constraint failed: (.*)$`)
)

// classify names err's refusal; ok is false for an error that is no
// refusal by the schema.
func classify(err error) (r refusal, ok bool) {
	var se *sqlite.Error
	if errors.As(err, &se) {
		msg := sqliteMessage.FindStringSubmatch(se.Error())[1]
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_CHECK:
			if m := sqliteCheck.FindStringSubmatch(msg); m != nil {
				return refusal{"check", m[1]}, true
			}
			return refusal{"check", msg}, true
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return refusal{"unique", msg}, true
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return refusal{"foreign key", msg}, true
		case sqlite3.SQLITE_CONSTRAINT_NOTNULL:
			return refusal{"not null", msg}, true
		case sqlite3.SQLITE_CONSTRAINT_TRIGGER:
			return refusal{"raise: " + msg, ""}, true
		}
		return refusal{}, false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23514":
			return refusal{"check", pe.ConstraintName}, true
		case "23505":
			return refusal{"unique", pe.ConstraintName}, true
		case "23503":
			return refusal{"foreign key", pe.ConstraintName}, true
		case "23502":
			return refusal{"not null", pe.ColumnName}, true
		case "P0001":
			return refusal{"raise: " + pe.Message, ""}, true
		}
	}
	return refusal{}, false
}

// outcome is a statement's result in the same words on both engines.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	if r, ok := classify(err); ok {
		return r.kind
	}
	return "error: " + err.Error()
}

// normalise lowercases s and drops white space, so SQL text compares
// whatever its layout.
func normalise(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), "")
}
