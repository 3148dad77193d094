package cli

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"admit/internal/datalock"
	"admit/internal/pgtest"
	"admit/internal/serverkeys"
	"admit/store"

	"github.com/google/uuid"
)

// installation is a stopped SQLite installation made through the store:
// the demo program with entries, one selected and invited, a redeemed
// grant, audit rows and a sign-in session.
type installation struct {
	env     map[string]string
	owner   store.Actor
	program string
	emails  []string
	session []byte // the session's digest
	recip   string // the user who redeemed
}

// mustInstallation makes an installation in a new data directory.
func mustInstallation(t *testing.T) *installation {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	in := &installation{env: map[string]string{"ADMIT_DATA": dir}, owner: store.Actor{Kind: store.ActorOwner, UserID: "user_owner"}, recip: "user_recipient"}
	keys, err := serverkeys.Load(mustLoadConfig(t, in.env).Secrets, dir)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, filepath.Join(dir, "admit.db"), store.Options{BindingKey: keys.Binding})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.SeedDemo(ctx, in.owner.UserID); err != nil {
		t.Fatal(err)
	}
	p, n, err := db.PublicProgram(ctx, store.DemoSlug)
	if err != nil {
		t.Fatal(err)
	}
	in.program = p.ID
	for i := range 25 {
		email := fmt.Sprintf("Copy.Person%d@example.test", i)
		in.emails = append(in.emails, email)
		if _, err := db.Signup(ctx, store.SignupRequest{Slug: store.DemoSlug, RequestKey: uuid.NewString(), Email: email,
			NoticeVersion: n.Version, Permission: true}); err != nil {
			t.Fatalf("signup: %v", err)
		}
	}
	page, err := db.Queue(ctx, in.owner, p.ID, store.QueueFilter{State: "waiting"})
	if err != nil || len(page.Entries) == 0 {
		t.Fatalf("queue: %v", err)
	}
	e := page.Entries[0]
	if _, err := db.SelectEntry(ctx, in.owner, p.ID, e.ID, store.Decision{Reason: store.SelectReasons[0]}); err != nil {
		t.Fatalf("select: %v", err)
	}
	iss, err := db.IssueInvitation(ctx, in.owner, p.ID, e.ID, store.NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: db.Now().Add(7 * 24 * time.Hour)})
	if err != nil || iss.Code == "" {
		t.Fatalf("issue: %v", err)
	}
	in.session = []byte(strings.Repeat("s", 32))
	if _, err := db.CreateSession(ctx, in.session, in.owner.UserID, store.SessionModeDev, []byte(strings.Repeat("sealed-by-the-session-key-", 2)), time.Hour); err != nil {
		t.Fatalf("session: %v", err)
	}
	return in
}

// rowCounts counts the rows of each table through q.
func rowCounts(t *testing.T, q *sql.DB, tables []copyTable) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, tb := range tables {
		var n int64
		if err := q.QueryRow(`SELECT count(*) FROM ` + quoteIdent(tb.name)).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", tb.name, err)
		}
		out[tb.name] = n
	}
	return out
}

func TestDBCopy_CopiesEveryTableAndTheCopyServesOnPostgreSQL(t *testing.T) {
	target := pgtest.NewDatabase(t)
	in := mustInstallation(t)
	ctx := context.Background()

	out := mustRunCmd(t, in.env, "db", "copy", "--to", target)
	for _, email := range in.emails {
		if strings.Contains(strings.ToLower(out), strings.ToLower(email)) {
			t.Fatalf("db copy printed an address:\n%s", out)
		}
	}
	src, err := sql.Open("sqlite", "file:"+filepath.Join(in.env["ADMIT_DATA"], "admit.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tables, err := sqliteTables(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := sql.Open("pgx", target)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	want, got := rowCounts(t, src, tables), rowCounts(t, dst, tables)
	for _, tb := range tables {
		if got[tb.name] != want[tb.name] {
			t.Errorf("%s: %d rows in PostgreSQL, %d in SQLite", tb.name, got[tb.name], want[tb.name])
		}
		if !strings.Contains(out, fmt.Sprintf("%s  ", tb.name)) {
			t.Errorf("output names no count for %s:\n%s", tb.name, out)
		}
	}
	for _, name := range []string{"entries", "invitations", "audit_events", "sessions"} {
		if want[name] == 0 {
			t.Errorf("the installation has no %s: the test copies nothing of them", name)
		}
	}

	// The copy is admit's database on PostgreSQL: served by the store, it
	// holds what the SQLite installation held, and takes new rows whose
	// keys follow the copied ones.
	keys, err := serverkeys.Load(mustLoadConfig(t, in.env).Secrets, in.env["ADMIT_DATA"])
	if err != nil {
		t.Fatal(err)
	}
	pg, err := store.OpenPostgres(ctx, target, store.Options{BindingKey: keys.Binding})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	counts, err := pg.StateCounts(ctx, in.owner, in.program)
	if err != nil {
		t.Fatal(err)
	}
	if counts["waiting"] != len(in.emails)-1 || counts["invited"] != 1 {
		t.Errorf("state counts on PostgreSQL %v, want %d waiting and 1 invited", counts, len(in.emails)-1)
	}
	found, err := pg.Queue(ctx, in.owner, in.program, store.QueueFilter{Query: in.emails[3]})
	if err != nil || len(found.Entries) != 1 || found.Entries[0].Email != in.emails[3] {
		t.Errorf("the owner's search for %s on PostgreSQL: %+v, %v", in.emails[3], found, err)
	}
	if s, err := pg.SessionByDigest(ctx, in.session); err != nil || s.UserID != in.owner.UserID {
		t.Errorf("the session on PostgreSQL: %+v, %v", s, err)
	}
	_, n, err := pg.PublicProgram(ctx, store.DemoSlug)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Signup(ctx, store.SignupRequest{Slug: store.DemoSlug, RequestKey: uuid.NewString(), Email: "after.copy@example.test",
		NoticeVersion: n.Version, Permission: true}); err != nil {
		t.Fatalf("a signup after the copy: %v", err)
	}
	// The signup's audit row took a number past the copied ones: the
	// identity sequence was moved.
	var audits, maxID int64
	if err := dst.QueryRow(`SELECT count(*), max(id) FROM audit_events`).Scan(&audits, &maxID); err != nil {
		t.Fatal(err)
	}
	if audits <= want["audit_events"] || maxID != audits {
		t.Errorf("audit events after a signup on the copy: %d rows, largest id %d; want more than the %d copied, numbered on", audits, maxID, want["audit_events"])
	}
	own, err := pg.OwnEntries(ctx, []string{in.emails[3]})
	if err != nil || len(own) != 1 {
		t.Errorf("OwnEntries(%s) on PostgreSQL: %d entries, %v", in.emails[3], len(own), err)
	}
	events, err := pg.WorkspaceEvents(ctx, store.DemoWorkspace)
	if err != nil || len(events) == 0 {
		t.Fatalf("workspace events on PostgreSQL: %d, %v", len(events), err)
	}
}

func TestDBCopy_AStoppedServersLeasesEndSoTheFirstServerOnPostgreSQLTakesThemAtOnce(t *testing.T) {
	target := pgtest.NewDatabase(t)
	in := mustInstallation(t)
	ctx := context.Background()
	keys, err := serverkeys.Load(mustLoadConfig(t, in.env).Secrets, in.env["ADMIT_DATA"])
	if err != nil {
		t.Fatal(err)
	}
	// The SQLite server was killed holding the sweeper's lease for an hour.
	db, err := store.Open(ctx, filepath.Join(in.env["ADMIT_DATA"], "admit.db"), store.Options{BindingKey: keys.Binding})
	if err != nil {
		t.Fatal(err)
	}
	if l, err := db.TakeLease(ctx, "sweeper", "killed-sqlite-server", fileLeaseTTL); err != nil || l.Epoch != 1 {
		t.Fatalf("take the lease: %+v, %v", l, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	mustRunCmd(t, in.env, "db", "copy", "--to", target)
	pg, err := store.OpenPostgres(ctx, target, store.Options{BindingKey: keys.Binding})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if l, err := pg.TakeLease(ctx, "sweeper", "postgresql-server", store.LeaseTTL); err != nil || !l.HeldBy("postgresql-server") || l.Epoch != 2 {
		t.Fatalf("the first PostgreSQL server's take: %+v, %v; want it held in epoch 2", l, err)
	}
}

func TestDBCopy_RefusesATargetThatIsNotEmpty(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, prepare, want string
	}{
		{"a table of its own", `CREATE TABLE customers (id bigint)`, "not admit's (customers)"},
		{"a table in another schema", `CREATE SCHEMA billing; CREATE TABLE billing.invoices (id bigint)`, "another schema holds tables (billing.invoices)"},
		{"admit's tables with a row", "", "already holds admit data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := pgtest.NewDatabase(t)
			in := mustInstallation(t)
			dst, err := sql.Open("pgx", target)
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			if tc.prepare != "" {
				if _, err := dst.Exec(tc.prepare); err != nil {
					t.Fatal(err)
				}
			} else {
				// Another installation already copied there.
				mustRunCmd(t, mustInstallation(t).env, "db", "copy", "--to", target)
			}
			var before int64
			if err := dst.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&before); err != nil {
				t.Fatal(err)
			}
			_, err = runCmd(t, in.env, "db", "copy", "--to", target)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "refused") {
				t.Fatalf("db copy into %s: err=%v, want a refusal saying %q", tc.name, err, tc.want)
			}
			var after int64
			if err := dst.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&after); err != nil {
				t.Fatal(err)
			}
			if after != before {
				t.Errorf("the refused copy changed the target: %d tables before, %d after", before, after)
			}
		})
	}
}

func TestDBCopy_RefusesWhileAServerHoldsTheDataDirectory(t *testing.T) {
	target := pgtest.NewDatabase(t)
	in := mustInstallation(t)
	lock, err := datalock.Take(in.env["ADMIT_DATA"], "serve")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	_, err = runCmd(t, in.env, "db", "copy", "--to", target)
	if err == nil || !strings.Contains(err.Error(), "stop that server first") {
		t.Fatalf("db copy beside a server: err=%v, want a refusal naming the server", err)
	}
}

// A target column that does not keep what is written to it — here a text
// column turned into a blank-padded char(n), which db copy's column check
// (names only) lets through — stands for any copy that does not arrive
// intact: the counts match, the digests differ, the copy is rolled back
// whole, and the target holds no row.
func TestDBCopy_ADigestMismatchRollsTheCopyBack(t *testing.T) {
	target := pgtest.NewDatabase(t)
	in := mustInstallation(t)
	ctx := context.Background()
	keys, err := serverkeys.Load(mustLoadConfig(t, in.env).Secrets, in.env["ADMIT_DATA"])
	if err != nil {
		t.Fatal(err)
	}
	pg, err := store.OpenPostgres(ctx, target, store.Options{BindingKey: keys.Binding})
	if err != nil {
		t.Fatal(err)
	}
	pg.Close()
	dst, err := sql.Open("pgx", target)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := dst.Exec(`ALTER TABLE notices ALTER COLUMN contact_text TYPE char(2000)`); err != nil {
		t.Fatal(err)
	}
	_, err = runCmd(t, in.env, "db", "copy", "--to", target)
	if err == nil || !strings.Contains(err.Error(), "notices: the contents differ") || !strings.Contains(err.Error(), "no row was copied") {
		t.Fatalf("db copy into an altering target: err=%v, want the notices' digests to differ", err)
	}
	for _, table := range []string{"workspaces", "programs", "notices", "entries", "audit_events"} {
		var n int
		if err := dst.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s after the failed copy: %d rows (%v), want none", table, n, err)
		}
	}
	// Once the column keeps what is written again, the copy runs again.
	if _, err := dst.Exec(`ALTER TABLE notices ALTER COLUMN contact_text TYPE text COLLATE "C"`); err != nil {
		t.Fatal(err)
	}
	mustRunCmd(t, in.env, "db", "copy", "--to", target)
}

func TestTableDigest_SameRowsSameDigestAnyChangeAnother(t *testing.T) {
	ctx := context.Background()
	target := pgtest.NewDatabase(t)
	lite, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	pg, err := sql.Open("pgx", target)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	tbl := copyTable{name: "t", columns: []string{"id", "a", "b", "c"}}
	rows := [][]any{{int64(1), "x", []byte{0, 1}, nil}, {int64(2), "", []byte{}, int64(-7)}, {int64(3), "é€", nil, int64(1 << 40)}}
	load := func(db *sql.DB, ddl, ins string, rows [][]any) digest {
		t.Helper()
		for _, q := range []string{`DROP TABLE IF EXISTS t`, ddl} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range rows {
			if _, err := db.Exec(ins, r...); err != nil {
				t.Fatal(err)
			}
		}
		d, err := tableDigest(ctx, db, tbl)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	liteDigest := func(rows [][]any) digest {
		return load(lite, `CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b BLOB, c INTEGER)`, `INSERT INTO t VALUES (?, ?, ?, ?)`, rows)
	}
	pgDigest := func(rows [][]any) digest {
		return load(pg, `CREATE TABLE t (id BIGINT PRIMARY KEY, a TEXT COLLATE "C", b BYTEA, c BIGINT)`, `INSERT INTO t VALUES ($1, $2, $3, $4)`, rows)
	}
	base := liteDigest(rows)
	if base.rows != 3 {
		t.Fatalf("rows=%d, want 3", base.rows)
	}
	reversed := [][]any{rows[2], rows[1], rows[0]}
	if got := pgDigest(reversed); got != base {
		t.Errorf("the same rows on PostgreSQL, inserted in another order: digest differs")
	}
	for _, tc := range []struct {
		name string
		row  []any // replaces rows[1]
	}{
		{"one byte of a text", []any{int64(2), "y", []byte{}, int64(-7)}},
		{"an empty text for a NULL", []any{int64(2), "", []byte{}, nil}},
		{"a NULL for empty bytes", []any{int64(2), "", nil, int64(-7)}},
		{"an integer", []any{int64(2), "", []byte{}, int64(-8)}},
		{"a value moved to another column", []any{int64(-7), "", []byte{}, int64(2)}},
	} {
		changed := [][]any{rows[0], tc.row, rows[2]}
		if got := pgDigest(changed); got == base {
			t.Errorf("%s: the digest did not change", tc.name)
		}
	}
}
