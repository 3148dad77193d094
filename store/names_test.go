package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestProgramName_RequiredTrimmedAndBounded(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	for i, tc := range []struct {
		name string
		ok   bool
		want string
	}{
		{"", false, ""},
		{"   ", false, ""},
		{strings.Repeat("é", 80), true, strings.Repeat("é", 80)},
		{strings.Repeat("a", 81), false, ""},
		{"  Spring beta  ", true, "Spring beta"},
		{"Two\nlines", false, ""},
	} {
		np := newTestProgram(w, fmt.Sprintf("named-%d", i))
		np.Name = tc.name
		before := dbFingerprint(t, db)
		p, err := db.CreateProgram(ctx, a, np)
		if !tc.ok {
			wantCode(t, "create with name "+tc.name, err, EINVALID)
			wantUnchanged(t, "a refused name", db, before)
			continue
		}
		if err != nil {
			t.Fatalf("create with name %q: %v", tc.name, err)
		}
		if p.Name != tc.want {
			t.Fatalf("name=%q, want %q", p.Name, tc.want)
		}
	}
}

func TestUpdateProgram_RenamesAtTheRevisionAndAuditsWithoutTheName(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "renamed")
	name := "  Autumn cohort  "
	got, err := db.UpdateProgram(ctx, a, p.ID, ProgramSettings{ExpectedRevision: p.Revision, Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Autumn cohort" || got.Revision != p.Revision+1 || got.Slug != "renamed" {
		t.Fatalf("after rename: name=%q revision=%d slug=%q", got.Name, got.Revision, got.Slug)
	}
	evs, err := db.ProgramEvents(ctx, a, p.ID, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if ev := evs.Events[0]; ev.Type != string(EventProgramChanged) || !ev.Details.(ProgramChangedDetails).Renamed {
		t.Fatalf("last event=%+v, want program_changed with renamed=true", ev)
	}
	stale := "Stale"
	_, err = db.UpdateProgram(ctx, a, p.ID, ProgramSettings{ExpectedRevision: p.Revision, Name: &stale})
	wantCode(t, "rename at a stale revision", err, ECONFLICT)
	empty := " "
	_, err = db.UpdateProgram(ctx, a, p.ID, ProgramSettings{ExpectedRevision: got.Revision, Name: &empty})
	wantCode(t, "blank name", err, EINVALID)
}

func TestUpdateWorkspace_DisplayNameAndContact(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	if w.DisplayName != w.Name || w.Contact != "" {
		t.Fatalf("new workspace display=%q contact=%q, want its name and no contact", w.DisplayName, w.Contact)
	}
	p := mustProgram(t, db, a, w, "contact-shown")
	display, contact := " Acme Labs ", "Privacy@Example.COM"
	got, err := db.UpdateWorkspace(ctx, a, w.ID, WorkspaceSettings{DisplayName: &display, Contact: &contact})
	if err != nil {
		t.Fatal(err)
	}
	if got.DisplayName != "Acme Labs" || got.Contact != "Privacy@example.com" || got.Name != w.Name {
		t.Fatalf("workspace=%+v, want trimmed display name, normalised contact and the same unique name", got)
	}
	if p := mustProgramByID(t, db, a, p.ID); p.WorkspaceName != "Acme Labs" || p.WorkspaceContact != "Privacy@example.com" {
		t.Fatalf("program sees workspace %q / %q", p.WorkspaceName, p.WorkspaceContact)
	}
	// Only the contact: the display name stays.
	link := "https://acme.example/privacy"
	if got, err = db.UpdateWorkspace(ctx, a, w.ID, WorkspaceSettings{Contact: &link}); err != nil || got.DisplayName != "Acme Labs" || got.Contact != link {
		t.Fatalf("contact only: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "not an address", "http://acme.example/privacy", "https://", "https://user:pw@acme.example/",
		"javascript:alert(1)", "ftp://acme.example", "https://acme.example/a b"} {
		c := bad
		before := dbFingerprint(t, db)
		_, err := db.UpdateWorkspace(ctx, a, w.ID, WorkspaceSettings{Contact: &c})
		wantCode(t, "contact "+bad, err, EINVALID)
		wantUnchanged(t, "a refused contact", db, before)
	}
	long := strings.Repeat("n", 81)
	_, err = db.UpdateWorkspace(ctx, a, w.ID, WorkspaceSettings{DisplayName: &long})
	wantCode(t, "81-character display name", err, EINVALID)
	other, _ := mustOwner(t, db)
	_, err = db.UpdateWorkspace(ctx, other, w.ID, WorkspaceSettings{DisplayName: &display})
	wantCode(t, "foreign owner", err, ENOTFOUND)
}

func TestRetiredProgram_RefusesContentAndFiles(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "retired-readonly", 100, 100)
	if _, err := db.RetireProgram(ctx, sp.Owner, sp.Program.ID, Retirement{ExpectedRevision: mustProgramByID(t, db, sp.Owner, sp.Program.ID).Revision, Confirm: sp.Program.Slug}); err != nil {
		t.Fatal(err)
	}
	before := dbFingerprint(t, db)
	_, err := db.PutContent(ctx, sp.Owner, sp.Program.ID, ContentEdit{Body: "After retirement."})
	wantCode(t, "content of a retired program", err, ECONFLICT)
	err = db.PutAsset(ctx, sp.Owner, sp.Program.ID, "late.png", "image/png", []byte("\x89PNG\r\n\x1a\n"))
	wantCode(t, "file of a retired program", err, ECONFLICT)
	wantUnchanged(t, "writes to a retired program", db, before)
	p := mustProgramByID(t, db, sp.Owner, sp.Program.ID)
	if p.EntriesErasedBy == nil || !p.EntriesErasedBy.Equal(p.RetiredAt.Add(DefaultRetention.RetiredProgram+SweepInterval)) {
		t.Fatalf("entries erased by %v, want retirement + %s + one sweep", p.EntriesErasedBy, DefaultRetention.RetiredProgram)
	}
}
