package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"admit/internal/testutil"
)

// testEpoch is where every fake clock starts: a fixed instant, so stored
// timestamps are predictable.
var testEpoch = time.Date(2025, time.March, 10, 9, 0, 0, 0, time.UTC)

// MustOpenDB opens a fresh database in a temp file (never :memory:), or on
// the PostgreSQL run a database of the test's own, with its clock stopped at
// testEpoch, and closes it when the test ends.
func MustOpenDB(tb testing.TB) *DB {
	tb.Helper()
	db, _ := mustOpenDBWithClock(tb)
	return db
}

// mustOpenDBWithClock is MustOpenDB that also returns the fake clock.
func mustOpenDBWithClock(tb testing.TB) (*DB, *testutil.Clock) {
	tb.Helper()
	clock := testutil.NewClock(testEpoch)
	return mustOpenAt(tb, filepath.Join(tb.TempDir(), "admit.db"), clock), clock
}

// mustOpenAt opens (migrating) the database file at path with the given
// clock, and closes it when the test ends. Two calls on one path give two
// independent *DB, each with its own writer connection.
func mustOpenAt(tb testing.TB, path string, clock *testutil.Clock) *DB {
	tb.Helper()
	return mustOpenWith(tb, path, Options{BindingKey: signupTestKey, Now: clock.Now})
}

// mustOpenWith opens (migrating) the database file at path with opt, and
// closes it when the test ends.
func mustOpenWith(tb testing.TB, path string, opt Options) *DB {
	tb.Helper()
	db, err := openTestDB(tb, path, opt)
	if err != nil {
		tb.Fatalf("open %s: %v", path, err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("close db: %v", err)
		}
	})
	return db
}

// mustOwner creates a new workspace through AddOwner (as the CLI would) and
// returns an owner actor of it. Each call makes a distinct workspace and user.
func mustOwner(tb testing.TB, db *DB) (Actor, *Workspace) {
	tb.Helper()
	suffix := uuid.NewString()[:8]
	userID := "user_" + suffix
	w, err := db.AddOwner(context.Background(), Actor{Kind: ActorCLI}, "Workspace "+suffix, userID)
	if err != nil {
		tb.Fatalf("add owner: %v", err)
	}
	return Actor{Kind: ActorOwner, UserID: userID}, w
}

// testPurpose is the purpose every test program and its notices state.
const testPurpose = "Early access to the test product, invited in small groups."

// mustProgram creates a closed program with the given slug in the owner's
// workspace.
func mustProgram(tb testing.TB, db *DB, a Actor, w *Workspace, slug string) *Program {
	tb.Helper()
	p, err := db.CreateProgram(context.Background(), a, NewProgram{WorkspaceID: w.ID, Slug: slug, Name: "Test " + slug, Purpose: testPurpose,
		QueueCap: 100, HourlyCap: 10, SeatCap: 5, MaxInvitationDays: 14})
	if err != nil {
		tb.Fatalf("create program %q: %v", slug, err)
	}
	return p
}

// testNotice is a valid notice for a program with testPurpose.
var testNotice = NewNotice{
	Purpose:       testPurpose,
	ContactText:   "We will send you one invitation code by hand if you are selected.",
	RetentionText: "Your address stays until the program is retired or you remove it.",
}

// mustNotice publishes testNotice on the program.
func mustNotice(tb testing.TB, db *DB, a Actor, programID string) *Notice {
	tb.Helper()
	n, err := db.PublishNotice(context.Background(), a, programID, testNotice)
	if err != nil {
		tb.Fatalf("publish notice: %v", err)
	}
	return n
}

// mustUpdate runs fn in a write transaction and fails the test on error.
func mustUpdate(tb testing.TB, db *DB, fn func(*Tx) error) {
	tb.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		tb.Fatalf("update: %v", err)
	}
}

// mustCount returns the single integer a counting query yields.
func mustCount(tb testing.TB, db *DB, query string, args ...any) int {
	tb.Helper()
	var n int
	err := db.View(context.Background(), func(tx *Tx) error {
		return tx.QueryRowContext(context.Background(), query, args...).Scan(&n)
	})
	if err != nil {
		tb.Fatalf("count %q: %v", query, err)
	}
	return n
}

// mustColumn returns the values of a query's one column, in order.
func mustColumn[T any](tb testing.TB, db *DB, query string, args ...any) []T {
	tb.Helper()
	var vs []T
	err := db.View(context.Background(), func(tx *Tx) error {
		rows, err := tx.QueryContext(context.Background(), query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var v T
			if err := rows.Scan(&v); err != nil {
				return err
			}
			vs = append(vs, v)
		}
		return rows.Err()
	})
	if err != nil {
		tb.Fatalf("query %q: %v", query, err)
	}
	return vs
}

// tableNames lists the database's own tables (SQLite's internal ones left out).
func tableNames(ctx context.Context, tx *Tx) ([]string, error) {
	rows, err := tx.QueryContext(ctx, tx.engine.pick(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`,
		`SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema()`))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

// mustEntryVia puts a new entry on a program in state through the store's
// own operations — a signup (opening signup for it when closed, and closing
// it again), then the owner's selection, decline or withdrawal — so it has
// the receipt, events and counts a real one has. It returns the entry ID.
func mustEntryVia(tb testing.TB, db *DB, a Actor, programID, state string) string {
	tb.Helper()
	ctx := context.Background()
	p := mustProgramByID(tb, db, a, programID)
	if !p.SignupOpen {
		p = mustSetProgram(tb, db, a, programID, func(s *ProgramSettings) { s.SignupOpen = ptrTo(true) })
		defer mustSetProgram(tb, db, a, programID, func(s *ProgramSettings) { s.SignupOpen = ptrTo(false) })
	}
	email := uuid.NewString()[:13] + "@example.test"
	mustSignup(tb, db, SignupRequest{Slug: p.Slug, RequestKey: uuid.NewString(), Email: email,
		NoticeVersion: p.CurrentNoticeVersion, Permission: true})
	var id string
	if err := db.View(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT id FROM entries WHERE program_id = ? AND email_key = ?`, programID, email).Scan(&id)
	}); err != nil {
		tb.Fatalf("find the new entry: %v", err)
	}
	var err error
	switch state {
	case StateWaiting:
	case StateSelected:
		_, err = db.SelectEntry(ctx, a, programID, id, Decision{Reason: "owner_discretion"})
	case StateDeclined:
		_, err = db.DeclineEntry(ctx, a, programID, id, Decision{Reason: "other"})
	case StateWithdrawn:
		_, err = db.WithdrawEntry(ctx, a, programID, id, Decision{Reason: "applicant_request"})
	default:
		tb.Fatalf("mustEntryVia: %q is reached by other operations", state)
	}
	if err != nil {
		tb.Fatalf("make entry %s: %v", state, err)
	}
	return id
}
