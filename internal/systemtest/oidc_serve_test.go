package systemtest

import (
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"admit/internal/identity"
	"admit/internal/oidcprovider"
)

// TestRun_ServeInOIDCModeWaitsForTheProviderThenSignsIn starts the real
// server in OpenID Connect mode while the provider is down: /readyz says
// why (503) until discovery, retried with backoff, succeeds; then a person
// signs in through the provider, sees their user ID, and nothing personal
// reaches the log.
func TestRun_ServeInOIDCModeWaitsForTheProviderThenSignsIn(t *testing.T) {
	p := oidcprovider.Start(t)
	p.SetDown(true)
	srv := MustRunServe(t, map[string]string{"ADMIT_ADDR": "127.0.0.1:0", "ADMIT_DATA": t.TempDir(),
		"ADMIT_OIDC_ISSUER": p.Issuer, "ADMIT_OIDC_CLIENT_ID": p.ClientID, "ADMIT_OIDC_CLIENT_SECRET": p.ClientSecret,
		"ADMIT_OIDC_PROVIDER_NAME": "Test ID"})
	p.AllowRedirect(srv.URL+"/auth/callback", srv.URL+"/")
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Timeout: 10 * time.Second, Jar: jar}

	status, body := get(t, client, srv.URL+"/readyz")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "identity provider not discovered yet") {
		t.Fatalf("/readyz with the provider down: %d %s", status, body)
	}
	// The provider comes back only once a discovery has failed and said so:
	// before, the first discovery could run after the provider was back.
	failed := time.Now().Add(60 * time.Second)
	for !strings.Contains(srv.Stderr.String(), "identity provider discovery failed; retrying") {
		if time.Now().After(failed) {
			t.Fatalf("no failed discovery logged within a minute:\n%s", srv.Stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.SetDown(false)
	// Discovery retries with backoff; wait for its success, not a fixed time.
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if status, _ = get(t, client, srv.URL+"/readyz"); status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d a minute after the provider came back", status)
		}
		<-tick.C
	}

	const email = "person@example.test"
	p.SetUser(oidcprovider.User{Sub: "sub-serve", Email: email, EmailVerified: oidcprovider.Verified})
	status, body = get(t, client, srv.URL+"/sign-in")
	if status != http.StatusOK || !strings.Contains(body, "Continue with Test ID") {
		t.Fatalf("/sign-in: %d", status)
	}
	// The client follows every redirect: admit → provider → admit.
	status, body = get(t, client, srv.URL+"/auth/start?redirect_url=%2Fme%2Faccount")
	uid := identity.OIDCUserID(p.Issuer, "sub-serve")
	if status != http.StatusOK || !strings.Contains(body, uid) {
		t.Fatalf("after signing in, /me/account: status %d, want the user ID", status)
	}
	logs := srv.Stderr.String()
	if !strings.Contains(logs, "identity provider discovery failed; retrying") {
		t.Errorf("the failed discovery was not logged:\n%s", logs)
	}
	for _, secret := range []string{email, "sub-serve", uid, p.ClientSecret, "code="} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}
