package handlers

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"admit/internal/identity"
	"admit/internal/oidcprovider"
)

// A userinfo answer about another subject than the session's is never
// used: the request that needs the address fails closed (503) without the
// content, and works again once the provider answers for the right person.
func TestOIDC_UserinfoAboutAnotherSubjectIsNeverUsed(t *testing.T) {
	app := mustOIDCApp(t)
	k := newAccessKit(app)
	k.Grant(t, app.Demo, "reader@example.com", identity.OIDCUserID(app.OIDC.Issuer, oidcSub("reader@example.com")))
	app.OIDC.SetUser(oidcprovider.User{Sub: oidcSub("other@example.com"), Email: "other@example.com", EmailVerified: oidcprovider.Verified})
	c := app.NewClient(t)
	c.SignIn(t, "reader@example.com")
	app.OIDC.SetUserinfoSubject(oidcSub("other@example.com"))
	page := c.Get(t, "/early-access/demo")
	if page.StatusCode != http.StatusServiceUnavailable || strings.Contains(page.Body, "Welcome to the admit demo.") {
		t.Fatalf("userinfo about another subject: status %d, want 503 without the content", page.StatusCode)
	}
	if got := c.Get(t, "/api/me/waitlist/demo").StatusCode; got != http.StatusServiceUnavailable {
		t.Fatalf("own entry with userinfo about another subject: status %d, want 503", got)
	}
	app.OIDC.SetUserinfoSubject("")
	if got := c.Get(t, "/early-access/demo").StatusCode; got != http.StatusOK {
		t.Fatalf("userinfo about the right subject again: status %d, want 200", got)
	}
}

// A userinfo endpoint that cannot be reached (the connection drops, no
// HTTP answer) fails the request closed with 503 and keeps the session:
// the next request, once the provider answers, works.
func TestOIDC_UnreachableUserinfoIs503AndKeepsTheSession(t *testing.T) {
	app := mustOIDCApp(t)
	k := newAccessKit(app)
	k.Grant(t, app.Demo, "reader@example.com", identity.OIDCUserID(app.OIDC.Issuer, oidcSub("reader@example.com")))
	c := app.NewClient(t)
	c.SignIn(t, "reader@example.com")
	app.OIDC.SetUserinfoUnreachable(true)
	calls := app.OIDC.UserinfoCalls()
	page := c.Get(t, "/early-access/demo")
	if page.StatusCode != http.StatusServiceUnavailable || strings.Contains(page.Body, "Welcome to the admit demo.") {
		t.Fatalf("userinfo unreachable: status %d, want 503 without the content", page.StatusCode)
	}
	if app.OIDC.UserinfoCalls() == calls {
		t.Fatal("admit did not ask userinfo: the test does not exercise a connection error")
	}
	if n := sessionCount(t, app); n != 1 {
		t.Fatalf("%d sessions after an unreachable userinfo, want the session kept", n)
	}
	app.OIDC.SetUserinfoUnreachable(false)
	if got := c.Get(t, "/early-access/demo").StatusCode; got != http.StatusOK {
		t.Fatalf("userinfo reachable again: status %d, want 200 in the same session", got)
	}
}

// The provider's address goes through the signup's grammar before it is
// matched: blanks around it dropped, the domain in lower case. A person
// who signed up as reader@example.com finds their entry when the provider
// spells the address " reader@EXAMPLE.com ".
func TestOIDC_ProvidersAddressIsNormalisedLikeASignups(t *testing.T) {
	app := mustOIDCApp(t)
	k := newAccessKit(app)
	k.Entry(t, app.Demo, "reader@example.com")
	app.OIDC.SetUser(oidcprovider.User{Sub: oidcSub("reader@example.com"), Email: " reader@EXAMPLE.com ", EmailVerified: oidcprovider.Verified})
	c := app.NewClient(t)
	if resp := c.OIDCSignIn(t, "/"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: status %d", resp.StatusCode)
	}
	resp := c.Get(t, "/api/me/waitlist/demo")
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, `"state":"waiting"`) {
		t.Fatalf("own entry: status %d %s, want 200 with the waiting entry", resp.StatusCode, resp.Body)
	}
}

// A sign-in flow is good for ten minutes: a callback after that is
// refused, though its state, code and cookie are otherwise right.
func TestOIDC_ExpiredSignInFlowIsRefused(t *testing.T) {
	app := mustOIDCApp(t)
	app.OIDC.SetUser(oidcprovider.User{Sub: oidcSub("late@example.com"), Email: "late@example.com", EmailVerified: oidcprovider.Verified})
	c := app.NewClient(t)
	callback := c.OIDCAuthorize(t, "/")
	app.Clock.Add(10 * time.Minute)
	signInFailure(t, app, c, callback)
	// Control: the same steps within the ten minutes sign in.
	callback = c.OIDCAuthorize(t, "/")
	app.Clock.Add(10*time.Minute - time.Second)
	if resp := c.Get(t, strings.TrimPrefix(callback, app.URL)); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("callback within the flow's ten minutes: status %d, want 303", resp.StatusCode)
	}
}
