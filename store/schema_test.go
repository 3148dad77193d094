package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"admit/migrations"
)

func TestKnownVersion_IsTheNewestEmbeddedMigration(t *testing.T) {
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("embedded migrations: %v %v", names, err)
	}
	newest := names[len(names)-1] // fs.Glob sorts; the names are zero-padded
	s, err := ReadSchema(context.Background(), filepath.Join(t.TempDir(), "absent.db"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Pending[len(s.Pending)-1]; got.Name != newest || got.Version != KnownVersion() {
		t.Fatalf("newest pending migration %+v, KnownVersion %d; want %s", got, KnownVersion(), newest)
	}
	if len(s.Pending) != len(names) || len(s.Applied) != 0 || len(s.Unknown) != 0 {
		t.Fatalf("a database that does not exist: %d pending, %d applied, %d unknown; want %d pending",
			len(s.Pending), len(s.Applied), len(s.Unknown), len(names))
	}
}

func TestOpen_RefusesADatabaseMigratedByANewerAdmit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admit.db")
	db := mustOpenWith(t, path, Options{BindingKey: signupTestKey})
	mustUpdate(t, db, func(tx *Tx) error {
		_, err := tx.ExecContext(context.Background(), `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, `+tx.engine.pick(`1`, `true`)+`)`)
		return err
	})
	for _, noMigrate := range []bool{false, true} {
		_, err := openTestDB(t, path, Options{BindingKey: signupTestKey, NoMigrate: noMigrate})
		var tooNew *SchemaTooNewError
		if !errors.As(err, &tooNew) || tooNew.Version != 99 || tooNew.Known != KnownVersion() {
			t.Fatalf("Open (NoMigrate %t) on schema version 99: err=%v, want a SchemaTooNewError naming 99 and %d", noMigrate, err, KnownVersion())
		}
		for _, want := range []string{"schema version 99", "up to " + strconv.FormatInt(KnownVersion(), 10)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q lacks %q", err, want)
			}
		}
	}
	s, err := readTestSchema(t, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Unknown) != 1 || s.Unknown[0].Version != 99 || s.Version() != 99 || len(s.Pending) != 0 {
		t.Fatalf("schema %+v: want version 99 unknown and nothing pending", s)
	}
}

func TestOpen_NoMigrateRefusesPendingMigrationsAndAppliesNone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admit.db")
	db := mustOpenWith(t, path, Options{BindingKey: signupTestKey})
	mustUpdate(t, db, func(tx *Tx) error {
		_, err := tx.ExecContext(context.Background(), `DELETE FROM goose_db_version WHERE version_id = ?`, KnownVersion())
		return err
	})
	_, err := openTestDB(t, path, Options{BindingKey: signupTestKey, NoMigrate: true})
	var behind *SchemaBehindError
	if !errors.As(err, &behind) || len(behind.Pending) != 1 || behind.Pending[0].Version != KnownVersion() {
		t.Fatalf("Open with NoMigrate and one migration pending: err=%v, want a SchemaBehindError", err)
	}
	s, err := readTestSchema(t, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Pending) != 1 {
		t.Fatalf("after the refusal %d migrations are pending, want 1: it migrated", len(s.Pending))
	}
}

// A binary built without a migration below its newest one (here 12, of
// the ones embedded) is refused a database that has it, and the message
// names the migration it lacks instead of comparing two equal versions
// ("schema version 13, but … only up to 13"). Read from a real database
// migrated by this binary.
func TestOpen_ABinaryWithoutAMigrationNamesTheOneItLacks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admit.db")
	db := mustOpenWith(t, path, Options{BindingKey: signupTestKey})
	known, err := knownMigrationsOn(testEngine)
	if err != nil {
		t.Fatal(err)
	}
	newest := known[len(known)-1].Version
	const lacking = 12
	without := slices.DeleteFunc(slices.Clone(known), func(m Migration) bool { return m.Version == lacking })
	if len(without) != len(known)-1 || newest <= lacking {
		t.Fatalf("migration %d is not embedded below the newest (%d)", lacking, newest)
	}
	var applied string // the day goose recorded, as the message gives it
	if err := db.writer.QueryRow(db.wstmts.text(testEngine.pick(`SELECT strftime('%Y-%m-%d', tstamp) FROM goose_db_version WHERE version_id = ?`,
		`SELECT to_char(tstamp::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD') FROM goose_db_version WHERE version_id = ?`)), lacking).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	for _, mayMigrate := range []bool{true, false} {
		err := checkSchemaAgainst(context.Background(), testEngine, db.writer, path, mayMigrate, without)
		var tooNew *SchemaTooNewError
		if !errors.As(err, &tooNew) || len(tooNew.Unknown) != 1 || tooNew.Unknown[0].Version != lacking {
			t.Fatalf("mayMigrate %t: err=%v, want a refusal naming migration %d", mayMigrate, err, lacking)
		}
		msg := err.Error()
		for _, want := range []string{
			fmt.Sprintf("has migration %d (applied %s), which this admit does not have", lacking, applied),
			fmt.Sprintf("knows versions up to %d but was built without it", newest),
			"will neither serve nor migrate it", "restore a backup",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("message %q lacks %q", msg, want)
			}
		}
		if strings.Contains(msg, "only up to") || strings.Contains(msg, "newer admit") {
			t.Errorf("message %q compares equal versions or calls the other admit newer", msg)
		}
	}
	// A binary that lacks it and the newest as well: the database is ahead,
	// and both are named.
	older := without[:len(without)-1]
	err = checkSchemaAgainst(context.Background(), testEngine, db.writer, path, true, older)
	want := fmt.Sprintf("has schema version %d, but this admit knows versions only up to %d and does not have migrations %d (applied %s) and %d (applied %s): a newer admit migrated it",
		newest, older[len(older)-1].Version, lacking, applied, newest, applied)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err=%v, want it to contain %q", err, want)
	}
}

// readTestSchema reads the schema of the test database at path, on the
// run's engine, as ReadSchema does.
func readTestSchema(tb testing.TB, path string) (*Schema, error) {
	tb.Helper()
	if testEngine == PostgreSQL {
		return ReadSchemaPostgres(context.Background(), pgDatabase(tb, path))
	}
	return ReadSchema(context.Background(), path)
}
