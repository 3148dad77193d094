package handlers

import (
	"context"
	"html"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"admit/internal/identity"
	"admit/internal/oidcprovider"
	"admit/internal/proc"
)

// oidcProduct is how one identity product behaves as seen from admit,
// from its own documentation: where its issuer and endpoints live, what
// its discovery document says, when it issues refresh tokens, and which
// claims it sends. docs/DEPLOY.md has a section for each.
type oidcProduct struct {
	// section is the product's heading in docs/DEPLOY.md.
	section string
	// placeholders fill the section's <…> with sample values.
	placeholders map[string]string
	shape        oidcprovider.Shape
	// emailVerified is the email_verified claim it sends for a verified
	// address (nil: none).
	emailVerified *bool
	// idToken rewrites its ID tokens' claims, where they differ from the
	// test provider's.
	idToken func(map[string]any)
	// countsAddress is whether a verified address counts with the
	// section's settings.
	countsAddress bool
}

var oidcProducts = []oidcProduct{
	{
		section:      "Keycloak",
		placeholders: map[string]string{"<realm>": "admit"},
		shape: oidcprovider.Shape{
			IssuerPath: "/realms/admit",
			Paths: oidcprovider.Paths{
				Authorize: "/realms/admit/protocol/openid-connect/auth", Token: "/realms/admit/protocol/openid-connect/token",
				Userinfo: "/realms/admit/protocol/openid-connect/userinfo", Revoke: "/realms/admit/protocol/openid-connect/revoke",
				EndSession: "/realms/admit/protocol/openid-connect/logout", Keys: "/realms/admit/protocol/openid-connect/certs"},
			// A refresh token with every code exchange ("Use refresh
			// tokens", on by default); offline_access makes it an offline
			// token.
			Refresh: oidcprovider.RefreshAlways,
		},
		emailVerified: oidcprovider.Verified,
		countsAddress: true,
	},
	{
		section:      "Authentik",
		placeholders: map[string]string{"<slug>": "admit"},
		shape: oidcprovider.Shape{
			IssuerPath: "/application/o/admit/",
			Paths: oidcprovider.Paths{
				Authorize: "/application/o/authorize/", Token: "/application/o/token/", Userinfo: "/application/o/userinfo/",
				Revoke: "/application/o/revoke/", EndSession: "/application/o/admit/end-session/", Keys: "/application/o/admit/jwks/"},
			Refresh: oidcprovider.RefreshWithOfflineAccess,
		},
		emailVerified: oidcprovider.Verified,
		countsAddress: true,
	},
	{
		section:      "Zitadel",
		placeholders: map[string]string{"<instance>": "admit-x1y2z3"},
		shape: oidcprovider.Shape{
			Paths: oidcprovider.Paths{
				Authorize: "/oauth/v2/authorize", Token: "/oauth/v2/token", Userinfo: "/oidc/v1/userinfo",
				Revoke: "/oauth/v2/revoke", EndSession: "/oidc/v1/end_session", Keys: "/oauth/v2/keys"},
			Refresh: oidcprovider.RefreshWithOfflineAccess,
		},
		emailVerified: oidcprovider.Verified,
		countsAddress: true,
	},
	{
		section: "Google",
		shape: oidcprovider.Shape{
			Paths: oidcprovider.Paths{
				Authorize: "/o/oauth2/v2/auth", Token: "/token", Userinfo: "/v1/userinfo", Revoke: "/revoke",
				Keys: "/oauth2/v3/certs"},
			NoEndSession:    true,
			ScopesSupported: []string{"openid", "email", "profile"},
			RefuseScopes:    []string{"offline_access"},
			Refresh:         oidcprovider.RefreshWithAccessTypeOffline,
		},
		emailVerified: oidcprovider.Verified,
		countsAddress: true,
	},
	{
		section:      "Microsoft Entra ID",
		placeholders: map[string]string{"<tenant-id>": "8eaef023-2b34-4da1-9baa-8bc8c9d6a490"},
		shape: oidcprovider.Shape{
			IssuerPath: "/8eaef023-2b34-4da1-9baa-8bc8c9d6a490/v2.0",
			Paths: oidcprovider.Paths{
				Authorize:  "/8eaef023-2b34-4da1-9baa-8bc8c9d6a490/oauth2/v2.0/authorize",
				Token:      "/8eaef023-2b34-4da1-9baa-8bc8c9d6a490/oauth2/v2.0/token",
				Userinfo:   "/oidc/userinfo", // graph.microsoft.com's
				Revoke:     "/8eaef023-2b34-4da1-9baa-8bc8c9d6a490/oauth2/v2.0/revoke",
				EndSession: "/8eaef023-2b34-4da1-9baa-8bc8c9d6a490/oauth2/v2.0/logout",
				Keys:       "/8eaef023-2b34-4da1-9baa-8bc8c9d6a490/discovery/v2.0/keys"},
			Refresh: oidcprovider.RefreshWithOfflineAccess,
		},
		// No email_verified, no azp in the ID token; the tenant in tid.
		idToken: func(c map[string]any) {
			delete(c, "azp")
			c["tid"], c["ver"] = "8eaef023-2b34-4da1-9baa-8bc8c9d6a490", "2.0"
		},
		countsAddress: false,
	},
}

// deploySettings returns the environment settings of a section of
// docs/DEPLOY.md: the KEY=value lines of its first sh code block, quotes
// removed, placeholders filled.
func deploySettings(t *testing.T, section string, placeholders map[string]string) map[string]string {
	t.Helper()
	doc, err := os.ReadFile("../docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(doc), "\n### "+section+"\n")
	if !ok {
		t.Fatalf("docs/DEPLOY.md has no section %q", section)
	}
	if i := regexp.MustCompile(`\n##+ `).FindStringIndex(body); i != nil {
		body = body[:i[0]]
	}
	_, block, ok := strings.Cut(body, "```sh\n")
	if !ok {
		t.Fatalf("the %s section has no sh code block", section)
	}
	block, _, _ = strings.Cut(block, "```")
	env := map[string]string{}
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line), "\\"))
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v = strings.Trim(v, `"'`)
		for ph, val := range placeholders {
			v = strings.ReplaceAll(v, ph, val)
		}
		if strings.ContainsAny(v, "<>") {
			t.Fatalf("the %s section's %s has an unfilled placeholder: %q", section, k, v)
		}
		env[k] = v
	}
	return env
}

// oidcSettingsFrom applies a section's settings to admit's OpenID Connect
// configuration as `admit serve` reads them (ADMIT_OIDC_SCOPES split on
// spaces or commas, ADMIT_OIDC_TRUST_EMAIL=1), with the issuer's origin
// moved to the loopback provider and its path kept as the section gives
// it. The client ID and secret stay the test provider's.
func oidcSettingsFrom(t *testing.T, env map[string]string, p *oidcprovider.Provider) func(*identity.OIDCConfig) {
	t.Helper()
	known := []string{"ADMIT_OIDC_ISSUER", "ADMIT_OIDC_SCOPES", "ADMIT_OIDC_TRUST_EMAIL", "ADMIT_OIDC_PROVIDER_NAME"}
	for k := range env {
		if !slices.Contains(known, k) {
			t.Fatalf("the section sets %s, which this test does not apply", k)
		}
	}
	iss, err := url.Parse(env["ADMIT_OIDC_ISSUER"])
	if err != nil || iss.Scheme != "https" || iss.Host == "" {
		t.Fatalf("the section's ADMIT_OIDC_ISSUER %q is not an https URL", env["ADMIT_OIDC_ISSUER"])
	}
	local := mustURL(t, p.Issuer)
	iss.Scheme, iss.Host = local.Scheme, local.Host
	scopes := "openid email"
	if v, ok := env["ADMIT_OIDC_SCOPES"]; ok {
		scopes = v
	}
	return func(c *identity.OIDCConfig) {
		c.Issuer = iss.String()
		c.Scopes = strings.Fields(strings.ReplaceAll(scopes, ",", " "))
		c.TrustEmail = env["ADMIT_OIDC_TRUST_EMAIL"] == "1"
	}
}

// TestOIDC_DeploySectionsWorkAgainstEachProductsBehaviour runs, for each
// provider section of docs/DEPLOY.md, the settings its code block gives
// against the test provider shaped as that product behaves: sign-in to
// the owner console, whether a verified address counts, the session kept
// through a refresh when the access token expires (for a second sign-in
// too), and sign-out at the provider exactly when it advertises one.
func TestOIDC_DeploySectionsWorkAgainstEachProductsBehaviour(t *testing.T) {
	for _, pr := range oidcProducts {
		t.Run(pr.section, func(t *testing.T) {
			env := deploySettings(t, pr.section, pr.placeholders)
			p := oidcprovider.StartShaped(t, pr.shape)
			if pr.idToken != nil {
				p.SetIDTokenClaims(pr.idToken)
			}
			app := MustStartApp(t, withOIDC(p), withOIDCSettings(oidcSettingsFrom(t, env, p)))
			owner := oidcprovider.User{Sub: oidcSub("owner@example.test"), Email: "owner@example.test", EmailVerified: pr.emailVerified}

			// Sign-in, twice (two browsers): each reaches the console.
			var clients []*testClient
			for range 2 {
				c := app.NewClient(t)
				p.SetUser(owner)
				if resp := c.OIDCSignIn(t, "/owner"); resp.StatusCode != http.StatusSeeOther {
					t.Fatalf("sign-in with the section's settings: status %d: %s", resp.StatusCode, resp.Body)
				}
				if got := ownerStatus(t, c); got != http.StatusOK {
					t.Fatalf("owner console: status %d", got)
				}
				clients = append(clients, c)
			}

			// A verified address counts, or not, as the section says.
			inv := newAccessKit(app).Invite(t, app.Demo, "reader@example.com", true)
			reader := app.NewClient(t)
			p.SetUser(oidcprovider.User{Sub: oidcSub("reader@example.com"), Email: "reader@example.com", EmailVerified: pr.emailVerified})
			reader.OIDCSignIn(t, "/redeem")
			reader.CSRF(t)
			want := map[bool]int{true: http.StatusSeeOther, false: http.StatusNotFound}[pr.countsAddress]
			if got := reader.RedeemForm(t, inv.Code).StatusCode; got != want {
				t.Fatalf("redeeming with the product's verified address: status %d, want %d", got, want)
			}

			// Past the access token's hour, both sessions live on through
			// a refresh.
			app.Clock.Add(2 * time.Hour)
			for i, c := range clients {
				if got := ownerStatus(t, c); got != http.StatusOK {
					t.Fatalf("sign-in %d after its access token expired: status %d, want 200 through a refresh", i+1, got)
				}
			}
			if got := p.Refreshes(); got != 2 {
				t.Fatalf("refreshes=%d, want 2", got)
			}

			checkProductSignOut(t, app, clients[0], pr)
		})
	}
}

// checkProductSignOut signs c out: admit's session ends, and the browser
// is offered the provider's own sign-out exactly when its discovery
// advertises end_session_endpoint.
func checkProductSignOut(t *testing.T, app *testApp, c *testClient, pr oidcProduct) {
	t.Helper()
	resp := c.PostForm(t, "/sign-out", url.Values{"csrf": {c.CSRF(t)}})
	link := regexp.MustCompile(`href="([^"]*)"[^>]*data-testid="provider-sign-out"`).FindStringSubmatch(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: status %d", resp.StatusCode)
	}
	if got := c.Get(t, "/api/csrf").StatusCode; got != http.StatusUnauthorized {
		t.Fatalf("after sign-out: status %d, want 401", got)
	}
	if pr.shape.NoEndSession {
		if link != nil {
			t.Fatalf("sign-out offers %q, but the provider advertises no end_session_endpoint", link[1])
		}
		return
	}
	if link == nil {
		t.Fatal("sign-out does not offer the provider's end_session_endpoint")
	}
	loc := mustURL(t, html.UnescapeString(link[1]))
	if loc.Path != pr.shape.Paths.EndSession {
		t.Fatalf("provider sign-out at %s, want %s", loc.Path, pr.shape.Paths.EndSession)
	}
	r, err := c.Client.Get(loc.String())
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if back, _ := r.Location(); r.StatusCode/100 != 3 || back == nil || back.String() != app.URL+"/" {
		t.Fatalf("provider sign-out: status %d Location %v, want back to admit", r.StatusCode, back)
	}
}

// TestOIDC_DeploySectionsConfigureAdmitServe starts the built admit serve
// with each provider section's settings exactly as its code block gives
// them (the issuer's origin moved to the loopback provider shaped as the
// product): the configuration is accepted, the authorization request asks
// for what the section says, and a person signs in to /me/account.
func TestOIDC_DeploySectionsConfigureAdmitServe(t *testing.T) {
	bin := mustBuildAdmit(t)
	for _, pr := range oidcProducts {
		t.Run(pr.section, func(t *testing.T) {
			env := deploySettings(t, pr.section, pr.placeholders)
			p := oidcprovider.StartShaped(t, pr.shape)
			if pr.idToken != nil {
				p.SetIDTokenClaims(pr.idToken)
			}
			var cfg identity.OIDCConfig
			oidcSettingsFrom(t, env, p)(&cfg)
			addr, err := proc.FreeLoopbackAddr()
			if err != nil {
				t.Fatal(err)
			}
			base := "http://" + addr
			serveEnv := append(proc.ParentEnv(), "ADMIT_DATA="+t.TempDir(), "ADMIT_ADDR="+addr, "ADMIT_PUBLIC_URL="+base,
				"ADMIT_OIDC_CLIENT_ID="+p.ClientID, "ADMIT_OIDC_CLIENT_SECRET="+p.ClientSecret)
			for k, v := range env {
				if k == "ADMIT_OIDC_ISSUER" {
					v = cfg.Issuer
				}
				serveEnv = append(serveEnv, k+"="+v)
			}
			p.AllowRedirect(base+"/auth/callback", base+"/")
			srv, err := proc.Start(context.Background(), bin, t.TempDir(), serveEnv, filepath.Join(t.TempDir(), "admit.log"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Stop(10 * time.Second) })

			jar, _ := cookiejar.New(nil)
			browser := &http.Client{Jar: jar, Timeout: 10 * time.Second,
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := browser.Get(srv.BaseURL + "/auth/start?redirect_url=%2Fme%2Faccount")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			auth, err := resp.Location()
			if err != nil || auth.Path != pr.shape.Paths.Authorize {
				t.Fatalf("/auth/start: status %d, want a redirect to %s", resp.StatusCode, pr.shape.Paths.Authorize)
			}
			wantScope, wantAccess := strings.Join(cfg.Scopes, " "), ""
			if pr.shape.Refresh == oidcprovider.RefreshWithAccessTypeOffline {
				wantScope, wantAccess = strings.TrimSpace(strings.ReplaceAll(wantScope, "offline_access", "")), "offline"
			}
			if q := auth.Query(); q.Get("scope") != wantScope || q.Get("access_type") != wantAccess {
				t.Fatalf("authorization request: scope=%q access_type=%q, want %q and %q",
					q.Get("scope"), q.Get("access_type"), wantScope, wantAccess)
			}

			const sub = "sub-serve"
			p.SetUser(oidcprovider.User{Sub: sub, Email: "person@example.com", EmailVerified: pr.emailVerified})
			browser.CheckRedirect = nil
			status, body := getFollowing(t, browser, auth.String())
			if uid := identity.OIDCUserID(cfg.Issuer, sub); status != http.StatusOK || !strings.Contains(body, uid) {
				t.Fatalf("after signing in, /me/account: status %d, want the user ID", status)
			}
		})
	}
}

// TestOIDC_EntraMultiTenantIssuerIsRefused: Entra ID's multi-tenant
// endpoint (/common/v2.0) states the issuer "/{tenantid}/v2.0" in its
// discovery document, which is not the configured issuer; admit refuses
// it and /readyz says why, as docs/DEPLOY.md's Entra ID section warns.
func TestOIDC_EntraMultiTenantIssuerIsRefused(t *testing.T) {
	p := oidcprovider.StartShaped(t, oidcprovider.Shape{IssuerPath: "/common/v2.0", DiscoveryIssuerPath: "/{tenantid}/v2.0"})
	app := MustStartApp(t, withOIDC(p), withoutOIDCDiscovery())
	if err := app.OIDCId.Discover(context.Background()); err == nil {
		t.Fatal("discovery of the multi-tenant endpoint succeeded")
	}
	if r := app.NewClient(t).Get(t, "/readyz"); r.StatusCode != http.StatusServiceUnavailable ||
		!strings.Contains(r.Body, "discovery answered with another issuer") {
		t.Fatalf("/readyz: %d %s", r.StatusCode, r.Body)
	}
}

// TestOIDC_WithoutARefreshTokenTheSessionEndsWithItsAccessToken: Google
// configured without offline_access gives no refresh token, so, as
// docs/DEPLOY.md's Google section says, the session — an owner's too —
// ends when the access token expires, and the person must sign in again.
func TestOIDC_WithoutARefreshTokenTheSessionEndsWithItsAccessToken(t *testing.T) {
	google := oidcProducts[slices.IndexFunc(oidcProducts, func(p oidcProduct) bool { return p.section == "Google" })]
	p := oidcprovider.StartShaped(t, google.shape)
	app := MustStartApp(t, withOIDC(p), withOIDCSettings(func(c *identity.OIDCConfig) { c.Scopes = []string{"openid", "email"} }))
	c := app.NewClient(t)
	c.SignIn(t, "owner@example.test")
	app.Clock.Add(59 * time.Minute)
	if got := ownerStatus(t, c); got != http.StatusOK {
		t.Fatalf("owner console within the access token's hour: status %d", got)
	}
	app.Clock.Add(2 * time.Minute)
	if got := ownerStatus(t, c); got != http.StatusSeeOther {
		t.Fatalf("owner console after the access token expired without a refresh token: status %d, want 303 to sign in", got)
	}
	if n := sessionCount(t, app); n != 0 || p.Refreshes() != 0 {
		t.Fatalf("%d sessions and %d refreshes, want none", n, p.Refreshes())
	}
}
