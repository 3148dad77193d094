package pgtest

import (
	"context"
	"database/sql"
	"testing"
)

func TestNewDatabase_IsEmptyAndOwnedByTheTest(t *testing.T) {
	u := NewDatabase(t)
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var name string
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT current_database(), (SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public')`).Scan(&name, &tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Fatalf("new database %s holds %d tables, want none", name, tables)
	}
	other := NewDatabase(t)
	if other == u {
		t.Fatalf("two tests got the same database %s", u)
	}
}
