package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// eventSummary renders workspace events as "type subject" lines.
func eventSummary(evs []WorkspaceEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = string(ev.ActorKind) + " " + ev.Type + " " + ev.SubjectUserID
	}
	return out
}

func mustWorkspaceEvents(t *testing.T, db *DB, name string) []string {
	t.Helper()
	evs, err := db.WorkspaceEvents(context.Background(), name)
	if err != nil {
		t.Fatalf("workspace events: %v", err)
	}
	return eventSummary(evs)
}

func TestAddOwner_CreatesWorkspaceWithAuditedEvents(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	ctx := context.Background()
	cli := Actor{Kind: ActorCLI}

	w, err := db.AddOwner(ctx, cli, "Acme", "user_alice")
	if err != nil {
		t.Fatalf("add owner: %v", err)
	}
	if got, want := w.Name, "Acme"; got != want {
		t.Fatalf("name=%q, want %q", got, want)
	}
	if !w.Active || len(w.ID) != 36 {
		t.Fatalf("workspace=%+v, want active with a UUID", w)
	}
	if got, want := w.CreatedAt, testEpoch; !got.Equal(want) {
		t.Fatalf("created at %v, want the clock's %v", got, want)
	}
	// The CLI is recorded as itself in the workspace trail.
	want := []string{"cli workspace_created ", "cli owner_added user_alice"}
	if got := mustWorkspaceEvents(t, db, "Acme"); !slices.Equal(got, want) {
		t.Fatalf("events=%q, want %q", got, want)
	}

	owned, err := db.OwnedWorkspaces(ctx, "user_alice")
	if err != nil {
		t.Fatalf("owned: %v", err)
	}
	if len(owned) != 1 || owned[0].ID != w.ID {
		t.Fatalf("owned=%+v, want just %s", owned, w.ID)
	}

	// Adding the same active owner again changes nothing and records nothing.
	clock.Add(time.Hour)
	again, err := db.AddOwner(ctx, cli, "Acme", "user_alice")
	if err != nil {
		t.Fatalf("add again: %v", err)
	}
	if got, want := again.ID, w.ID; got != want {
		t.Fatalf("second add returned workspace %s, want %s", got, want)
	}
	if got := mustWorkspaceEvents(t, db, "Acme"); !slices.Equal(got, want) {
		t.Fatalf("events after repeat=%q, want %q", got, want)
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM workspaces`), 1; got != want {
		t.Fatalf("workspaces=%d, want %d", got, want)
	}
	owners, err := db.ListOwners(ctx, "Acme")
	if err != nil {
		t.Fatalf("list owners: %v", err)
	}
	if len(owners) != 1 || !owners[0].UpdatedAt.Equal(testEpoch) {
		t.Fatalf("owners=%+v, want one row untouched by the repeat", owners)
	}

	// A second owner joins the existing workspace without recreating it.
	if _, err := db.AddOwner(ctx, cli, "Acme", "user_bob"); err != nil {
		t.Fatalf("add bob: %v", err)
	}
	want = append(want, "cli owner_added user_bob")
	if got := mustWorkspaceEvents(t, db, "Acme"); !slices.Equal(got, want) {
		t.Fatalf("events after bob=%q, want %q", got, want)
	}
}

func TestRemoveOwner_DeactivatesAndAudits(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	cli := Actor{Kind: ActorCLI}
	for _, u := range []string{"user_alice", "user_bob"} {
		if _, err := db.AddOwner(ctx, cli, "Acme", u); err != nil {
			t.Fatalf("add %s: %v", u, err)
		}
	}
	if _, err := db.AddOwner(ctx, cli, "Other", "user_bob"); err != nil {
		t.Fatalf("add bob to other: %v", err)
	}

	if err := db.RemoveOwner(ctx, cli, "Acme", "user_bob"); err != nil {
		t.Fatalf("remove bob: %v", err)
	}
	want := []string{"cli workspace_created ", "cli owner_added user_alice", "cli owner_added user_bob", "cli owner_removed user_bob"}
	if got := mustWorkspaceEvents(t, db, "Acme"); !slices.Equal(got, want) {
		t.Fatalf("events=%q, want %q", got, want)
	}

	owned, err := db.OwnedWorkspaces(ctx, "user_bob")
	if err != nil {
		t.Fatalf("owned: %v", err)
	}
	if len(owned) != 1 || owned[0].Name != "Other" {
		t.Fatalf("bob owns %+v, want only Other", owned)
	}

	owners, err := db.ListOwners(ctx, "Acme")
	if err != nil {
		t.Fatalf("list owners: %v", err)
	}
	active := map[string]bool{}
	for _, o := range owners {
		active[o.UserID] = o.Active
		if o.Role != "owner" {
			t.Errorf("%s role=%q, want owner", o.UserID, o.Role)
		}
	}
	if len(owners) != 2 || !active["user_alice"] || active["user_bob"] {
		t.Fatalf("owners=%+v, want alice active and bob removed", owners)
	}

	// Removing again, removing a stranger and removing from a missing
	// workspace are all not found, and record nothing.
	for _, tc := range []struct{ workspace, user string }{
		{"Acme", "user_bob"},
		{"Acme", "user_nobody"},
		{"Missing", "user_alice"},
	} {
		err := db.RemoveOwner(ctx, cli, tc.workspace, tc.user)
		if got, want := ErrorCode(err), ENOTFOUND; got != want {
			t.Errorf("remove %s from %s: code=%q (%v), want %q", tc.user, tc.workspace, got, err, want)
		}
	}
	if got := mustWorkspaceEvents(t, db, "Acme"); !slices.Equal(got, want) {
		t.Fatalf("events after failed removals=%q, want %q", got, want)
	}

	// A removed owner can be added back, which is audited.
	if _, err := db.AddOwner(ctx, cli, "Acme", "user_bob"); err != nil {
		t.Fatalf("re-add bob: %v", err)
	}
	want = append(want, "cli owner_added user_bob")
	if got := mustWorkspaceEvents(t, db, "Acme"); !slices.Equal(got, want) {
		t.Fatalf("events after re-add=%q, want %q", got, want)
	}
	if owned, _ := db.OwnedWorkspaces(ctx, "user_bob"); len(owned) != 2 {
		t.Fatalf("bob owns %d workspaces after re-add, want 2", len(owned))
	}
}

func TestAddOwner_RejectsBadNamesAndUserIDs(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	cli := Actor{Kind: ActorCLI}
	for _, tc := range []struct{ name, workspace, user string }{
		{"empty workspace", "", "user_a"},
		{"blank workspace", "   ", "user_a"},
		{"padded workspace", " Acme", "user_a"},
		{"long workspace", strings.Repeat("w", 121), "user_a"},
		{"empty user", "Acme", ""},
		{"user with space", "Acme", "user a"},
		{"user with newline", "Acme", "user\na"},
		{"long user", "Acme", strings.Repeat("u", 129)},
	} {
		_, err := db.AddOwner(ctx, cli, tc.workspace, tc.user)
		if got, want := ErrorCode(err), EINVALID; got != want {
			t.Errorf("%s: code=%q (%v), want %q", tc.name, got, err, want)
		}
	}
	if n := mustCount(t, db, `SELECT count(*) FROM workspaces`); n != 0 {
		t.Fatalf("workspaces=%d after rejected adds, want 0", n)
	}
	if _, err := db.AddOwner(ctx, cli, strings.Repeat("w", 120), strings.Repeat("u", 128)); err != nil {
		t.Fatalf("longest valid name and user: %v", err)
	}

	for _, user := range []string{"", "user a", strings.Repeat("u", 129)} {
		err := db.RemoveOwner(ctx, cli, "Acme", user)
		if got, want := ErrorCode(err), EINVALID; got != want {
			t.Errorf("remove %q: code=%q (%v), want %q", user, got, err, want)
		}
	}
}

// IsOwner is what the navigation shows: true while the user is an active
// owner of some workspace, false for strangers and once removed everywhere.
func TestIsOwner_FollowsMembership(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	cli := Actor{Kind: ActorCLI}
	isOwner := func(user string) bool {
		t.Helper()
		ok, err := db.IsOwner(ctx, user)
		if err != nil {
			t.Fatalf("is owner %s: %v", user, err)
		}
		return ok
	}
	if isOwner("user_alice") {
		t.Fatal("a stranger is an owner")
	}
	for _, w := range []string{"Acme", "Other"} {
		if _, err := db.AddOwner(ctx, cli, w, "user_alice"); err != nil {
			t.Fatal(err)
		}
	}
	if !isOwner("user_alice") || isOwner("user_bob") {
		t.Fatal("alice should be an owner and bob not")
	}
	if err := db.RemoveOwner(ctx, cli, "Acme", "user_alice"); err != nil {
		t.Fatal(err)
	}
	if !isOwner("user_alice") {
		t.Fatal("alice still owns Other")
	}
	if err := db.RemoveOwner(ctx, cli, "Other", "user_alice"); err != nil {
		t.Fatal(err)
	}
	if isOwner("user_alice") {
		t.Fatal("alice was removed from every workspace and is still an owner")
	}
}
