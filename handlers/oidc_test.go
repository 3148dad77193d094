package handlers

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"admit/internal/identity"
	"admit/internal/oidcprovider"
	"admit/store"
)

func TestOIDC_SignInPageOffersTheProviderAsAGetLink(t *testing.T) {
	app := mustOIDCApp(t)
	page := app.NewClient(t).Get(t, "/sign-in?redirect_url=%2Fredeem")
	if page.StatusCode != http.StatusOK {
		t.Fatalf("status %d", page.StatusCode)
	}
	for _, want := range []string{`href="/auth/start?redirect_url=%2Fredeem"`, "Continue with Test ID"} {
		if !strings.Contains(page.Body, want) {
			t.Fatalf("sign-in page lacks %q", want)
		}
	}
	if strings.Contains(page.Body, "<form method=\"post\" action=\"/dev/sign-in\"") || strings.Contains(page.Body, "dev-banner") {
		t.Fatal("OIDC mode shows the development sign-in")
	}
	if got := app.NewClient(t).PostForm(t, "/dev/sign-in", url.Values{"email": {"a@example.test"}}).StatusCode; got == http.StatusSeeOther {
		t.Fatal("the development sign-in works in OIDC mode")
	}
}

func TestOIDC_StartUsesTheCodeFlowWithPKCEStateAndNonce(t *testing.T) {
	app := mustOIDCApp(t)
	c := app.NewClient(t)
	resp := c.Get(t, "/auth/start")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), app.OIDC.Issuer+"/authorize?") {
		t.Fatalf("Location %q is not the provider's authorization endpoint", resp.Header.Get("Location"))
	}
	q := loc.Query()
	for k, want := range map[string]string{"response_type": "code", "client_id": app.OIDC.ClientID,
		"redirect_uri": app.URL + "/auth/callback", "code_challenge_method": "S256"} {
		if q.Get(k) != want {
			t.Errorf("%s=%q, want %q", k, q.Get(k), want)
		}
	}
	for _, k := range []string{"state", "nonce", "code_challenge"} {
		if len(q.Get(k)) < 43 {
			t.Errorf("%s=%q is missing or short", k, q.Get(k))
		}
	}
	if resp.Header.Get("Cache-Control") != "private, no-store" {
		t.Errorf("Cache-Control=%q", resp.Header.Get("Cache-Control"))
	}
	var flow *http.Cookie
	for _, ck := range c.Jar.Cookies(mustURL(t, app.URL+"/auth/callback")) {
		if ck.Name == "admit_oidc_flow" {
			flow = ck
		}
	}
	if flow == nil || strings.Contains(flow.Value, q.Get("state")) || strings.Contains(flow.Value, q.Get("nonce")) {
		t.Fatal("no sealed flow cookie, or it shows the state or nonce")
	}
}

func TestOIDC_FullFlowToTheOwnerConsole(t *testing.T) {
	app := mustOIDCApp(t)
	c := app.NewClient(t)
	app.OIDC.SetUser(oidcprovider.User{Sub: oidcSub("owner@example.test"), Email: "owner@example.test", EmailVerified: oidcprovider.Verified})
	resp := c.OIDCSignIn(t, "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/owner" {
		t.Fatalf("callback: status %d Location %q, want 303 to /owner: %s", resp.StatusCode, resp.Header.Get("Location"), resp.Body)
	}
	if got := resp.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Fatalf("callback Cache-Control=%q", got)
	}
	if page := c.Get(t, "/owner"); page.StatusCode != http.StatusOK {
		t.Fatalf("owner console: status %d", page.StatusCode)
	}
	account := c.Get(t, "/me/account")
	if !strings.Contains(account.Body, app.OwnerID) || !strings.Contains(account.Body, "Test ID") {
		t.Fatal("the account page does not show the issuer+sub user ID")
	}
	// The tokens are sealed: neither they nor the subject are in the row.
	var sealed []byte
	if err := app.DB.View(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT sealed FROM sessions`).Scan(&sealed)
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), oidcSub("owner@example.test")) {
		t.Fatal("the session row holds the subject in the clear")
	}
	if strings.Contains(app.Logs.String(), "owner@example.test") || strings.Contains(app.Logs.String(), "code=") {
		t.Fatal("the log holds an address or a code")
	}
}

func TestOIDC_SignInNeverMakesAnOwner(t *testing.T) {
	app := mustOIDCApp(t)
	c := app.NewClient(t)
	uid := c.SignIn(t, "stranger@example.test")
	if got := c.Get(t, "/owner").StatusCode; got != http.StatusNotFound {
		t.Fatalf("a signed-in stranger on /owner: status %d, want 404", got)
	}
	if n := owCount(t, app, `SELECT count(*) FROM staff_members WHERE user_id = ?`, uid); n != 0 {
		t.Fatalf("sign-in created %d staff rows", n)
	}
}

func TestOIDC_FullFlowToRedemptionAndPrivateContent(t *testing.T) {
	app := mustOIDCApp(t)
	k := newAccessKit(app)
	inv := k.Invite(t, app.Demo, "reader@example.com", true)
	c := app.NewClient(t)
	c.SignIn(t, "reader@example.com")
	c.CSRF(t)
	post := c.RedeemForm(t, inv.Code)
	if post.StatusCode != http.StatusSeeOther || post.Header.Get("Location") != "/early-access/demo" {
		t.Fatalf("redeem: status %d Location %q body %s", post.StatusCode, post.Header.Get("Location"), post.Body)
	}
	page := c.Get(t, "/early-access/demo")
	if page.StatusCode != http.StatusOK || !strings.Contains(page.Body, "Welcome to the admit demo.") {
		t.Fatalf("private page: status %d", page.StatusCode)
	}
	before := app.OIDC.UserinfoCalls()
	c.Get(t, "/early-access/demo")
	if app.OIDC.UserinfoCalls() <= before {
		t.Fatal("a private page did not read the address from userinfo again")
	}
}

func TestOIDC_UnverifiedEmailNeverCounts(t *testing.T) {
	app := mustOIDCApp(t)
	k := newAccessKit(app)
	inv := k.Invite(t, app.Demo, "reader@example.com", true)
	c := app.NewClient(t)
	app.OIDC.SetUser(oidcprovider.User{Sub: "sub-unverified", Email: "reader@example.com", EmailVerified: oidcprovider.Unverified})
	if resp := c.OIDCSignIn(t, "/redeem"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: status %d", resp.StatusCode)
	}
	c.CSRF(t)
	if got := c.RedeemForm(t, inv.Code).StatusCode; got != http.StatusNotFound {
		t.Fatalf("redeem with an unverified address: status %d, want the generic 404", got)
	}
	if grantCount(t, app.DB, app.Demo.ID) != 0 {
		t.Fatal("an unverified address was granted access")
	}
}

func TestOIDC_MissingEmailVerifiedCountsOnlyWithTheOptIn(t *testing.T) {
	for _, trust := range []bool{false, true} {
		t.Run(map[bool]string{false: "without opt-in", true: "with ADMIT_OIDC_TRUST_EMAIL"}[trust], func(t *testing.T) {
			opts := []appOption{}
			if trust {
				opts = append(opts, withOIDCTrustEmail())
			}
			app := mustOIDCApp(t, opts...)
			inv := newAccessKit(app).Invite(t, app.Demo, "reader@example.com", true)
			c := app.NewClient(t)
			app.OIDC.SetUser(oidcprovider.User{Sub: "sub-no-claim", Email: "reader@example.com"})
			c.OIDCSignIn(t, "/redeem")
			c.CSRF(t)
			got := c.RedeemForm(t, inv.Code).StatusCode
			want := map[bool]int{false: http.StatusNotFound, true: http.StatusSeeOther}[trust]
			if got != want {
				t.Fatalf("redeem: status %d, want %d", got, want)
			}
		})
	}
}

// signInFailure checks a failed callback: a clear page, no session.
func signInFailure(t *testing.T, app *testApp, c *testClient, callback string) {
	t.Helper()
	before := sessionCount(t, app)
	wasIn := c.Get(t, "/api/csrf").StatusCode == http.StatusOK
	resp := c.Get(t, strings.TrimPrefix(callback, app.URL))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Body, `data-testid="sign-in-failed"`) {
		t.Fatalf("callback: status %d, want 400 and the failure page", resp.StatusCode)
	}
	if got := resp.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Fatalf("failure page Cache-Control=%q", got)
	}
	if got := sessionCount(t, app); got != before {
		t.Fatalf("a failed sign-in left %d sessions, want %d", got, before)
	}
	if got := c.Get(t, "/api/csrf").StatusCode; !wasIn && got != http.StatusUnauthorized {
		t.Fatalf("after a failed sign-in: status %d, want 401", got)
	}
}

func TestOIDC_WrongStateIsRefused(t *testing.T) {
	app := mustOIDCApp(t)
	c := app.NewClient(t)
	cb := mustURL(t, c.OIDCAuthorize(t, "/"))
	q := cb.Query()
	q.Set("state", q.Get("state")+"x")
	cb.RawQuery = q.Encode()
	signInFailure(t, app, c, cb.String())
}

func TestOIDC_CallbackWithoutTheFlowCookieIsRefused(t *testing.T) {
	app := mustOIDCApp(t)
	cb := app.NewClient(t).OIDCAuthorize(t, "/")
	other := app.NewClient(t) // another browser: no flow cookie
	signInFailure(t, app, other, cb)
}

func TestOIDC_ReplayedCodeIsRefused(t *testing.T) {
	app := mustOIDCApp(t)
	c := app.NewClient(t)
	cb := c.OIDCAuthorize(t, "/")
	flow := c.Jar.Cookies(mustURL(t, app.URL+"/auth/callback"))
	if resp := c.Get(t, strings.TrimPrefix(cb, app.URL)); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("first use: status %d", resp.StatusCode)
	}
	// The same URL again in the same browser: the flow cookie is spent.
	signInFailure(t, app, c, cb)
	// An attacker who also copied the flow cookie: the provider refuses the code.
	attacker := app.NewClient(t)
	attacker.Jar.SetCookies(mustURL(t, app.URL+"/auth/callback"), flow)
	signInFailure(t, app, attacker, cb)
}

func TestOIDC_ProviderErrorIsAClearPage(t *testing.T) {
	app := mustOIDCApp(t)
	c := app.NewClient(t)
	cb := mustURL(t, c.OIDCAuthorize(t, "/"))
	q := url.Values{"error": {"access_denied"}, "state": {cb.Query().Get("state")}}
	signInFailure(t, app, c, app.URL+"/auth/callback?"+q.Encode())
}

func TestOIDC_BadTokensAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(app *testApp)
		// later runs between the provider's answer and the callback.
		later func(app *testApp)
	}{
		{"wrong audience", func(app *testApp) {
			app.OIDC.SetIDTokenClaims(func(c map[string]any) { c["aud"], c["azp"] = "some-other-client", "some-other-client" })
		}, nil},
		{"another client's azp", func(app *testApp) {
			app.OIDC.SetIDTokenClaims(func(c map[string]any) { c["azp"] = "some-other-client" })
		}, nil},
		{"two audiences without azp", func(app *testApp) {
			app.OIDC.SetIDTokenClaims(func(c map[string]any) { c["aud"] = []string{"admit-test", "x"}; delete(c, "azp") })
		}, nil},
		{"iat in the future", func(app *testApp) {
			app.OIDC.SetIDTokenClaims(func(c map[string]any) { c["iat"] = time.Now().Add(time.Hour).Unix() })
		}, nil},
		{"no sub", func(app *testApp) { app.OIDC.SetIDTokenClaims(func(c map[string]any) { delete(c, "sub") }) }, nil},
		{"nonce mismatch", func(app *testApp) { app.OIDC.SetWrongNonce(true) }, nil},
		{"bad signature", func(app *testApp) { app.OIDC.SetBadSignature(true) }, nil},
		{"expired ID token", func(app *testApp) { app.OIDC.SetIDTokenLifetime(time.Minute) },
			func(app *testApp) { app.Clock.Add(5 * time.Minute) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := mustOIDCApp(t)
			tc.setup(app)
			c := app.NewClient(t)
			cb := c.OIDCAuthorize(t, "/")
			if tc.later != nil {
				tc.later(app)
			}
			signInFailure(t, app, c, cb)
		})
	}
}

func TestOIDC_ProviderDownAtStartIs503ThenRecovers(t *testing.T) {
	p := oidcprovider.Start(t)
	p.SetDown(true)
	app := MustStartApp(t, withOIDC(p), withoutOIDCDiscovery())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	attempts := make(chan error, 100)
	go app.OIDCId.RunDiscovery(ctx, func(err error, _ time.Duration) { attempts <- err })
	if err := <-attempts; err == nil {
		t.Fatal("discovery succeeded while the provider was down")
	}
	c := app.NewClient(t)
	if r := c.Get(t, "/readyz"); r.StatusCode != http.StatusServiceUnavailable || !strings.Contains(r.Body, "identity provider") {
		t.Fatalf("/readyz while the provider is down: %d %s", r.StatusCode, r.Body)
	}
	if got := c.Get(t, "/auth/start").StatusCode; got != http.StatusServiceUnavailable {
		t.Fatalf("start while the provider is down: status %d, want 503", got)
	}
	p.SetDown(false)
	for err := range attempts { // until an attempt succeeds
		if err == nil {
			break
		}
	}
	if r := c.Get(t, "/readyz"); r.StatusCode != http.StatusOK {
		t.Fatalf("/readyz after discovery: %d %s", r.StatusCode, r.Body)
	}
	c.SignIn(t, "reader@example.test")
	if got := c.Get(t, "/api/csrf").StatusCode; got != http.StatusOK {
		t.Fatalf("after recovery: status %d", got)
	}
}

func TestOIDC_ProviderDownFailsRecipientRoutesClosedWith503(t *testing.T) {
	app := mustOIDCApp(t)
	k := newAccessKit(app)
	k.Grant(t, app.Demo, "reader@example.com", identity.OIDCUserID(app.OIDC.Issuer, oidcSub("reader@example.com")))
	c := app.NewClient(t)
	c.SignIn(t, "reader@example.com")
	if got := c.Get(t, "/early-access/demo").StatusCode; got != http.StatusOK {
		t.Fatalf("before: status %d", got)
	}
	app.OIDC.SetDown(true)
	page := c.Get(t, "/early-access/demo")
	if page.StatusCode != http.StatusServiceUnavailable || strings.Contains(page.Body, "Welcome to the admit demo.") {
		t.Fatalf("provider down: status %d, want 503 without the content", page.StatusCode)
	}
	app.OIDC.SetDown(false)
	if got := c.Get(t, "/early-access/demo").StatusCode; got != http.StatusOK {
		t.Fatalf("provider back: status %d", got)
	}
}

func TestOIDC_ExpiredAccessTokenIsRefreshedAndAFailedRefreshSignsOut(t *testing.T) {
	app := mustOIDCApp(t)
	k := newAccessKit(app)
	k.Grant(t, app.Demo, "reader@example.com", identity.OIDCUserID(app.OIDC.Issuer, oidcSub("reader@example.com")))
	c := app.NewClient(t)
	c.SignIn(t, "reader@example.com")
	app.Clock.Add(2 * time.Hour) // past the access token's hour
	if got := c.Get(t, "/early-access/demo").StatusCode; got != http.StatusOK {
		t.Fatalf("after the access token expired: status %d, want 200 through a refresh", got)
	}
	if got := app.OIDC.Refreshes(); got != 1 {
		t.Fatalf("refreshes=%d, want 1", got)
	}
	app.Clock.Add(2 * time.Hour)
	app.OIDC.RevokeRefreshTokens()
	if got := c.Get(t, "/early-access/demo").StatusCode; got != http.StatusSeeOther {
		t.Fatalf("refresh refused: status %d, want 303 to sign in", got)
	}
	if n := sessionCount(t, app); n != 0 {
		t.Fatalf("%d sessions after a refused refresh, want 0", n)
	}
}

func TestOIDC_RevokedAccessTokenSignsOut(t *testing.T) {
	app := mustOIDCApp(t)
	c := app.NewClient(t)
	c.SignIn(t, "reader@example.com")
	app.OIDC.RevokeAccessTokens()
	if got := c.Get(t, "/api/me/waitlist/demo").StatusCode; got != http.StatusUnauthorized {
		t.Fatalf("revoked token: status %d, want 401", got)
	}
}

func TestOIDC_SignOutEndsACopiedCookieAndLogsOutAtTheProvider(t *testing.T) {
	app := mustOIDCApp(t)
	c := app.NewClient(t)
	c.SignIn(t, "reader@example.com")
	copied := copyCookies(t, c)
	resp := c.PostForm(t, "/sign-out", url.Values{"csrf": {c.CSRF(t)}})
	link := regexp.MustCompile(`href="([^"]*)"[^>]*data-testid="provider-sign-out"`).FindStringSubmatch(resp.Body)
	if resp.StatusCode != http.StatusOK || link == nil {
		t.Fatalf("sign-out: status %d, want 200 and the provider's sign-out offered", resp.StatusCode)
	}
	if resp.Header.Get("Cache-Control") != "private, no-store" {
		t.Fatalf("sign-out page Cache-Control=%q", resp.Header.Get("Cache-Control"))
	}
	loc := mustURL(t, html.UnescapeString(link[1]))
	if !strings.HasPrefix(loc.String(), app.OIDC.Issuer+"/end_session?") ||
		loc.Query().Get("post_logout_redirect_uri") != app.URL+"/" || loc.Query().Get("client_id") != app.OIDC.ClientID {
		t.Fatalf("sign-out: provider link %q, want the provider's end_session", loc)
	}
	if loc.Query().Has("id_token_hint") {
		t.Fatal("the logout URL carries a token")
	}
	// The provider signs out and returns to admit's start page.
	r, err := c.Client.Get(loc.String())
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if back, _ := r.Location(); r.StatusCode/100 != 3 || back == nil || back.String() != app.URL+"/" {
		t.Fatalf("provider logout: status %d Location %v", r.StatusCode, back)
	}
	if got := copied.Get(t, "/api/csrf").StatusCode; got != http.StatusUnauthorized {
		t.Fatalf("the copied cookie after sign-out: status %d, want 401", got)
	}
}

func TestOIDC_SignOutEverywhereEndsEverySession(t *testing.T) {
	app := mustOIDCApp(t)
	a, b := app.NewClient(t), app.NewClient(t)
	a.SignIn(t, "reader@example.com")
	b.SignIn(t, "reader@example.com")
	if resp := a.PostForm(t, "/me/account/sign-out-everywhere", url.Values{"csrf": {a.CSRF(t)}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for _, c := range []*testClient{a, b} {
		if got := c.Get(t, "/api/csrf").StatusCode; got != http.StatusUnauthorized {
			t.Fatalf("after sign-out everywhere: status %d, want 401", got)
		}
	}
}

func TestOIDC_PrivacyPageSaysWhatASessionKeeps(t *testing.T) {
	app := mustOIDCApp(t)
	page := app.NewClient(t).Get(t, "/privacy")
	for _, want := range []string{"Test ID, through OpenID Connect", `data-testid="session-data"`,
		"the tokens your identity provider gave", "at most 7 days", "Test ID last confirmed it (once 5 minutes have passed"} {
		if !strings.Contains(page.Body, want) {
			t.Fatalf("privacy page lacks %q", want)
		}
	}
}

// TestOIDC_AuthorizationMatrixForANonOwner sends every owner route, with
// the person's own valid CSRF token on writes, as someone signed in
// through OpenID Connect who owns nothing: each is the same 404 as a path
// that does not exist, and nothing changes.
func TestOIDC_AuthorizationMatrixForANonOwner(t *testing.T) {
	app := mustOIDCApp(t)
	c := app.NewClient(t)
	c.SignIn(t, "visitor@example.com")
	csrf := c.CSRF(t)
	notFound := c.Get(t, "/no-such-page").Body
	before := dbFingerprint(t, app.DB)
	fill := strings.NewReplacer("{id}", app.Demo.ID, "{entryId}", "e", "{invitationId}", "i", "{grantId}", "g")
	n := 0
	for pattern := range srvOf(app).patterns {
		method, path, _ := strings.Cut(pattern, " ")
		if !strings.HasPrefix(path, "/owner") && !strings.HasPrefix(path, "/api/owner") {
			continue
		}
		n++
		path = fill.Replace(path)
		var resp *testResponse
		if method == http.MethodGet {
			resp = c.Get(t, path)
		} else {
			resp = c.Do(t, method, path, "application/x-www-form-urlencoded", strings.NewReader(url.Values{"csrf": {csrf}}.Encode()),
				"X-CSRF-Token", csrf)
		}
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s as an OIDC non-owner: status %d, want 404", method, path, resp.StatusCode)
			continue
		}
		if method == http.MethodGet && !strings.HasPrefix(path, "/api/") && resp.Body != notFound {
			t.Errorf("%s %s: the 404 differs from an unmatched path's", method, path)
		}
	}
	if n < 40 {
		t.Fatalf("only %d owner routes checked", n)
	}
	if !sameRows(before, dbFingerprint(t, app.DB)) {
		t.Fatal("a refused owner request changed the database")
	}
}

func TestOIDC_ConcurrentRequestsRefreshOnce(t *testing.T) {
	app := mustOIDCApp(t)
	c := app.NewClient(t)
	c.SignIn(t, "reader@example.com")
	app.Clock.Add(2 * time.Hour) // the access token has expired
	const n = 6
	statuses := make(chan int, n)
	for range n {
		go func() {
			r, err := c.Send("GET", "/me", "", nil)
			if err != nil {
				statuses <- 0
				return
			}
			statuses <- r.StatusCode
		}()
	}
	for range n {
		if got := <-statuses; got != http.StatusOK {
			t.Fatalf("a concurrent request after expiry: status %d, want 200 (the rotated refresh token spent twice?)", got)
		}
	}
	if got := app.OIDC.Refreshes(); got != 1 {
		t.Fatalf("refreshes=%d, want 1", got)
	}
}
