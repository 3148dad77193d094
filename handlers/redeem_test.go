package handlers

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"admit/internal/clerkfake"
	"admit/store"
)

// grantCount counts the grants of a program.
func grantCount(tb testing.TB, db *store.DB, programID string) int {
	tb.Helper()
	var n int
	err := db.View(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT count(*) FROM grants WHERE program_id = ?`, programID).Scan(&n)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// unknownCode is a well-formed code that matches no invitation.
func unknownCode(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// redeemJSONBody is the JSON body of a redemption.
func redeemJSONBody(code string) string { return `{"code":"` + code + `"}` }

// withoutToken removes the client's CSRF token from a page so pages of two
// sessions can be compared byte for byte.
// signedInAsLine is the navigation's "Signed in as" item.
var signedInAsLine = regexp.MustCompile(`<li class="signed-in-as"[^>]*>.*?</li>`)

func withoutToken(body, token string) string {
	if token == "" {
		return body
	}
	return strings.ReplaceAll(body, token, "CSRF")
}

const (
	deniedJSON    = "{\"error\":\"not_found\"}\n"
	rateLimitJSON = "{\"error\":\"rate_limited\"}\n"
)

func TestRedeemPage_SignedOutExplainsAndLinksToSignInBackToRedeem(t *testing.T) {
	app := MustStartApp(t)
	r := app.NewClient(t).Get(t, "/redeem")
	if got, want := r.StatusCode, http.StatusOK; got != want {
		t.Fatalf("status=%d, want %d", got, want)
	}
	checkSecurityHeaders(t, "/redeem", r)
	if got, want := r.Header.Get("Cache-Control"), "private, no-store"; got != want {
		t.Errorf("Cache-Control=%q, want %q", got, want)
	}
	for _, want := range []string{`data-testid="redeem-signed-out"`, `href="/sign-in?redirect_url=%2Fredeem"`} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("signed-out /redeem lacks %s", want)
		}
	}
	if strings.Contains(r.Body, `name="code"`) {
		t.Error("signed-out /redeem shows the code field")
	}
}

func TestRedeemPage_SignedInShowsAPostFormWithCSRFAndNoCodeInAnyURL(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	c.SignIn(t, "reader@example.com")
	tok := c.CSRF(t)
	r := c.Get(t, "/redeem")
	if got, want := r.StatusCode, http.StatusOK; got != want {
		t.Fatalf("status=%d, want %d", got, want)
	}
	for _, want := range []string{`<form method="post" action="/redeem"`, `name="csrf" value="` + tok + `"`, `name="code"`} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("/redeem lacks %s", want)
		}
	}
	if strings.Contains(r.Body, `method="get"`) {
		t.Error("/redeem has a GET form: the code would travel in a URL")
	}
}

func TestRedeemForm_RedirectsToThePrivatePageAndNoResponseOrLogHoldsTheCode(t *testing.T) {
	app := MustStartApp(t)
	k := newAccessKit(app)
	inv := k.Invite(t, app.Demo, "reader@example.com", true)

	c := app.NewClient(t)
	c.SignIn(t, "reader@example.com")
	c.CSRF(t)
	var seen []*testResponse
	seen = append(seen, c.Get(t, "/redeem"))
	// A pasted code may bring white space along; the form trims it.
	post := c.RedeemForm(t, " "+inv.Code+"\n")
	seen = append(seen, post)
	if got, want := post.StatusCode, http.StatusSeeOther; got != want {
		t.Fatalf("POST /redeem status=%d, want %d: %s", got, want, post.Body)
	}
	if got, want := post.Header.Get("Location"), "/early-access/demo"; got != want {
		t.Fatalf("Location=%q, want %q", got, want)
	}
	if got, want := post.Header.Get("Cache-Control"), "private, no-store"; got != want {
		t.Errorf("POST /redeem Cache-Control=%q, want %q", got, want)
	}
	page := c.Get(t, "/early-access/demo")
	seen = append(seen, page, c.Get(t, "/me"), c.Get(t, "/api/me/early-access/demo"), c.Get(t, "/api/me/waitlist/demo"))
	if got, want := page.StatusCode, http.StatusOK; got != want {
		t.Fatalf("private page status=%d, want %d", got, want)
	}
	if !strings.Contains(page.Body, "Welcome to the admit demo.") {
		t.Fatal("the private page does not show the demo's private text")
	}
	if got, want := grantCount(t, app.DB, app.Demo.ID), 1; got != want {
		t.Fatalf("grants=%d, want %d", got, want)
	}
	// The replay is the generic 404 and has no code either.
	seen = append(seen, c.RedeemForm(t, inv.Code), c.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(inv.Code)))
	for i, r := range seen {
		if strings.Contains(r.Body, inv.Code) {
			t.Errorf("response %d holds the code", i)
		}
		for name, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, inv.Code) {
					t.Errorf("response %d header %s holds the code", i, name)
				}
			}
		}
	}
	if strings.Contains(app.Logs.String(), inv.Code) {
		t.Fatal("a log line holds the code")
	}
	if !strings.Contains(app.Logs.String(), "POST /redeem") {
		t.Fatal("the request log did not record the redemption at all: the log check proves nothing")
	}
}

func TestRedeemAPI_Returns200ActiveOnceAndTheReplayIsTheGeneric404(t *testing.T) {
	app := MustStartApp(t)
	inv := newAccessKit(app).Invite(t, app.Demo, "api@example.com", true)
	c := app.NewClient(t)
	c.SignIn(t, "api@example.com")
	c.CSRF(t)
	r := c.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(inv.Code))
	if got, want := r.StatusCode, http.StatusOK; got != want {
		t.Fatalf("status=%d, want %d: %s", got, want, r.Body)
	}
	if got, want := r.Body, "{\"program\":\"demo\",\"state\":\"active\"}\n"; got != want {
		t.Fatalf("body=%q, want %q", got, want)
	}
	if got, want := r.Header.Get("Cache-Control"), "private, no-store"; got != want {
		t.Errorf("Cache-Control=%q, want %q", got, want)
	}
	again := c.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(inv.Code))
	if again.StatusCode != http.StatusNotFound || again.Body != deniedJSON {
		t.Fatalf("replay: %d %q, want 404 %q", again.StatusCode, again.Body, deniedJSON)
	}
	if got, want := grantCount(t, app.DB, app.Demo.ID), 1; got != want {
		t.Fatalf("grants=%d, want %d", got, want)
	}
}

func TestRedeem_EveryFailureIsTheSameGeneric404(t *testing.T) {
	app := MustStartApp(t, withClerk())
	k := newAccessKit(app)
	ctx := context.Background()

	type attempt struct {
		name   string
		client *testClient
		code   string
	}
	// shown is the address each person's pages name: their first
	// verified one.
	shown := map[*testClient]string{}
	signedIn := func(userID string, emails ...clerkfake.Email) *testClient {
		app.Clerk.SetUser(userID, emails...)
		c := app.NewClient(t)
		c.SetClerkSession(t, userID)
		c.CSRF(t)
		for _, e := range emails {
			if e.Verified {
				shown[c] = e.Address
				break
			}
		}
		return c
	}
	verified := func(addr string) clerkfake.Email { return clerkfake.Email{Address: addr, Verified: true} }
	var cases []attempt

	k.Invite(t, app.Demo, "unknown@example.com", true)
	cases = append(cases, attempt{"unknown code", signedIn("user_unknown", verified("unknown@example.com")), unknownCode(t)})

	inv := k.Invite(t, app.Demo, "revoked@example.com", true)
	if _, err := app.DB.RevokeInvitation(ctx, k.Owner, inv.ID); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, attempt{"revoked", signedIn("user_revoked", verified("revoked@example.com")), inv.Code})

	inv = k.Invite(t, app.Demo, "replayed@example.com", true)
	if _, err := app.DB.Redeem(ctx, "user_replayed", []string{"replayed@example.com"}, inv.Code); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, attempt{"replayed", signedIn("user_replayed", verified("replayed@example.com")), inv.Code})

	inv = k.Invite(t, app.Demo, "intended@example.com", true)
	cases = append(cases, attempt{"wrong email", signedIn("user_wrong", verified("someone-else@example.com")), inv.Code})

	inv = k.Invite(t, app.Demo, "unverified@example.com", true)
	cases = append(cases, attempt{"unverified email", signedIn("user_unverified",
		clerkfake.Email{Address: "unverified@example.com"}, verified("other@example.com")), inv.Code})

	inv = k.Invite(t, app.Demo, "withdrawn@example.com", true)
	if _, err := app.DB.WithdrawOwn(ctx, "demo", "user_withdrawn", []string{"withdrawn@example.com"}); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, attempt{"withdrawn entry", signedIn("user_withdrawn", verified("withdrawn@example.com")), inv.Code})

	// Expired last: it moves the clock past every other invitation's expiry too.
	inv = k.Invite(t, app.Demo, "expired@example.com", true)
	expired := attempt{"expired", signedIn("user_expired", verified("expired@example.com")), inv.Code}
	cases = append(cases, expired)

	before := dbFingerprint(t, app.DB)
	grantsBefore := grantCount(t, app.DB, app.Demo.ID)
	var formBody string
	for _, tc := range cases {
		if tc.name == "expired" {
			app.Clock.Add(7 * 24 * time.Hour)
		}
		r := tc.client.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(tc.code))
		if r.StatusCode != http.StatusNotFound || r.Body != deniedJSON {
			t.Errorf("%s: JSON %d %q, want 404 %q", tc.name, r.StatusCode, r.Body, deniedJSON)
		}
		f := tc.client.RedeemForm(t, tc.code)
		if got, want := f.StatusCode, http.StatusNotFound; got != want {
			t.Errorf("%s: form status=%d, want %d", tc.name, got, want)
		}
		if !strings.Contains(f.Body, redeemDeniedMessage) || strings.Contains(f.Body, tc.code) {
			t.Errorf("%s: the form page lacks the generic message or echoes the code", tc.name)
		}
		// The refusal names the address the person is signed in with.
		if want := redeemDeniedMessage + " with the address you are signed in with, " + shown[tc.client] + "."; !strings.Contains(f.Body, want) {
			t.Errorf("%s: the form page does not say %q", tc.name, want)
		}
		// Each case is another person: the page names them, and only them.
		body := signedInAsLine.ReplaceAllString(withoutToken(f.Body, tc.client.CSRFToken), "")
		body = strings.ReplaceAll(body, shown[tc.client], "ADDRESS")
		if formBody == "" {
			formBody = body
		} else if body != formBody {
			t.Errorf("%s: the form's 404 page differs from the first case's", tc.name)
		}
	}
	if got := grantCount(t, app.DB, app.Demo.ID); got != grantsBefore {
		t.Fatalf("grants %d → %d after failed redemptions", grantsBefore, got)
	}
	after := dbFingerprint(t, app.DB)
	delete(before, "network_counters")
	delete(after, "network_counters")
	if !sameRows(before, after) {
		t.Fatalf("failed redemptions changed the database:\n%v\n%v", before, after)
	}

	// Control: with nothing wrong, the same path grants.
	ok := k.Invite(t, app.Demo, "fine@example.com", true)
	c := signedIn("user_fine", verified("fine@example.com"))
	if r := c.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(ok.Code)); r.StatusCode != http.StatusOK {
		t.Fatalf("control redemption: %d %s", r.StatusCode, r.Body)
	}
}

func TestRedeem_MalformedCodeIs400AndCountsNoAttempt(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	c.SignIn(t, "shape@example.com")
	c.CSRF(t)
	good := unknownCode(t)
	before := dbFingerprint(t, app.DB)
	for _, code := range []string{"", good[:42], good + "A", good[:42] + "=", good[:42] + "+", good[:42] + "/", " " + good} {
		r := c.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(code))
		if r.StatusCode != http.StatusBadRequest || r.Body != "{\"error\":\"invalid\"}\n" {
			t.Errorf("JSON code %q: %d %q, want 400", code, r.StatusCode, r.Body)
		}
	}
	f := c.RedeemForm(t, good[:40])
	if got, want := f.StatusCode, http.StatusBadRequest; got != want {
		t.Fatalf("form status=%d, want %d", got, want)
	}
	if !strings.Contains(f.Body, codeShapeMessage) || strings.Contains(f.Body, good[:40]) {
		t.Fatal("the form lacks the shape message or echoes the code")
	}
	if r := c.PostJSON(t, "POST", "/api/me/invitations/redeem", `{"code":"`+good+`","email":"x@example.com"}`); r.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown field: %d, want 400", r.StatusCode)
	}
	if r := c.Do(t, "POST", "/api/me/invitations/redeem", "text/plain", strings.NewReader(redeemJSONBody(good)), "X-CSRF-Token", c.CSRFToken); r.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d, want 415", r.StatusCode)
	}
	if after := dbFingerprint(t, app.DB); !sameRows(before, after) {
		t.Fatalf("malformed codes changed the database:\n%v\n%v", before, after)
	}
}

func TestRedeem_SignedOutIs401AndMissingCSRFIs403(t *testing.T) {
	app := MustStartApp(t)
	inv := newAccessKit(app).Invite(t, app.Demo, "csrf@example.com", true)
	// Signing in stores a session; the refusals below store nothing.
	c := app.NewClient(t)
	c.SignIn(t, "csrf@example.com")
	before := dbFingerprint(t, app.DB)

	anon := app.NewClient(t)
	if r := anon.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(inv.Code)); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("signed-out JSON: %d, want 401", r.StatusCode)
	}
	if r := anon.PostForm(t, "/redeem", url.Values{"code": {inv.Code}}); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("signed-out form: %d, want 401", r.StatusCode)
	}
	if r := c.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(inv.Code)); r.StatusCode != http.StatusForbidden {
		t.Errorf("no CSRF token, JSON: %d, want 403", r.StatusCode)
	}
	if r := c.PostForm(t, "/redeem", url.Values{"code": {inv.Code}}); r.StatusCode != http.StatusForbidden {
		t.Errorf("no CSRF token, form: %d, want 403", r.StatusCode)
	}
	c.CSRF(t)
	if r := c.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(inv.Code), "Origin", "https://evil.example"); r.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Origin: %d, want 403", r.StatusCode)
	}
	if after := dbFingerprint(t, app.DB); !sameRows(before, after) {
		t.Fatalf("refused redemptions changed the database:\n%v\n%v", before, after)
	}
}

func TestRedeem_RateLimitedPerAccountAndPerNetworkWith429(t *testing.T) {
	app := MustStartApp(t)
	inv := newAccessKit(app).Invite(t, app.Demo, "limited@example.com", true)
	client := func(email string) *testClient {
		c := app.NewClient(t)
		c.SignIn(t, email)
		c.CSRF(t)
		return c
	}

	// Per account: the limit's attempts are answered, the next is 429 even
	// with a valid code, and nothing is granted.
	first := client("limited@example.com")
	for i := range RedeemAccountHourlyLimit {
		if r := first.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(unknownCode(t))); r.StatusCode != http.StatusNotFound {
			t.Fatalf("attempt %d: %d, want 404", i+1, r.StatusCode)
		}
	}
	r := first.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(inv.Code))
	if r.StatusCode != http.StatusTooManyRequests || r.Body != rateLimitJSON {
		t.Fatalf("over the account limit: %d %q, want 429 %q", r.StatusCode, r.Body, rateLimitJSON)
	}
	if f := first.RedeemForm(t, inv.Code); f.StatusCode != http.StatusTooManyRequests || strings.Contains(f.Body, inv.Code) {
		t.Fatalf("form over the account limit: %d, want 429 without the code", f.StatusCode)
	}
	if got := grantCount(t, app.DB, app.Demo.ID); got != 0 {
		t.Fatalf("a rate-limited redemption granted access (%d grants)", got)
	}

	// Per network: other accounts on the same network use up the rest.
	used := RedeemAccountHourlyLimit
	for n := 0; used < RedeemNetworkHourlyLimit; n++ {
		c := client(fmt.Sprintf("neighbour%d@example.com", n))
		for i := 0; i < RedeemAccountHourlyLimit && used < RedeemNetworkHourlyLimit; i++ {
			if r := c.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(unknownCode(t))); r.StatusCode != http.StatusNotFound {
				t.Fatalf("network attempt %d: %d, want 404", used+1, r.StatusCode)
			}
			used++
		}
	}
	fresh := client("fresh@example.com")
	r = fresh.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(unknownCode(t)))
	if r.StatusCode != http.StatusTooManyRequests || r.Body != rateLimitJSON {
		t.Fatalf("over the network limit: %d %q, want 429 %q", r.StatusCode, r.Body, rateLimitJSON)
	}

	// The limits are per UTC hour: the next hour the valid code works.
	app.Clock.Add(time.Hour)
	if r := first.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(inv.Code)); r.StatusCode != http.StatusOK {
		t.Fatalf("next hour: %d %s, want 200", r.StatusCode, r.Body)
	}
}

func TestRedeem_ClerkDownIs503AndGrantsNothing(t *testing.T) {
	app := MustStartApp(t, withClerk())
	inv := newAccessKit(app).Invite(t, app.Demo, "down@example.com", true)
	c := app.NewClient(t)
	c.SignIn(t, "down@example.com")
	c.CSRF(t)

	before := dbFingerprint(t, app.DB)
	app.Clerk.SetDown(true)
	r := c.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(inv.Code))
	if r.StatusCode != http.StatusServiceUnavailable || r.Body != "{\"error\":\"unavailable\"}\n" {
		t.Fatalf("JSON with Clerk down: %d %q, want 503", r.StatusCode, r.Body)
	}
	if f := c.RedeemForm(t, inv.Code); f.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("form with Clerk down: %d, want 503", f.StatusCode)
	}
	if after := dbFingerprint(t, app.DB); !sameRows(before, after) {
		t.Fatalf("a redemption with Clerk down changed the database:\n%v\n%v", before, after)
	}

	// Back up, the same code still works: nothing was consumed.
	app.Clerk.SetDown(false)
	if r := c.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(inv.Code)); r.StatusCode != http.StatusOK {
		t.Fatalf("with Clerk back: %d %s, want 200", r.StatusCode, r.Body)
	}
}

func TestRedeem_FiftyConcurrentHTTPRedemptionsOfOneCodeMakeOneGrant(t *testing.T) {
	app := MustStartApp(t, withClerk())
	const email = "shared@example.com"
	inv := newAccessKit(app).Invite(t, app.Demo, email, true)

	// Fifty accounts, each with the entry's address verified, post the
	// same code at once.
	const n = 50
	clients := make([]*testClient, n)
	for i := range clients {
		id := fmt.Sprintf("user_concurrent_%02d", i)
		app.Clerk.SetUser(id, clerkfake.Email{Address: email, Verified: true})
		clients[i] = app.NewClient(t)
		clients[i].SetClerkSession(t, id)
		clients[i].CSRF(t)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		counts = map[int]int{}
		errs   []error
		start  = make(chan struct{})
	)
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := c.SendJSON("POST", "/api/me/invitations/redeem", redeemJSONBody(inv.Code))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			counts[r.StatusCode]++
		}()
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	if got, want := counts[http.StatusOK], 1; got != want {
		t.Fatalf("200 answers=%d, want %d (all: %v)", got, want, counts)
	}
	// The rest are the generic denial, or 429 once the network's hourly
	// limit is used up; nothing else.
	if got, want := counts[http.StatusNotFound]+counts[http.StatusTooManyRequests], n-1; got != want {
		t.Fatalf("404+429 answers=%d, want %d (all: %v)", got, want, counts)
	}
	if got, want := grantCount(t, app.DB, app.Demo.ID), 1; got != want {
		t.Fatalf("grants=%d, want %d", got, want)
	}
}
