package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"admit/migrations"

	"github.com/pressly/goose/v3"
)

// Migration is one schema migration as the database and this binary see it.
type Migration struct {
	// Version is the migration's number, the prefix of its file's name.
	Version int64
	// Name is the embedded file's name; empty for a migration this binary
	// does not embed.
	Name string
	// AppliedAt is when the database recorded it; zero while pending.
	AppliedAt time.Time
}

// Schema compares the migrations applied to a database with the ones
// embedded in this binary (docs/DEPLOY.md, "Upgrading and rolling back").
type Schema struct {
	// Applied are the embedded migrations the database has, by version.
	Applied []Migration
	// Pending are the embedded migrations the database does not have yet.
	Pending []Migration
	// Unknown are migrations the database has and this binary does not
	// embed: a newer admit applied them.
	Unknown []Migration
}

// Version is the newest migration the database has, known or not; 0 when
// it has none.
func (s *Schema) Version() int64 {
	var v int64
	for _, ms := range [][]Migration{s.Applied, s.Unknown} {
		for _, m := range ms {
			v = max(v, m.Version)
		}
	}
	return v
}

// KnownVersion is the newest migration embedded in this binary.
func KnownVersion() int64 {
	known, err := knownMigrations()
	if err != nil || len(known) == 0 {
		return 0
	}
	return known[len(known)-1].Version
}

// knownMigrations lists the embedded migrations by version, read from the
// same files goose applies, so a new file needs no change here.
func knownMigrations() ([]Migration, error) { return knownMigrationsOn(SQLite) }

// knownMigrationsOn lists the migrations embedded for engine, by version.
// Both engines' sets have the same versions.
func knownMigrationsOn(engine Engine) ([]Migration, error) {
	var fsys fs.FS = migrations.FS
	if engine == PostgreSQL {
		fsys = migrations.Postgres
	}
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	out := make([]Migration, 0, len(names))
	for _, name := range names {
		v, err := goose.NumericComponent(name)
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: path.Base(name)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return cmp.Compare(a.Version, b.Version) })
	return out, nil
}

// SchemaTooNewError is a database migrated by a newer admit than this one:
// its schema has migrations this binary does not know, so this binary must
// neither serve it nor migrate it.
type SchemaTooNewError struct {
	Path string
	// Version is the database's newest migration; Known is this binary's.
	Version, Known int64
	Unknown        []Migration
}

// Error names every migration the database has and this binary lacks. When
// the database is simply ahead, it says so; when this binary knows versions
// as new as the database's but lacks some below them (it was built without
// them), it says that instead of comparing two equal versions.
func (e *SchemaTooNewError) Error() string {
	missing := MissingMigrations(e.Unknown)
	const refuse = "and this one will neither serve nor migrate it"
	const backup = "(docs/DEPLOY.md, \"Upgrading and rolling back\")"
	if e.Version > e.Known {
		return fmt.Sprintf("database %s has schema version %d, but this admit knows versions only up to %d and does not have %s: "+
			"a newer admit migrated it, %s. Run that newer admit, or restore a backup from before the upgrade %s",
			e.Path, e.Version, e.Known, missing, refuse, backup)
	}
	return fmt.Sprintf("database %s has %s, which this admit does not have: it knows versions up to %d but was built without %s. "+
		"An admit that has %s migrated the database, %s. Run that admit, or restore a backup from before it migrated %s",
		e.Path, missing, e.Known, them(len(e.Unknown)), them(len(e.Unknown)), refuse, backup)
}

// MissingMigrations names migrations this binary does not have, by version
// and, when the database recorded it, when each was applied:
// "migration 12 (applied 2026-11-29)", "migrations 12 and 14 (…)".
func MissingMigrations(ms []Migration) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = strconv.FormatInt(m.Version, 10)
		if !m.AppliedAt.IsZero() {
			parts[i] += " (applied " + m.AppliedAt.UTC().Format(time.DateOnly) + ")"
		}
	}
	switch len(parts) {
	case 0:
		return "no migrations"
	case 1:
		return "migration " + parts[0]
	}
	return "migrations " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// them is "it" or "them", for n migrations.
func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// SchemaBehindError is a database with migrations to apply, opened with
// Options.NoMigrate.
type SchemaBehindError struct {
	Path    string
	Pending []Migration
}

func (e *SchemaBehindError) Error() string {
	return fmt.Sprintf("database %s needs %d migration(s) up to version %d before this admit can use it",
		e.Path, len(e.Pending), e.Pending[len(e.Pending)-1].Version)
}

// ReadSchema reads which migrations the database at path has, on a
// read-only connection: it never creates, migrates or locks the file, so it
// may run beside a running server. A database that does not exist yet has
// every migration pending.
func ReadSchema(ctx context.Context, path string) (*Schema, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return compareSchema(nil)
	} else if err != nil {
		return nil, err
	}
	q := url.Values{"mode": {"ro"}}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return readSchemaOn(ctx, SQLite, db)
}

// querier is what readSchema reads through: a pool or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readSchemaOn reads goose's version table (absent on a fresh database) of
// a database on engine and compares it with the embedded migrations.
func readSchemaOn(ctx context.Context, engine Engine, q querier) (*Schema, error) {
	known, err := knownMigrationsOn(engine)
	if err != nil {
		return nil, err
	}
	return readSchemaAgainst(ctx, engine, q, known)
}

// Reading goose's version table, by engine: whether it exists, and each
// applied version with when it was applied (RFC 3339, or "").
var (
	gooseTableSQL = map[Engine]string{
		SQLite:     `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'goose_db_version'`,
		PostgreSQL: `SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = 'goose_db_version' AND schemaname = current_schema()`,
	}
	gooseVersionsSQL = map[Engine]string{
		SQLite: `SELECT version_id, max(coalesce(strftime('%Y-%m-%dT%H:%M:%SZ', tstamp), ''))
		FROM goose_db_version WHERE version_id > 0 GROUP BY version_id ORDER BY version_id`,
		// goose's tstamp is a timestamp without time zone, written in the
		// server's zone (now()).
		PostgreSQL: `SELECT version_id, coalesce(to_char(max(tstamp)::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), '')
		FROM goose_db_version WHERE version_id > 0 GROUP BY version_id ORDER BY version_id`,
	}
)

// readSchemaAgainst is readSchema against the migrations known, by
// version. goose deletes a row when it takes a migration down, so every
// row above version 0 is applied.
func readSchemaAgainst(ctx context.Context, engine Engine, q querier, known []Migration) (*Schema, error) {
	var tables int
	if err := q.QueryRowContext(ctx, gooseTableSQL[engine]).Scan(&tables); err != nil {
		return nil, fmt.Errorf("read schema version: %w", err)
	}
	if tables == 0 {
		return compareMigrations(known, nil), nil
	}
	rows, err := q.QueryContext(ctx, gooseVersionsSQL[engine])
	if err != nil {
		return nil, fmt.Errorf("read schema version: %w", err)
	}
	defer rows.Close()
	var applied []Migration
	for rows.Next() {
		var m Migration
		var at string
		if err := rows.Scan(&m.Version, &at); err != nil {
			return nil, fmt.Errorf("read schema version: %w", err)
		}
		m.AppliedAt, _ = time.Parse(time.RFC3339, at) // zero when goose's timestamp is unreadable
		applied = append(applied, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema version: %w", err)
	}
	return compareMigrations(known, applied), nil
}

// compareSchema sorts the database's applied migrations into applied,
// pending and unknown against the embedded ones.
func compareSchema(applied []Migration) (*Schema, error) {
	known, err := knownMigrations()
	if err != nil {
		return nil, err
	}
	return compareMigrations(known, applied), nil
}

// compareMigrations sorts applied into applied, pending and unknown
// against known, both by version.
func compareMigrations(known, applied []Migration) *Schema {
	have := make(map[int64]Migration, len(applied))
	for _, m := range applied {
		have[m.Version] = m
	}
	s := &Schema{}
	for _, k := range known {
		if m, ok := have[k.Version]; ok {
			k.AppliedAt = m.AppliedAt
			s.Applied = append(s.Applied, k)
			delete(have, k.Version)
		} else {
			s.Pending = append(s.Pending, k)
		}
	}
	for _, m := range applied {
		if _, ok := have[m.Version]; ok {
			s.Unknown = append(s.Unknown, m)
		}
	}
	return s
}

// checkSchemaOn refuses a database on engine that this binary must not
// open: one with migrations it does not know, or, when it may not migrate,
// one with migrations pending. path names the database in the error.
func checkSchemaOn(ctx context.Context, engine Engine, q querier, path string, mayMigrate bool) error {
	known, err := knownMigrationsOn(engine)
	if err != nil {
		return err
	}
	return checkSchemaAgainst(ctx, engine, q, path, mayMigrate, known)
}

// checkSchemaAgainst is checkSchema against the migrations known, by
// version.
func checkSchemaAgainst(ctx context.Context, engine Engine, q querier, path string, mayMigrate bool, known []Migration) error {
	s, err := readSchemaAgainst(ctx, engine, q, known)
	if err != nil {
		return err
	}
	if len(s.Unknown) > 0 {
		var newest int64
		if len(known) > 0 {
			newest = known[len(known)-1].Version
		}
		return &SchemaTooNewError{Path: path, Version: s.Version(), Known: newest, Unknown: s.Unknown}
	}
	if !mayMigrate && len(s.Pending) > 0 {
		return &SchemaBehindError{Path: path, Pending: s.Pending}
	}
	return nil
}
