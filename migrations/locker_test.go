package migrations_test

import (
	"context"
	"database/sql"
	"io/fs"
	"slices"
	"sync"
	"testing"

	"admit/internal/pgtest"
	"admit/migrations"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Servers started together on one fresh PostgreSQL database migrate it
// once: under goose's session lock each waits for the one migrating, then
// finds nothing left to apply. Every server succeeds, and every migration
// is applied by exactly one of them and recorded once.
func TestPostgres_ServersStartingTogetherMigrateOnce(t *testing.T) {
	u := pgtest.NewDatabase(t)
	const servers = 3
	ctx := context.Background()
	start := make(chan struct{})
	applied := make([][]int64, servers)
	errs := make([]error, servers)
	var wg sync.WaitGroup
	for i := range servers {
		db, err := sql.Open("pgx", u) // a pool of its own, as a server has
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			t.Fatal(err)
		}
		p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.Postgres, goose.WithSessionLocker(locker))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			<-start
			res, err := p.Up(ctx)
			errs[i] = err
			for _, r := range res {
				if r.Error == nil && r.Source != nil {
					applied[i] = append(applied[i], r.Source.Version)
				}
			}
		})
	}
	close(start)
	wg.Wait()

	files, err := fs.Glob(migrations.Postgres, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var all []int64
	for i := range servers {
		if errs[i] != nil {
			t.Errorf("server %d: %v", i, errs[i])
		}
		all = append(all, applied[i]...)
	}
	slices.Sort(all)
	if len(all) != len(files) || len(slices.Compact(slices.Clone(all))) != len(files) {
		t.Errorf("the servers applied versions %v between them (%v each), want each of the %d once", all, applied, len(files))
	}

	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows, versions int
	if err := db.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`).Scan(&rows, &versions); err != nil {
		t.Fatal(err)
	}
	if rows != len(files) || versions != len(files) {
		t.Errorf("goose_db_version holds %d rows for %d versions, want %d of each", rows, versions, len(files))
	}
}
