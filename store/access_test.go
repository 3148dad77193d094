package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"admit/internal/testutil"
)

// accessFixture is one workspace with an owner, on a database with a fake
// clock, for redemption and private-access tests. Every step goes through
// the same audited store operations as the owner console.
type accessFixture struct {
	db    *DB
	clock *testutil.Clock
	owner Actor
	ws    *Workspace
}

// mustAccessFixture opens a fresh database with the binding key that
// signup and invitations need, and creates a workspace and its owner.
func mustAccessFixture(tb testing.TB) *accessFixture {
	tb.Helper()
	db, clock := mustOpenDBWithClock(tb)
	a, w := mustOwner(tb, db)
	return &accessFixture{db: db, clock: clock, owner: a, ws: w}
}

// program creates a program in the fixture's workspace with a notice and
// private content, then opens signup and enables access.
func (f *accessFixture) program(tb testing.TB, slug, body string) *Program {
	tb.Helper()
	ctx := context.Background()
	p := mustProgram(tb, f.db, f.owner, f.ws, slug)
	mustNotice(tb, f.db, f.owner, p.ID)
	if _, err := f.db.PutContent(ctx, f.owner, p.ID, ContentEdit{ExpectedRevision: 0, Body: body}); err != nil {
		tb.Fatalf("put content: %v", err)
	}
	return mustSetProgram(tb, f.db, f.owner, p.ID, func(s *ProgramSettings) {
		s.SignupOpen, s.AccessEnabled = ptrTo(true), ptrTo(true)
	})
}

// asset stores a private asset of the program.
func (f *accessFixture) asset(tb testing.TB, p *Program, name, contentType string, data []byte) {
	tb.Helper()
	if err := f.db.PutAsset(context.Background(), f.owner, p.ID, name, contentType, data); err != nil {
		tb.Fatalf("put asset %s: %v", name, err)
	}
}

// invite signs email up for p, selects the entry and issues an invitation
// that expires in seven days; with deliver it also records a send. It
// returns the code and the entry and invitation IDs.
func (f *accessFixture) invite(tb testing.TB, p *Program, email string, deliver bool) (code, entryID, invID string) {
	tb.Helper()
	ctx := context.Background()
	mustSignup(tb, f.db, SignupRequest{Slug: p.Slug, RequestKey: uuid.NewString(), Email: email,
		NoticeVersion: 1, Permission: true})
	err := f.db.View(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT id FROM entries WHERE program_id = ? AND email_key = ?`, p.ID, email).Scan(&entryID)
	})
	if err != nil {
		tb.Fatalf("find entry: %v", err)
	}
	if _, err := f.db.SelectEntry(ctx, f.owner, p.ID, entryID, Decision{Reason: "meets_policy"}); err != nil {
		tb.Fatalf("select: %v", err)
	}
	res, err := f.db.IssueInvitation(ctx, f.owner, p.ID, entryID, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: f.clock.Now().Add(7 * 24 * time.Hour)})
	if err != nil {
		tb.Fatalf("issue: %v", err)
	}
	if deliver {
		if _, err := f.db.RecordDelivery(ctx, f.owner, res.Invitation.ID, DeliveryRecord{RequestKey: uuid.NewString(), Channel: "email"}); err != nil {
			tb.Fatalf("record delivery: %v", err)
		}
	}
	return res.Code, entryID, res.Invitation.ID
}

// grant invites email to p with a recorded send and redeems the code as
// userID; it returns the grant ID.
func (f *accessFixture) grant(tb testing.TB, p *Program, email, userID string) string {
	tb.Helper()
	code, _, _ := f.invite(tb, p, email, true)
	red, err := f.db.Redeem(context.Background(), userID, []string{email}, code)
	if err != nil {
		tb.Fatalf("redeem: %v", err)
	}
	return red.GrantID
}

// unusedInvitationCode is a well-formed code that no invitation has.
func unusedInvitationCode(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// wantPrivateReadable fails unless userID with emails reads p's content with the
// given body.
func wantPrivateReadable(tb testing.TB, db *DB, p *Program, userID string, emails []string, body string) {
	tb.Helper()
	c, err := db.ReadPrivateContent(context.Background(), p.Slug, userID, emails)
	if err != nil {
		tb.Fatalf("read %s: %v", p.Slug, err)
	}
	if c.ProgramID != p.ID || c.Body != body {
		tb.Fatalf("read %s: program %s body %q, want program %s body %q", p.Slug, c.ProgramID, c.Body, p.ID, body)
	}
}

// wantPrivateDenied fails unless reading p's content and its asset is the
// generic not-found, with no content returned.
func wantPrivateDenied(tb testing.TB, db *DB, p *Program, asset, userID string, emails []string) {
	tb.Helper()
	ctx := context.Background()
	c, err := db.ReadPrivateContent(ctx, p.Slug, userID, emails)
	wantCode(tb, "read content of "+p.Slug, err, ENOTFOUND)
	if c != nil {
		tb.Fatalf("denied read of %s returned content", p.Slug)
	}
	if asset != "" {
		a, err := db.ReadPrivateAsset(ctx, p.Slug, asset, userID, emails)
		wantCode(tb, "read asset of "+p.Slug, err, ENOTFOUND)
		if a != nil {
			tb.Fatalf("denied read of %s's asset returned bytes", p.Slug)
		}
	}
}

func TestIssueInvitation_CodeIsShownOnceAndOnlyItsDigestIsStored(t *testing.T) {
	f := mustAccessFixture(t)
	ctx := context.Background()
	p := f.program(t, "once", "Private text.")
	mustSignup(t, f.db, SignupRequest{Slug: p.Slug, RequestKey: uuid.NewString(), Email: "once@example.com", NoticeVersion: 1, Permission: true})
	var entryID string
	mustUpdate(t, f.db, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT id FROM entries WHERE program_id = ?`, p.ID).Scan(&entryID)
	})
	if _, err := f.db.SelectEntry(ctx, f.owner, p.ID, entryID, Decision{Reason: "meets_policy"}); err != nil {
		t.Fatal(err)
	}
	key, expires := uuid.NewString(), f.clock.Now().Add(48*time.Hour)
	first, err := f.db.IssueInvitation(ctx, f.owner, p.ID, entryID, NewInvitation{RequestKey: key, ExpiresAt: expires})
	if err != nil {
		t.Fatalf("issue: %v", err)
	}
	if got, want := len(first.Code), CodeLength; got != want || first.Replay {
		t.Fatalf("first issue: code length %d replay %v, want %d and false", got, first.Replay, want)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(first.Code)
	if err != nil || len(raw) != 32 {
		t.Fatalf("code is not 32 bytes of base64url: %v", err)
	}

	// The same key and binding replay the metadata, never the code.
	again, err := f.db.IssueInvitation(ctx, f.owner, p.ID, entryID, NewInvitation{RequestKey: key, ExpiresAt: expires})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if again.Code != "" || !again.Replay || again.Invitation.ID != first.Invitation.ID {
		t.Fatalf("replay: code %q replay %v invitation %s, want no code, a replay of %s",
			again.Code, again.Replay, again.Invitation.ID, first.Invitation.ID)
	}

	// Only SHA-256 of the decoded bytes is stored ...
	var stored []byte
	mustUpdate(t, f.db, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT code_digest FROM invitations WHERE id = ?`, first.Invitation.ID).Scan(&stored)
	})
	sum := sha256.Sum256(raw)
	if !bytes.Equal(stored, sum[:]) {
		t.Fatal("the stored digest is not SHA-256 of the code's bytes")
	}
	// ... and neither the code nor its bytes appear in any column of any table.
	for table, cells := range everyStoredCell(t, f.db) {
		for _, cell := range cells {
			if bytes.Contains(cell, []byte(first.Code)) || bytes.Contains(cell, raw) {
				t.Fatalf("table %s holds the invitation code", table)
			}
		}
	}
}

// everyStoredCell returns every non-null cell of every table as bytes.
func everyStoredCell(tb testing.TB, db *DB) map[string][][]byte {
	tb.Helper()
	ctx := context.Background()
	out := map[string][][]byte{}
	err := db.View(ctx, func(tx *Tx) error {
		names, err := tableNames(ctx, tx)
		if err != nil {
			return err
		}
		for _, n := range names {
			rows, err := tx.QueryContext(ctx, `SELECT * FROM "`+n+`"`)
			if err != nil {
				return err
			}
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					rows.Close()
					return err
				}
				for _, v := range vals {
					switch x := v.(type) {
					case []byte:
						out[n] = append(out[n], x)
					case string:
						out[n] = append(out[n], []byte(x))
					}
				}
			}
			rows.Close()
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("dump tables: %v", err)
	}
	return out
}

func TestRedeem_FiftyConcurrentRedemptionsOfOneCodeMakeExactlyOneGrant(t *testing.T) {
	f := mustAccessFixture(t)
	p := f.program(t, "race", "Private text.")
	const email = "racer@example.com"
	code, entryID, invID := f.invite(t, p, email, true)

	// Two accounts whose verified address is the entry's race each other
	// with the same code, 25 attempts each.
	const attempts = 50
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		mu      sync.Mutex
		wins    []string
		denials int
		others  []error
	)
	for i := range attempts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			user := fmt.Sprintf("user_racer_%d", i%2)
			red, err := f.db.Redeem(context.Background(), user, []string{email}, code)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins = append(wins, red.GrantID)
			case ErrorCode(err) == ENOTFOUND:
				denials++
			default:
				others = append(others, err)
			}
		}()
	}
	close(start)
	wg.Wait()

	if len(others) > 0 {
		t.Fatalf("unexpected errors: %v", others)
	}
	if got, want := len(wins), 1; got != want {
		t.Fatalf("successful redemptions=%d, want %d", got, want)
	}
	if got, want := denials, attempts-1; got != want {
		t.Fatalf("generic denials=%d, want %d", got, want)
	}
	if got, want := mustCount(t, f.db, `SELECT count(*) FROM grants WHERE program_id = ?`, p.ID), 1; got != want {
		t.Fatalf("grants=%d, want %d", got, want)
	}
	if got, want := mustCount(t, f.db, `SELECT count(*) FROM grants WHERE id = ? AND entry_id = ? AND invitation_id = ? AND active = 1`,
		wins[0], entryID, invID), 1; got != want {
		t.Fatalf("the grant is not the active grant of this entry and invitation")
	}
	if got, want := mustCount(t, f.db, `SELECT count(*) FROM invitations WHERE id = ? AND state = 'redeemed'`, invID), 1; got != want {
		t.Fatalf("redeemed invitations=%d, want %d", got, want)
	}
	if got, want := mustCount(t, f.db, `SELECT count(*) FROM entries WHERE id = ? AND state = 'active'`, entryID), 1; got != want {
		t.Fatalf("active entries=%d, want %d", got, want)
	}
	if got, want := mustCount(t, f.db, `SELECT count(*) FROM audit_events WHERE entry_id = ? AND event_type = 'redeemed'`, entryID), 1; got != want {
		t.Fatalf("redeemed events=%d, want %d", got, want)
	}
}

func TestRedeem_EveryFailureIsTheSameNotFoundAndChangesNothing(t *testing.T) {
	const email = "invitee@example.com"
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// prepare sets up the case and returns the code, user and the
		// verified emails to redeem with.
		prepare func(t *testing.T, f *accessFixture, p *Program) (code, user string, emails []string)
	}{
		{"unknown code", func(t *testing.T, f *accessFixture, p *Program) (string, string, []string) {
			f.invite(t, p, email, true)
			return unusedInvitationCode(t), "user_a", []string{email}
		}},
		{"expired", func(t *testing.T, f *accessFixture, p *Program) (string, string, []string) {
			code, _, _ := f.invite(t, p, email, true)
			f.clock.Add(7 * 24 * time.Hour) // exactly at expires_at: no longer valid
			return code, "user_a", []string{email}
		}},
		{"revoked", func(t *testing.T, f *accessFixture, p *Program) (string, string, []string) {
			code, _, invID := f.invite(t, p, email, true)
			if _, err := f.db.RevokeInvitation(ctx, f.owner, invID); err != nil {
				t.Fatal(err)
			}
			return code, "user_a", []string{email}
		}},
		{"replayed", func(t *testing.T, f *accessFixture, p *Program) (string, string, []string) {
			code, _, _ := f.invite(t, p, email, true)
			if _, err := f.db.Redeem(ctx, "user_a", []string{email}, code); err != nil {
				t.Fatal(err)
			}
			return code, "user_a", []string{email}
		}},
		{"replayed by another account", func(t *testing.T, f *accessFixture, p *Program) (string, string, []string) {
			code, _, _ := f.invite(t, p, email, true)
			if _, err := f.db.Redeem(ctx, "user_a", []string{email}, code); err != nil {
				t.Fatal(err)
			}
			return code, "user_b", []string{email}
		}},
		{"wrong email", func(t *testing.T, f *accessFixture, p *Program) (string, string, []string) {
			code, _, _ := f.invite(t, p, email, true)
			return code, "user_other", []string{"someone.else@example.com"}
		}},
		{"same address with another local-part case", func(t *testing.T, f *accessFixture, p *Program) (string, string, []string) {
			code, _, _ := f.invite(t, p, email, true)
			return code, "user_a", []string{"Invitee@example.com"}
		}},
		{"no verified email", func(t *testing.T, f *accessFixture, p *Program) (string, string, []string) {
			code, _, _ := f.invite(t, p, email, true)
			return code, "user_a", nil
		}},
		{"missing delivery record", func(t *testing.T, f *accessFixture, p *Program) (string, string, []string) {
			code, _, _ := f.invite(t, p, email, false)
			return code, "user_a", []string{email}
		}},
		{"withdrawn entry", func(t *testing.T, f *accessFixture, p *Program) (string, string, []string) {
			code, _, _ := f.invite(t, p, email, true)
			if _, err := f.db.WithdrawOwn(ctx, p.Slug, "user_a", []string{email}); err != nil {
				t.Fatal(err)
			}
			return code, "user_a", []string{email}
		}},
		{"workspace inactive", func(t *testing.T, f *accessFixture, p *Program) (string, string, []string) {
			code, _, _ := f.invite(t, p, email, true)
			mustUpdate(t, f.db, func(tx *Tx) error {
				_, err := tx.ExecContext(ctx, `UPDATE workspaces SET active = 0 WHERE id = ?`, p.WorkspaceID)
				return err
			})
			return code, "user_a", []string{email}
		}},
		{"program retired", func(t *testing.T, f *accessFixture, p *Program) (string, string, []string) {
			code, _, _ := f.invite(t, p, email, true)
			cur := mustProgramByID(t, f.db, f.owner, p.ID)
			if _, err := f.db.RetireProgram(ctx, f.owner, p.ID, Retirement{ExpectedRevision: cur.Revision, Confirm: cur.Slug}); err != nil {
				t.Fatalf("retire: %v", err)
			}
			return code, "user_a", []string{email}
		}},
		{"account already holds a grant in the program", func(t *testing.T, f *accessFixture, p *Program) (string, string, []string) {
			f.grant(t, p, "first@example.com", "user_a")
			code, _, _ := f.invite(t, p, email, true)
			return code, "user_a", []string{"first@example.com", email}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustAccessFixture(t)
			p := f.program(t, "gate", "Private text.")
			code, user, emails := tc.prepare(t, f, p)
			before := dbFingerprint(t, f.db)
			red, err := f.db.Redeem(ctx, user, emails, code)
			wantCode(t, "redeem", err, ENOTFOUND)
			if red != nil {
				t.Fatal("a failed redemption returned a redemption")
			}
			if got, want := ErrorMessage(err), "Not found."; got != want {
				t.Fatalf("message %q, want the generic %q", got, want)
			}
			wantUnchanged(t, "a failed redemption", f.db, before)
		})
	}
}

func TestRedeem_ValidOneMillisecondBeforeExpiry(t *testing.T) {
	f := mustAccessFixture(t)
	p := f.program(t, "edge", "Private text.")
	code, _, _ := f.invite(t, p, "edge@example.com", true)
	f.clock.Add(7*24*time.Hour - time.Millisecond)
	if _, err := f.db.Redeem(context.Background(), "user_edge", []string{"edge@example.com"}, code); err != nil {
		t.Fatalf("redeem just before expiry: %v", err)
	}
}

func TestRedeem_MalformedCodeIsInvalid(t *testing.T) {
	f := mustAccessFixture(t)
	good := unusedInvitationCode(t)
	for _, code := range []string{"", good[:42], good + "A", strings.Repeat("=", 43), good[:42] + "+", good[:42] + "/",
		base64.RawURLEncoding.EncodeToString(make([]byte, 31)) + "AA"} {
		_, err := f.db.Redeem(context.Background(), "user_a", []string{"a@example.com"}, code)
		wantCode(t, fmt.Sprintf("redeem %q", code), err, EINVALID)
	}
}

func TestPrivateRead_GrantForOneProgramNeverOpensAnother(t *testing.T) {
	f := mustAccessFixture(t)
	ctx := context.Background()
	a := f.program(t, "program-a", "Alpha private text.")
	b := f.program(t, "program-b", "Beta private text.")
	f.asset(t, a, "map.png", "image/png", []byte("alpha image bytes"))
	f.asset(t, b, "map.png", "image/png", []byte("beta image bytes"))

	// One account holds a grant in both programs; each grant is revoked in
	// turn for a different account, so both directions are checked.
	for _, tc := range []struct {
		user, email     string
		revoke, survive *Program
		surviveBody     string
		surviveAsset    string
	}{
		{"user_x", "x@example.com", b, a, "Alpha private text.", "alpha image bytes"},
		{"user_y", "y@example.com", a, b, "Beta private text.", "beta image bytes"},
	} {
		emails := []string{tc.email}
		grantA := f.grant(t, a, tc.email, tc.user)
		grantB := f.grant(t, b, tc.email, tc.user)
		wantPrivateReadable(t, f.db, a, tc.user, emails, "Alpha private text.")
		wantPrivateReadable(t, f.db, b, tc.user, emails, "Beta private text.")
		for p, want := range map[*Program]string{a: "alpha image bytes", b: "beta image bytes"} {
			got, err := f.db.ReadPrivateAsset(ctx, p.Slug, "map.png", tc.user, emails)
			if err != nil || string(got.Data) != want {
				t.Fatalf("%s asset of %s: %v, want %q", tc.user, p.Slug, err, want)
			}
		}

		revoke := grantA
		if tc.revoke == b {
			revoke = grantB
		}
		if _, err := f.db.RevokeGrant(ctx, f.owner, revoke); err != nil {
			t.Fatalf("revoke: %v", err)
		}
		// The other program's active grant does not open the revoked one.
		wantPrivateDenied(t, f.db, tc.revoke, "map.png", tc.user, emails)
		wantPrivateReadable(t, f.db, tc.survive, tc.user, emails, tc.surviveBody)
		got, err := f.db.ReadPrivateAsset(ctx, tc.survive.Slug, "map.png", tc.user, emails)
		if err != nil || string(got.Data) != tc.surviveAsset {
			t.Fatalf("%s surviving asset: %v", tc.user, err)
		}
	}

	// An account with a grant only in A is denied at B, and the reverse.
	f.grant(t, a, "only-a@example.com", "user_only_a")
	f.grant(t, b, "only-b@example.com", "user_only_b")
	wantPrivateDenied(t, f.db, b, "map.png", "user_only_a", []string{"only-a@example.com"})
	wantPrivateDenied(t, f.db, a, "map.png", "user_only_b", []string{"only-b@example.com"})
	wantPrivateReadable(t, f.db, a, "user_only_a", []string{"only-a@example.com"}, "Alpha private text.")
	wantPrivateReadable(t, f.db, b, "user_only_b", []string{"only-b@example.com"}, "Beta private text.")
}

func TestPrivateRead_RevokedGrantDeniesTheNextRead(t *testing.T) {
	f := mustAccessFixture(t)
	p := f.program(t, "revoke", "Private text.")
	f.asset(t, p, "doc.pdf", "application/pdf", []byte("%PDF-1.4 private"))
	emails := []string{"r@example.com"}
	g := f.grant(t, p, "r@example.com", "user_r")
	wantPrivateReadable(t, f.db, p, "user_r", emails, "Private text.")
	if _, err := f.db.RevokeGrant(context.Background(), f.owner, g); err != nil {
		t.Fatal(err)
	}
	wantPrivateDenied(t, f.db, p, "doc.pdf", "user_r", emails)
}

func TestPrivateRead_EveryGateFactIsChecked(t *testing.T) {
	const email = "g@example.com"
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		user   string
		emails []string
		change func(t *testing.T, f *accessFixture, p *Program)
	}{
		{"verified email no longer held", "user_g", []string{"new-address@example.com"}, nil},
		{"no verified email", "user_g", nil, nil},
		{"another account with the same verified email", "user_h", []string{email}, nil},
		{"access disabled", "user_g", []string{email}, func(t *testing.T, f *accessFixture, p *Program) {
			mustSetProgram(t, f.db, f.owner, p.ID, func(s *ProgramSettings) { s.AccessEnabled = ptrTo(false) })
		}},
		{"workspace inactive", "user_g", []string{email}, func(t *testing.T, f *accessFixture, p *Program) {
			mustUpdate(t, f.db, func(tx *Tx) error {
				_, err := tx.ExecContext(ctx, `UPDATE workspaces SET active = 0 WHERE id = ?`, p.WorkspaceID)
				return err
			})
		}},
		{"entry withdrawn", "user_g", []string{email}, func(t *testing.T, f *accessFixture, p *Program) {
			if _, err := f.db.WithdrawOwn(ctx, p.Slug, "user_g", []string{email}); err != nil {
				t.Fatal(err)
			}
		}},
		// The grant and the entry are checked each on its own: every
		// operation ends both together, so each is changed here alone.
		{"grant inactive, its entry still active", "user_g", []string{email}, func(t *testing.T, f *accessFixture, p *Program) {
			mustUpdate(t, f.db, func(tx *Tx) error {
				_, err := tx.ExecContext(ctx, `UPDATE grants SET active = 0, revoked_at = 1 WHERE program_id = ?`, p.ID)
				return err
			})
			wantEntryState(t, f.db, p, email, StateActive)
		}},
		{"entry no longer active, its grant still active", "user_g", []string{email}, func(t *testing.T, f *accessFixture, p *Program) {
			mustUpdate(t, f.db, func(tx *Tx) error {
				_, err := tx.ExecContext(ctx, `UPDATE entries SET state = 'revoked' WHERE program_id = ? AND email_key = ?`, p.ID, email)
				return err
			})
			if n := mustCount(t, f.db, `SELECT count(*) FROM grants WHERE program_id = ? AND active = 1`, p.ID); n != 1 {
				t.Fatalf("active grants=%d, want the grant still active", n)
			}
		}},
		{"malformed slug", "user_g", []string{email}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustAccessFixture(t)
			p := f.program(t, "gated", "Private text.")
			f.asset(t, p, "pic.png", "image/png", []byte("png bytes"))
			f.grant(t, p, email, "user_g")
			wantPrivateReadable(t, f.db, p, "user_g", []string{email}, "Private text.")
			if tc.change != nil {
				tc.change(t, f, p)
			}
			target := p
			if tc.name == "malformed slug" {
				target = &Program{Slug: "Gated"}
			}
			wantPrivateDenied(t, f.db, target, "pic.png", tc.user, tc.emails)
		})
	}
}

func TestWithdrawOwn_EndsAPendingInvitationAndIsStable(t *testing.T) {
	f := mustAccessFixture(t)
	ctx := context.Background()
	p := f.program(t, "leave", "Private text.")
	const email = "leaver@example.com"
	code, entryID, invID := f.invite(t, p, email, true)

	e, err := f.db.WithdrawOwn(ctx, p.Slug, "user_l", []string{"unrelated@example.com", email})
	if err != nil {
		t.Fatalf("withdraw: %v", err)
	}
	if got, want := e.State, StateWithdrawn; got != want || e.Slug != p.Slug {
		t.Fatalf("withdraw answered %s %s, want %s %s", e.Slug, got, p.Slug, want)
	}
	if got, want := mustCount(t, f.db, `SELECT count(*) FROM invitations WHERE id = ? AND state = 'revoked'`, invID), 1; got != want {
		t.Fatal("the pending invitation was not revoked in the withdrawal")
	}
	_, err = f.db.Redeem(ctx, "user_l", []string{email}, code)
	wantCode(t, "redeem after withdrawal", err, ENOTFOUND)

	// Repeating gives the same answer and writes nothing.
	before := dbFingerprint(t, f.db)
	again, err := f.db.WithdrawOwn(ctx, p.Slug, "user_l", []string{email})
	if err != nil || *again != *e {
		t.Fatalf("repeat withdraw: %+v %v, want %+v", again, err, e)
	}
	wantUnchanged(t, "a repeated withdrawal", f.db, before)
	types, _ := entryEvents(t, f.db, entryID)
	if got, want := strings.Count(strings.Join(types, ","), "withdrawn"), 1; got != want {
		t.Fatalf("withdrawn events=%d, want %d (%v)", got, want, types)
	}
}

func TestWithdrawOwn_RevokesAnActiveGrant(t *testing.T) {
	f := mustAccessFixture(t)
	ctx := context.Background()
	p := f.program(t, "leave-active", "Private text.")
	emails := []string{"active@example.com"}
	g := f.grant(t, p, emails[0], "user_act")
	if _, err := f.db.WithdrawOwn(ctx, p.Slug, "user_act", emails); err != nil {
		t.Fatal(err)
	}
	if got, want := mustCount(t, f.db, `SELECT count(*) FROM grants WHERE id = ? AND active = 0 AND revoked_at IS NOT NULL`, g), 1; got != want {
		t.Fatal("the active grant survived the withdrawal")
	}
	wantPrivateDenied(t, f.db, p, "", "user_act", emails)
}

func TestWithdrawOwn_NoMatchIsNotFound(t *testing.T) {
	f := mustAccessFixture(t)
	ctx := context.Background()
	p := f.program(t, "nomatch", "Private text.")
	f.invite(t, p, "member@example.com", true)
	other := f.program(t, "other-program", "Other text.")
	before := dbFingerprint(t, f.db)
	for _, tc := range []struct {
		slug   string
		emails []string
	}{
		{p.Slug, []string{"stranger@example.com"}},
		{p.Slug, nil},
		{other.Slug, []string{"member@example.com"}},
		{"no-such-program", []string{"member@example.com"}},
		{"Not A Slug", []string{"member@example.com"}},
	} {
		_, err := f.db.WithdrawOwn(ctx, tc.slug, "user_m", tc.emails)
		wantCode(t, fmt.Sprintf("withdraw %s %v", tc.slug, tc.emails), err, ENOTFOUND)
	}
	wantUnchanged(t, "withdrawals that match nothing", f.db, before)
}

// The content lists its program's assets, and only those: by name, with
// their type, size and upload time, and none when there are none.
func TestPrivateRead_ListsTheProgramsAssetsByName(t *testing.T) {
	f := mustAccessFixture(t)
	a := f.program(t, "assets-a", "Alpha.")
	b := f.program(t, "assets-b", "Beta.")
	f.grant(t, a, "lister@example.com", "user_lister")
	f.grant(t, b, "lister@example.com", "user_lister")
	emails := []string{"lister@example.com"}
	c, err := f.db.ReadPrivateContent(context.Background(), b.Slug, "user_lister", emails)
	if err != nil || c.Assets != nil {
		t.Fatalf("program without assets: %+v, %v; want no assets", c, err)
	}

	uploaded := f.clock.Now()
	f.asset(t, a, "zeta.pdf", "application/pdf", []byte("%PDF-1.4 zeta"))
	f.clock.Add(time.Minute)
	f.asset(t, a, "Alpha_1.png", "image/png", bytes.Repeat([]byte{1}, 1000))
	f.asset(t, a, "beta.webp", "image/webp", []byte("webp"))
	f.asset(t, b, "other.png", "image/png", []byte("another program's file"))

	c, err = f.db.ReadPrivateContent(context.Background(), a.Slug, "user_lister", emails)
	if err != nil {
		t.Fatal(err)
	}
	later := uploaded.Add(time.Minute)
	want := []AssetInfo{
		{Name: "Alpha_1.png", ContentType: "image/png", Size: 1000, CreatedAt: later},
		{Name: "beta.webp", ContentType: "image/webp", Size: 4, CreatedAt: later},
		{Name: "zeta.pdf", ContentType: "application/pdf", Size: 13, CreatedAt: uploaded},
	}
	if !reflect.DeepEqual(c.Assets, want) {
		t.Fatalf("assets=%+v\nwant   %+v", c.Assets, want)
	}
}

// Redeem with limits counts the attempt and redeems in one transaction: a
// failed redemption keeps its counted attempts, an attempt over a limit is
// counted by no later limit and redeems nothing, and a good code both
// counts and grants.
func TestRedeem_LimitsCountInTheSameTransaction(t *testing.T) {
	f := mustAccessFixture(t)
	ctx := context.Background()
	p := f.program(t, "counted", "Counted.")
	code, _, _ := f.invite(t, p, "counted@example.com", true)
	emails := []string{"counted@example.com"}
	key := func(b byte) func(time.Time) []byte {
		return func(time.Time) []byte { return bytes.Repeat([]byte{b}, 32) }
	}
	account := AttemptLimit{Max: 3, Key: key(1)}
	network := AttemptLimit{Max: 5, Key: key(2)}
	counted := func() (int, int) {
		return mustCount(t, f.db, `SELECT coalesce(sum(attempts), 0) FROM network_counters WHERE key = ?`, key(1)(time.Time{})),
			mustCount(t, f.db, `SELECT coalesce(sum(attempts), 0) FROM network_counters WHERE key = ?`, key(2)(time.Time{}))
	}
	wantCounted := func(what string, a, n int) {
		t.Helper()
		if gotA, gotN := counted(); gotA != a || gotN != n {
			t.Fatalf("%s: counted account %d network %d, want %d and %d", what, gotA, gotN, a, n)
		}
	}

	// Two failures: not found, and counted by both limits.
	for range 2 {
		_, err := f.db.Redeem(ctx, "user_counted", emails, unusedInvitationCode(t), account, network)
		wantCode(t, "unknown code", err, ENOTFOUND)
	}
	wantCounted("after two failures", 2, 2)

	// The good code counts and grants.
	red, err := f.db.Redeem(ctx, "user_counted", emails, code, account, network)
	if err != nil {
		t.Fatalf("redeem: %v", err)
	}
	wantCounted("after the redemption", 3, 3)
	wantPrivateReadable(t, f.db, p, "user_counted", emails, "Counted.")
	if red.GrantID == "" {
		t.Fatal("no grant ID")
	}

	// The account is at its limit: refused, and the network does not count it.
	other, _, _ := f.invite(t, p, "second@example.com", true)
	_, err = f.db.Redeem(ctx, "user_counted", []string{"second@example.com"}, other, account, network)
	wantCode(t, "over the account limit", err, ERATELIMITED)
	wantCounted("after the account refusal", 3, 3)

	// Another account on the same network uses up the network's limit; then
	// even a good code is refused, counted by the account only, and grants
	// nothing.
	fresh := AttemptLimit{Max: 10, Key: key(3)}
	for range 2 {
		_, err := f.db.Redeem(ctx, "user_second", []string{"second@example.com"}, unusedInvitationCode(t), fresh, network)
		wantCode(t, "neighbour's failure", err, ENOTFOUND)
	}
	_, err = f.db.Redeem(ctx, "user_second", []string{"second@example.com"}, other, fresh, network)
	wantCode(t, "over the network limit", err, ERATELIMITED)
	if got := mustCount(t, f.db, `SELECT attempts FROM network_counters WHERE key = ?`, key(3)(time.Time{})); got != 3 {
		t.Fatalf("the second account counted %d attempts, want 3 (the refused one too: its limit comes first)", got)
	}
	wantCounted("after the network refusal", 3, 5)
	if got := mustCount(t, f.db, `SELECT count(*) FROM grants WHERE user_id = 'user_second'`); got != 0 {
		t.Fatalf("a refused redemption granted %d", got)
	}
}

// wantEntryState fails unless email's entry in p is in state.
func wantEntryState(t *testing.T, db *DB, p *Program, email, state string) {
	t.Helper()
	if n := mustCount(t, db, `SELECT count(*) FROM entries WHERE program_id = ? AND email_key = ? AND state = ?`, p.ID, email, state); n != 1 {
		t.Fatalf("entry %s is not %s", email, state)
	}
}
