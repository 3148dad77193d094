package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// invisibleSamples is one character of each kind a public line refuses,
// with the kind the refusal names.
var invisibleSamples = []struct {
	r    rune
	kind string
}{
	{0x0000, "a control character"},      // NUL
	{0x0009, "a control character"},      // tab
	{0x001B, "a control character"},      // escape
	{0x0085, "a control character"},      // next line (C1)
	{'\n', "a line break"},               // inside, not at the ends, which are trimmed
	{0x2028, "a line break"},             // line separator
	{0x202E, "a text-direction control"}, // right-to-left override
	{0x200F, "a text-direction control"}, // right-to-left mark
	{0x2066, "a text-direction control"}, // left-to-right isolate
	{0xFEFF, "an invisible character"},   // byte-order mark
	{0x200B, "an invisible character"},   // zero-width space
	{0x200C, "an invisible character"},   // zero-width non-joiner
	{0x200D, "an invisible character"},   // zero-width joiner
	{0x2060, "an invisible character"},   // word joiner
	{0x00AD, "an invisible character"},   // soft hyphen
	{0xE0041, "an invisible character"},  // tag latin capital A
	{0x3164, "an invisible character"},   // Hangul filler
	{0x034F, "an invisible character"},   // combining grapheme joiner
	{0x180E, "an invisible character"},   // Mongolian vowel separator
	{0xFFF0, "an invisible character"},   // unassigned, default ignorable
	{0x061C, "a text-direction control"}, // Arabic letter mark
	{0x007F, "a control character"},      // delete
	{0x200E, "a text-direction control"}, // left-to-right mark
	{0x2064, "an invisible character"},   // invisible plus
}

// visibleNames are names of characters that show as themselves, in other
// scripts and with emoji: each is accepted.
var visibleNames = []string{"Café ☕ beta", "שלום beta", "بيتا مبكرة", "日本語のベータ", "e\u0301lan", "❤\uFE0F club", "Ａ＋ wide"}

// rule (docs/API.md#names): a program's name, a workspace's display name
// and unique name, and a contact link refuse each kind of character that
// would not show as itself, with an EINVALID about the field that names
// the character, and store nothing.
func TestVisibleLine_RefusesControlAndInvisibleCharactersInPublicNames(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "visible-names")
	for i, s := range invisibleSamples {
		code := fmt.Sprintf("U+%04X", s.r)
		text := "Spring" + string(s.r) + "beta"
		for _, op := range []struct {
			what, field, subject string
			do                   func() error
		}{
			{"create a program", "name", "The program name", func() error {
				np := newTestProgram(w, fmt.Sprintf("invisible-%d", i))
				np.Name = text
				_, err := db.CreateProgram(ctx, a, np)
				return err
			}},
			{"rename a program", "name", "The program name", func() error {
				_, err := db.UpdateProgram(ctx, a, p.ID, ProgramSettings{ExpectedRevision: p.Revision, Name: &text})
				return err
			}},
			{"name a workspace", "displayName", "The workspace name people see", func() error {
				_, err := db.UpdateWorkspace(ctx, a, w.ID, WorkspaceSettings{DisplayName: &text})
				return err
			}},
			{"link the privacy contact", "contact", "The privacy contact", func() error {
				link := "https://acme.example/" + text
				_, err := db.UpdateWorkspace(ctx, a, w.ID, WorkspaceSettings{Contact: &link})
				return err
			}},
			{"create a workspace", "", "A workspace name", func() error {
				_, err := db.AddOwner(ctx, Actor{Kind: ActorCLI}, text, "user_invisible")
				return err
			}},
		} {
			what := op.what + " with " + code
			before := dbFingerprint(t, db)
			err := op.do()
			wantCode(t, what, err, EINVALID)
			wantUnchanged(t, what, db, before)
			if got := ErrorField(err); got != op.field {
				t.Errorf("%s: field %q, want %q", what, got, op.field)
			}
			msg := ErrorMessage(err)
			if !strings.HasPrefix(msg, op.subject+" must not contain") || !strings.Contains(msg, s.kind+" ("+code+")") {
				t.Errorf("%s: message %q, want it to name %q and %s (%s)", what, msg, op.subject, s.kind, code)
			}
		}
	}
	for i, name := range visibleNames {
		np := newTestProgram(w, fmt.Sprintf("visible-%d", i))
		np.Name = name
		got, err := db.CreateProgram(ctx, a, np)
		if err != nil || got.Name != name {
			t.Errorf("create with the name %q: %v", name, err)
		}
		display := name
		if _, err := db.UpdateWorkspace(ctx, a, w.ID, WorkspaceSettings{DisplayName: &display}); err != nil {
			t.Errorf("workspace display name %q: %v", name, err)
		}
	}
}
