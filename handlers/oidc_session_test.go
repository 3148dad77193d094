package handlers

import (
	"net/http"
	"testing"
	"time"

	"admit/internal/identity"
)

// ownerStatus is the owner console's status for c: 200 while the session
// holds, 303 (to sign in) once it has ended, 503 while the provider
// cannot be reached at a due check.
func ownerStatus(t *testing.T, c *testClient) int {
	t.Helper()
	return c.Get(t, "/owner").StatusCode
}

// TestOIDC_OwnerSessionFollowsTheProvider: a person disabled at the
// provider keeps their owner session only until the next check, which
// comes OIDCRecheckEvery after the last one — or when the access token
// expires, through a refused refresh. Between checks admit makes no call
// to the provider.
func TestOIDC_OwnerSessionFollowsTheProvider(t *testing.T) {
	for _, tc := range []struct {
		name string
		// wait is how long after sign-in the check that signs out comes.
		wait time.Duration
	}{
		{"userinfo refuses the disabled person at the next check", identity.OIDCRecheckEvery},
		{"the provider refuses the refresh of an expired access token", 2 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := mustOIDCApp(t)
			c := app.NewClient(t)
			c.SignIn(t, "owner@example.test")
			if got := ownerStatus(t, c); got != http.StatusOK {
				t.Fatalf("owner console after sign-in: status %d", got)
			}
			app.OIDC.DisableUser(oidcSub("owner@example.test"))

			// Within the interval: no provider call, the session holds.
			app.Clock.Add(identity.OIDCRecheckEvery - time.Second)
			calls := app.OIDC.Calls()
			for _, path := range []string{"/owner", "/me/account", "/api/csrf"} {
				if got := c.Get(t, path).StatusCode; got != http.StatusOK {
					t.Fatalf("%s within the interval: status %d, want 200", path, got)
				}
			}
			if got := app.OIDC.Calls(); got != calls {
				t.Fatalf("%d provider calls within the check interval, want none", got-calls)
			}

			app.Clock.Set(app.Clock.Now().Add(tc.wait - (identity.OIDCRecheckEvery - time.Second)))
			resp := c.Get(t, "/owner")
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("owner console at the check after disabling: status %d, want 303 to sign in", resp.StatusCode)
			}
			if n := sessionCount(t, app); n != 0 {
				t.Fatalf("%d sessions after the provider refused the person, want 0", n)
			}
			if got := c.Get(t, "/api/csrf").StatusCode; got != http.StatusUnauthorized {
				t.Fatalf("after the session ended: status %d, want 401", got)
			}
		})
	}
}

// TestOIDC_OwnerSessionRefreshesAtExpiryAndChecksAgainOnlyWhenDue: an
// owner whose access token expired is refreshed once, then left alone
// until the next check.
func TestOIDC_OwnerSessionRefreshesAtExpiryAndChecksAgainOnlyWhenDue(t *testing.T) {
	app := mustOIDCApp(t)
	c := app.NewClient(t)
	c.SignIn(t, "owner@example.test")
	app.Clock.Add(2 * time.Hour) // past the access token's hour
	if got := ownerStatus(t, c); got != http.StatusOK {
		t.Fatalf("owner console after the access token expired: status %d, want 200 through a refresh", got)
	}
	if got := app.OIDC.Refreshes(); got != 1 {
		t.Fatalf("refreshes=%d, want 1", got)
	}
	calls := app.OIDC.Calls()
	app.Clock.Add(identity.OIDCRecheckEvery / 2)
	if got := ownerStatus(t, c); got != http.StatusOK {
		t.Fatalf("owner console between checks: status %d", got)
	}
	if got := app.OIDC.Calls(); got != calls {
		t.Fatalf("%d provider calls between checks, want none", got-calls)
	}
	app.Clock.Add(identity.OIDCRecheckEvery / 2)
	before := app.OIDC.UserinfoCalls()
	if got := ownerStatus(t, c); got != http.StatusOK {
		t.Fatalf("owner console at the next check: status %d", got)
	}
	if app.OIDC.UserinfoCalls() != before+1 || app.OIDC.Refreshes() != 1 {
		t.Fatalf("the next check: %d userinfo calls and %d refreshes, want 1 and still 1",
			app.OIDC.UserinfoCalls()-before, app.OIDC.Refreshes())
	}
}

// TestOIDC_ProviderDownAtAnOwnersCheckIs503ThenRecovers: when a check is
// due and the provider cannot be reached, the owner's request fails
// closed with 503 and the session is kept; once the provider answers
// again the same session works. This holds when the due check needs a
// refresh too: a provider failing is not a refused refresh token.
func TestOIDC_ProviderDownAtAnOwnersCheckIs503ThenRecovers(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration
	}{
		{"a periodic check", identity.OIDCRecheckEvery},
		{"a check that must refresh", 2 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := mustOIDCApp(t)
			c := app.NewClient(t)
			c.SignIn(t, "owner@example.test")
			app.OIDC.SetDown(true)
			app.Clock.Add(tc.wait)
			page := c.Get(t, "/owner")
			if page.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("owner console with the provider down at a check: status %d, want 503", page.StatusCode)
			}
			if got := c.Get(t, "/api/csrf").StatusCode; got != http.StatusServiceUnavailable {
				t.Fatalf("a signed-in API call with the provider down: status %d, want 503", got)
			}
			if n := sessionCount(t, app); n != 1 {
				t.Fatalf("%d sessions while the provider is down, want the session kept", n)
			}
			app.OIDC.SetDown(false)
			if got := ownerStatus(t, c); got != http.StatusOK {
				t.Fatalf("owner console once the provider is back: status %d, want 200", got)
			}
			calls := app.OIDC.Calls()
			if got := ownerStatus(t, c); got != http.StatusOK || app.OIDC.Calls() != calls {
				t.Fatalf("after recovery: status %d and %d provider calls, want 200 and none", got, app.OIDC.Calls()-calls)
			}
		})
	}
}
