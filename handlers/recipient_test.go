package handlers

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"admit/internal/identity"
	"admit/views"
)

// meRow returns the /me card of the program, or "".
func meRow(body, slug string) string {
	m := regexp.MustCompile(`(?s)<article class="entry-card" data-slug="` + regexp.QuoteMeta(slug) + `".*?</article>`).FindString(body)
	return m
}

func TestMe_ListsOwnEntriesWithStateOpenAndWithdrawLinks(t *testing.T) {
	app := MustStartApp(t)
	k := newAccessKit(app)
	const email = "member@example.com"
	beta := k.Program(t, "beta", "Beta text.")
	gamma := k.Program(t, "gamma", "Gamma text.")
	k.Grant(t, app.Demo, email, identity.DevUserID(email))
	k.Invite(t, beta, email, true)
	k.Entry(t, gamma, email)
	c := app.NewClient(t)
	c.SignIn(t, email)
	c.CSRF(t)
	if r := c.PostJSON(t, "POST", "/api/me/waitlist/gamma/withdraw", `{}`); r.StatusCode != http.StatusOK {
		t.Fatalf("withdraw gamma: %d", r.StatusCode)
	}
	// Someone else's entry never shows.
	k.Entry(t, beta, "stranger@example.com")

	r := c.Get(t, "/me")
	if got, want := r.StatusCode, http.StatusOK; got != want {
		t.Fatalf("status=%d, want %d", got, want)
	}
	if strings.Contains(r.Body, "stranger@example.com") {
		t.Fatal("/me shows another person's entry")
	}
	if !strings.Contains(meRow(r.Body, "demo"), `<h2 id="entry-demo">`+app.Demo.Name+`</h2>`) {
		t.Error("the demo card is not headed by the program's name")
	}
	for _, tc := range []struct {
		slug, state string
		want, not   []string
	}{
		{"demo", "active", []string{`href="/early-access/demo"`, `href="/me/waitlist/demo/withdraw"`}, []string{`href="/redeem"`}},
		{"beta", "invited", []string{`data-testid="redeem-link"`, `href="/me/waitlist/beta/withdraw"`}, []string{`href="/early-access/beta"`}},
		{"gamma", "withdrawn", nil, []string{`href="/me/waitlist/gamma/withdraw"`, `href="/early-access/gamma"`}},
	} {
		row := meRow(r.Body, tc.slug)
		if row == "" {
			t.Fatalf("/me has no row for %s", tc.slug)
		}
		if !strings.Contains(row, `data-state="`+tc.state+`"`) {
			t.Errorf("%s row does not show state %s", tc.slug, tc.state)
		}
		// Status and next step first, in words, under the program's name.
		e := views.MyEntry{State: tc.state, AccessEnabled: true, InvitationSent: true}
		next := `data-testid="entry-next">` + e.Next() + `</p>`
		if tc.state == "withdrawn" {
			// A withdrawn entry's next step names its own erasure date.
			next = `data-testid="entry-next">You left this waitlist. This address cannot join it again until the address is erased on `
		}
		for _, want := range []string{`>` + e.StateWords() + `</span>`, next} {
			if !strings.Contains(row, want) {
				t.Errorf("%s card lacks %s", tc.slug, want)
			}
		}
		for _, w := range tc.want {
			if !strings.Contains(row, w) {
				t.Errorf("%s row lacks %s", tc.slug, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(row, n) {
				t.Errorf("%s row has %s", tc.slug, n)
			}
		}
	}
}

func TestWithdraw_ConfirmPageChangesNothingAndTheFormWithdraws(t *testing.T) {
	app := MustStartApp(t)
	k := newAccessKit(app)
	const email = "leaving@example.com"
	k.Grant(t, app.Demo, email, identity.DevUserID(email))
	c := app.NewClient(t)
	c.SignIn(t, email)
	tok := c.CSRF(t)

	before := dbFingerprint(t, app.DB)
	confirm := c.Get(t, "/me/waitlist/demo/withdraw")
	if got, want := confirm.StatusCode, http.StatusOK; got != want {
		t.Fatalf("confirm page status=%d, want %d", got, want)
	}
	for _, want := range []string{`action="/me/waitlist/demo/withdraw"`, `name="csrf" value="` + tok + `"`, `state-active`} {
		if !strings.Contains(confirm.Body, want) {
			t.Errorf("confirm page lacks %s", want)
		}
	}
	if after := dbFingerprint(t, app.DB); !sameRows(before, after) {
		t.Fatal("showing the confirmation page changed the database")
	}
	if r := c.Get(t, "/early-access/demo"); r.StatusCode != http.StatusOK {
		t.Fatalf("before withdrawal the private page is %d", r.StatusCode)
	}

	r := c.PostForm(t, "/me/waitlist/demo/withdraw", url.Values{"csrf": {tok}})
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/me" {
		t.Fatalf("withdraw form: %d Location %q, want 303 to /me", r.StatusCode, r.Header.Get("Location"))
	}
	if r := c.Get(t, "/api/me/waitlist/demo"); !strings.Contains(r.Body, `"state":"withdrawn"`) {
		t.Fatalf("after withdrawal: %s", r.Body)
	}
	// The active grant ended with it.
	if r := c.Get(t, "/early-access/demo"); r.StatusCode != http.StatusNotFound {
		t.Fatalf("after withdrawal the private page is %d, want 404", r.StatusCode)
	}
	// Repeating is the same answer.
	if r := c.PostForm(t, "/me/waitlist/demo/withdraw", url.Values{"csrf": {tok}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("repeat withdraw form: %d, want 303", r.StatusCode)
	}
	again := c.Get(t, "/me/waitlist/demo/withdraw")
	if !strings.Contains(again.Body, `data-testid="already-withdrawn"`) || strings.Contains(again.Body, `data-testid="withdraw-form"`) {
		t.Fatal("the confirmation page of a withdrawn entry still offers to withdraw")
	}
}

func TestWithdrawAPI_ReturnsWithdrawnAndRepeatsTheSameAnswer(t *testing.T) {
	app := MustStartApp(t)
	k := newAccessKit(app)
	k.Entry(t, app.Demo, "api-leaver@example.com")
	c := app.NewClient(t)
	c.SignIn(t, "api-leaver@example.com")
	c.CSRF(t)
	const want = "{\"program\":\"demo\",\"state\":\"withdrawn\"}\n"
	for i, body := range []string{`{}`, `{}`, ``} {
		r := c.PostJSON(t, "POST", "/api/me/waitlist/demo/withdraw", body)
		if r.StatusCode != http.StatusOK || r.Body != want {
			t.Fatalf("withdraw %d (body %q): %d %q, want 200 %q", i+1, body, r.StatusCode, r.Body, want)
		}
		if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
			t.Fatalf("Cache-Control=%q", got)
		}
	}
	if r := c.PostJSON(t, "POST", "/api/me/waitlist/demo/withdraw", `{"reason":"x"}`); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("body with a field: %d, want 400", r.StatusCode)
	}
}

func TestWithdraw_PendingInvitationCanNoLongerBeRedeemed(t *testing.T) {
	app := MustStartApp(t)
	inv := newAccessKit(app).Invite(t, app.Demo, "changed-mind@example.com", true)
	c := app.NewClient(t)
	c.SignIn(t, "changed-mind@example.com")
	c.CSRF(t)
	if r := c.PostJSON(t, "POST", "/api/me/waitlist/demo/withdraw", `{}`); r.StatusCode != http.StatusOK {
		t.Fatalf("withdraw: %d %s", r.StatusCode, r.Body)
	}
	r := c.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(inv.Code))
	if r.StatusCode != http.StatusNotFound || r.Body != deniedJSON {
		t.Fatalf("redeem after withdrawal: %d %q, want 404", r.StatusCode, r.Body)
	}
	if got := grantCount(t, app.DB, app.Demo.ID); got != 0 {
		t.Fatalf("grants=%d after redeeming a withdrawn entry's code", got)
	}
}

func TestWithdraw_NoMatchingEntryIs404AndChangesNothing(t *testing.T) {
	app := MustStartApp(t)
	k := newAccessKit(app)
	k.Program(t, "beta", "Beta text.")
	k.Entry(t, app.Demo, "someone@example.com")
	c := app.NewClient(t)
	c.SignIn(t, "nobody@example.com")
	tok := c.CSRF(t)
	before := dbFingerprint(t, app.DB)
	missing := c.PostJSON(t, "POST", "/api/me/waitlist/no-such-program/withdraw", `{}`)
	for _, slug := range []string{"demo", "beta", "no-such-program"} {
		r := c.PostJSON(t, "POST", "/api/me/waitlist/"+slug+"/withdraw", `{}`)
		if r.StatusCode != http.StatusNotFound || r.Body != missing.Body || r.Body != deniedJSON {
			t.Errorf("withdraw %s: %d %q, want the generic 404", slug, r.StatusCode, r.Body)
		}
		if f := c.PostForm(t, "/me/waitlist/"+slug+"/withdraw", url.Values{"csrf": {tok}}); f.StatusCode != http.StatusNotFound {
			t.Errorf("withdraw form %s: %d, want 404", slug, f.StatusCode)
		}
		if g := c.Get(t, "/me/waitlist/"+slug+"/withdraw"); g.StatusCode != http.StatusNotFound {
			t.Errorf("confirm page %s: %d, want 404", slug, g.StatusCode)
		}
	}
	if after := dbFingerprint(t, app.DB); !sameRows(before, after) {
		t.Fatal("withdrawals that matched nothing changed the database")
	}
}

func TestWithdraw_WithoutCSRFIs403AndChangesNothing(t *testing.T) {
	app := MustStartApp(t)
	newAccessKit(app).Entry(t, app.Demo, "kept@example.com")
	c := app.NewClient(t)
	c.SignIn(t, "kept@example.com")
	// Signing in stores a session; the refusals below store nothing.
	other := app.NewClient(t)
	other.SignIn(t, "attacker@example.com")
	before := dbFingerprint(t, app.DB)
	if r := c.PostForm(t, "/me/waitlist/demo/withdraw", url.Values{}); r.StatusCode != http.StatusForbidden {
		t.Fatalf("form without token: %d, want 403", r.StatusCode)
	}
	if r := c.PostJSON(t, "POST", "/api/me/waitlist/demo/withdraw", `{}`); r.StatusCode != http.StatusForbidden {
		t.Fatalf("JSON without token: %d, want 403", r.StatusCode)
	}
	if r := c.PostForm(t, "/me/waitlist/demo/withdraw", url.Values{"csrf": {other.CSRF(t)}}); r.StatusCode != http.StatusForbidden {
		t.Fatalf("form with another session's token: %d, want 403", r.StatusCode)
	}
	if after := dbFingerprint(t, app.DB); !sameRows(before, after) {
		t.Fatal("refused withdrawals changed the database")
	}
	if r := c.Get(t, "/api/me/waitlist/demo"); !strings.Contains(r.Body, `"state":"waiting"`) {
		t.Fatalf("entry after refused withdrawals: %s", r.Body)
	}
}
