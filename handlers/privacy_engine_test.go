package handlers

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"admit/internal/identity"
	"admit/internal/pgtest"
	"admit/store"
)

// The privacy page states what erasure means on the engine the server
// runs on: SQLite's overwrite and WAL flush, or PostgreSQL's new row
// version, vacuum and the operator's backups (docs/erasure.md).
func TestPrivacyPage_StatesErasureOnTheEngineInUse(t *testing.T) {
	pgURL := pgtest.NewDatabase(t)
	app := MustStartApp(t)
	sqlitePage := app.NewClient(t).Get(t, "/privacy").Body

	ctx := context.Background()
	pg, err := store.OpenPostgres(ctx, pgURL, store.Options{BindingKey: testKey(120)})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	dev, err := identity.NewDevIdentity(pg, testKey(200), false)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(app.URL)
	srv, err := New(Options{PublicURL: u, Keys: srvOf(app).opts.Keys, NetworkHourlyLimit: 20}, pg, dev)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	srv.ServeHTTP(rec, mustRequest(t, "GET", app.URL+"/privacy"))
	if rec.Code != 200 {
		t.Fatalf("GET /privacy on PostgreSQL: %d", rec.Code)
	}
	pgPage := rec.Body.String()

	sqliteOnly := []string{"The database overwrites the erased address where it is stored",
		"neither the database's log nor the backup's local working files hold it", "Gone from every copy within",
		"no continuous backup configured"}
	postgresOnly := []string{"keeps its data in a PostgreSQL database", "until its routine cleanup (vacuum) removes it",
		"change log and its backups hold the earlier version until whoever runs this server rotates them out",
		"Gone from the live database within", "database is backed up with the database"}
	for _, s := range sqliteOnly {
		if !strings.Contains(sqlitePage, s) {
			t.Errorf("the page on SQLite lacks %q", s)
		}
		if strings.Contains(pgPage, s) {
			t.Errorf("the page on PostgreSQL states SQLite's %q", s)
		}
	}
	for _, s := range postgresOnly {
		if !strings.Contains(pgPage, s) {
			t.Errorf("the page on PostgreSQL lacks %q", s)
		}
		if strings.Contains(sqlitePage, s) {
			t.Errorf("the page on SQLite states PostgreSQL's %q", s)
		}
	}
	// The periods are computed as on SQLite: 30 days kept, plus the sweep.
	for _, want := range []string{"30 days", "31 days"} {
		if !strings.Contains(pgPage, want) {
			t.Errorf("the page on PostgreSQL lacks %q", want)
		}
	}
}

// docs/erasure.md states for PostgreSQL the three facts the privacy page
// states on it: the row at once, old row versions until vacuum, the change
// log and backups until the operator rotates them.
func TestErasureDoc_StatesPostgreSQLsFactsAsThePrivacyPage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "erasure.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## PostgreSQL\n")
	if !ok {
		t.Fatal("docs/erasure.md has no PostgreSQL section")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	section = strings.Join(strings.Fields(section), " ")
	for _, fact := range []string{"**The row.**", "**Dead row versions.**", "until vacuum removes it", "**The WAL and backups.**",
		"archived WAL and base backups are the operator's"} {
		if !strings.Contains(section, fact) {
			t.Errorf("docs/erasure.md's PostgreSQL section does not state %q", fact)
		}
	}
}
