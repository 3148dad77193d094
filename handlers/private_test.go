package handlers

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"admit/assets"
	"admit/internal/clerkfake"
	"admit/internal/identity"
	"admit/store"
)

// pngBytes is a tiny PNG (a 1×1 pixel) for private asset tests.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00IEND\xaeB`\x82")

// pdfBytes is a minimal PDF-looking file.
var pdfBytes = []byte("%PDF-1.4\n% private launch notes\n%%EOF\n")

// privatePaths are the page, API and asset of one program's private content.
func privatePaths(slug, asset string) []string {
	return []string{"/early-access/" + slug, "/api/me/early-access/" + slug, "/early-access/" + slug + "/assets/" + asset}
}

// wantPrivateDenied fails unless every private path of the program answers
// the same 404 as a program that does not exist, without the secret text.
func wantPrivateDenied(t *testing.T, c *testClient, slug, asset, secret string) {
	t.Helper()
	missing := []string{"/early-access/no-such-program", "/api/me/early-access/no-such-program",
		"/early-access/no-such-program/assets/" + asset}
	for i, path := range privatePaths(slug, asset) {
		r := c.Get(t, path)
		want := c.Get(t, missing[i])
		if r.StatusCode != http.StatusNotFound || r.Body != want.Body {
			t.Fatalf("GET %s: %d, want the same 404 as a missing program", path, r.StatusCode)
		}
		if secret != "" && strings.Contains(r.Body, secret) {
			t.Fatalf("GET %s: the denial shows private content", path)
		}
		if got, want := r.Header.Get("Cache-Control"), "private, no-store"; got != want {
			t.Fatalf("GET %s: Cache-Control=%q, want %q", path, got, want)
		}
	}
}

// wantPrivateReadable fails unless the page and API show body and the
// asset answers with its bytes.
func wantPrivateReadable(t *testing.T, c *testClient, slug, asset, body string, assetBytes []byte) {
	t.Helper()
	paths := privatePaths(slug, asset)
	page := c.Get(t, paths[0])
	if page.StatusCode != http.StatusOK || !strings.Contains(page.Body, body) {
		t.Fatalf("GET %s: %d, want 200 with %q", paths[0], page.StatusCode, body)
	}
	api := c.Get(t, paths[1])
	var v struct {
		Program string `json:"program"`
		Body    string `json:"body"`
	}
	if err := json.Unmarshal([]byte(api.Body), &v); err != nil || api.StatusCode != http.StatusOK ||
		v.Program != slug || !strings.Contains(v.Body, body) {
		t.Fatalf("GET %s: %d %q, want 200 for program %s with %q", paths[1], api.StatusCode, api.Body, slug, body)
	}
	a := c.Get(t, paths[2])
	if a.StatusCode != http.StatusOK || a.Body != string(assetBytes) {
		t.Fatalf("GET %s: %d, want 200 with the program's own bytes", paths[2], a.StatusCode)
	}
}

func TestPrivateAPI_ReturnsProgramBodyAndRevision(t *testing.T) {
	app := MustStartApp(t)
	newAccessKit(app).Grant(t, app.Demo, "api-reader@example.com", identity.DevUserID("api-reader@example.com"))
	c := app.NewClient(t)
	c.SignIn(t, "api-reader@example.com")
	r := c.Get(t, "/api/me/early-access/demo")
	if got, want := r.StatusCode, http.StatusOK; got != want {
		t.Fatalf("status=%d, want %d", got, want)
	}
	want := "{\"program\":\"demo\",\"body\":\"Welcome to the admit demo.\\n\\nThis text is private: only people whose invitation was redeemed can read it.\",\"revision\":1}\n"
	if r.Body != want {
		t.Fatalf("body=%q, want %q", r.Body, want)
	}
	if got, want := r.Header.Get("Cache-Control"), "private, no-store"; got != want {
		t.Fatalf("Cache-Control=%q, want %q", got, want)
	}
}

func TestPrivatePage_RendersOwnerTextEscapedInParagraphs(t *testing.T) {
	app := MustStartApp(t)
	k := newAccessKit(app)
	p := k.Program(t, "escaped", "<script>alert('x')</script> & more\n\nSecond paragraph,\nsecond line.\n\n\n<b>Third</b>")
	k.Grant(t, p, "html@example.com", identity.DevUserID("html@example.com"))
	c := app.NewClient(t)
	c.SignIn(t, "html@example.com")
	r := c.Get(t, "/early-access/escaped")
	if got, want := r.StatusCode, http.StatusOK; got != want {
		t.Fatalf("status=%d, want %d", got, want)
	}
	checkSecurityHeaders(t, "/early-access/escaped", r)
	if got, want := r.Header.Get("Cache-Control"), "private, no-store"; got != want {
		t.Errorf("Cache-Control=%q, want %q", got, want)
	}
	start := strings.Index(r.Body, `data-testid="private-content">`)
	end := strings.Index(r.Body[start:], "</section>")
	if start < 0 || end < 0 {
		t.Fatal("no private content section")
	}
	section := r.Body[start+len(`data-testid="private-content">`) : start+end]
	want := "<p>&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; more</p>" +
		"<p>Second paragraph,<br>second line.</p>" +
		"<p>&lt;b&gt;Third&lt;/b&gt;</p>"
	// Ignore the white space templ puts between tags.
	if got := regexp.MustCompile(`>\s+|\s+<`).ReplaceAllStringFunc(section, strings.TrimSpace); got != want {
		t.Fatalf("content section\n got %s\nwant %s", got, want)
	}
}

func TestPrivateAsset_ServedWithItsTypeNoSniffNoStoreAndASandbox(t *testing.T) {
	app := MustStartApp(t)
	k := newAccessKit(app)
	k.Asset(t, app.Demo, "diagram.png", "image/png", pngBytes)
	k.Asset(t, app.Demo, "notes.pdf", "application/pdf", pdfBytes)
	k.Grant(t, app.Demo, "files@example.com", identity.DevUserID("files@example.com"))
	c := app.NewClient(t)
	c.SignIn(t, "files@example.com")

	page := c.Get(t, "/early-access/demo")
	for _, want := range []string{`<img src="/early-access/demo/assets/diagram.png"`, `href="/early-access/demo/assets/notes.pdf"`} {
		if !strings.Contains(page.Body, want) {
			t.Errorf("the private page lacks %s", want)
		}
	}
	for _, tc := range []struct {
		name, contentType, disposition, csp string
		data                                []byte
	}{
		{"diagram.png", "image/png", `inline; filename="diagram.png"`, assetImageCSP, pngBytes},
		{"notes.pdf", "application/pdf", `attachment; filename="notes.pdf"`, assetPDFCSP, pdfBytes},
	} {
		r := c.Get(t, "/early-access/demo/assets/"+tc.name)
		if got, want := r.StatusCode, http.StatusOK; got != want {
			t.Fatalf("%s: status=%d, want %d", tc.name, got, want)
		}
		if r.Body != string(tc.data) {
			t.Errorf("%s: body differs from the stored bytes", tc.name)
		}
		for header, want := range map[string]string{
			"Content-Type":                 tc.contentType,
			"Content-Disposition":          tc.disposition,
			"X-Content-Type-Options":       "nosniff",
			"Cache-Control":                "private, no-store",
			"Cross-Origin-Resource-Policy": "same-origin",
		} {
			if got := r.Header.Get(header); got != want {
				t.Errorf("%s: %s=%q, want %q", tc.name, header, got, want)
			}
		}
		if csp := r.Header.Get("Content-Security-Policy"); csp != tc.csp || !strings.HasPrefix(csp, "sandbox;") {
			t.Errorf("%s: CSP %q, want %q starting with sandbox", tc.name, csp, tc.csp)
		}
	}
	for _, path := range []string{"/early-access/demo/assets/missing.png", "/early-access/demo/assets/.hidden",
		"/early-access/demo/assets/a%2Fb.png"} {
		if r := c.Get(t, path); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, r.StatusCode)
		}
	}
}

func TestPrivate_GrantForProgramAIsDeniedAtProgramBAndViceVersa(t *testing.T) {
	app := MustStartApp(t)
	k := newAccessKit(app)
	a := app.Demo
	const bodyA, bodyB = "Welcome to the admit demo.", "Beta launch notes, for beta readers only."
	b := k.Program(t, "beta", bodyB)
	imageA, imageB := append([]byte(nil), pngBytes...), append(append([]byte(nil), pngBytes...), []byte("beta")...)
	k.Asset(t, a, "shot.png", "image/png", imageA)
	k.Asset(t, b, "shot.png", "image/png", imageB)

	// Two accounts each hold grants in both programs; one loses B, the
	// other loses A. The remaining grant never opens the revoked program.
	for _, tc := range []struct {
		email              string
		revokeB            bool
		keep, lose         *store.Program
		keepBody, loseBody string
		keepBytes          []byte
	}{
		{"both-x@example.com", true, a, b, bodyA, bodyB, imageA},
		{"both-y@example.com", false, b, a, bodyB, bodyA, imageB},
	} {
		user := identity.DevUserID(tc.email)
		grantA := k.Grant(t, a, tc.email, user)
		grantB := k.Grant(t, b, tc.email, user)
		c := app.NewClient(t)
		c.SignIn(t, tc.email)
		wantPrivateReadable(t, c, a.Slug, "shot.png", bodyA, imageA)
		wantPrivateReadable(t, c, b.Slug, "shot.png", bodyB, imageB)
		if tc.revokeB {
			k.RevokeGrant(t, grantB)
		} else {
			k.RevokeGrant(t, grantA)
		}
		wantPrivateDenied(t, c, tc.lose.Slug, "shot.png", tc.loseBody)
		wantPrivateReadable(t, c, tc.keep.Slug, "shot.png", tc.keepBody, tc.keepBytes)
	}

	// An account with a grant only in A is denied everything of B, and
	// the reverse.
	k.Grant(t, a, "only-a@example.com", identity.DevUserID("only-a@example.com"))
	k.Grant(t, b, "only-b@example.com", identity.DevUserID("only-b@example.com"))
	onlyA := app.NewClient(t)
	onlyA.SignIn(t, "only-a@example.com")
	onlyB := app.NewClient(t)
	onlyB.SignIn(t, "only-b@example.com")
	wantPrivateDenied(t, onlyA, b.Slug, "shot.png", bodyB)
	wantPrivateDenied(t, onlyB, a.Slug, "shot.png", bodyA)
	wantPrivateReadable(t, onlyA, a.Slug, "shot.png", bodyA, imageA)
	wantPrivateReadable(t, onlyB, b.Slug, "shot.png", bodyB, imageB)
}

func TestPrivate_GrantRevokeDeniesTheNextRead(t *testing.T) {
	app := MustStartApp(t)
	k := newAccessKit(app)
	k.Asset(t, app.Demo, "shot.png", "image/png", pngBytes)
	g := k.Grant(t, app.Demo, "revoked-reader@example.com", identity.DevUserID("revoked-reader@example.com"))
	c := app.NewClient(t)
	c.SignIn(t, "revoked-reader@example.com")
	wantPrivateReadable(t, c, "demo", "shot.png", "Welcome to the admit demo.", pngBytes)
	k.RevokeGrant(t, g)
	wantPrivateDenied(t, c, "demo", "shot.png", "Welcome to the admit demo.")
}

func TestPrivate_VerifiedEmailRemovedAtClerkAfterTheGrantIsDenied(t *testing.T) {
	app := MustStartApp(t, withClerk())
	k := newAccessKit(app)
	k.Asset(t, app.Demo, "shot.png", "image/png", pngBytes)
	c := app.NewClient(t)
	user := c.SignIn(t, "moving@example.com")
	k.Grant(t, app.Demo, "moving@example.com", user)
	wantPrivateReadable(t, c, "demo", "shot.png", "Welcome to the admit demo.", pngBytes)

	for name, emails := range map[string][]clerkfake.Email{
		"address removed, another verified": {{Address: "new@example.com", Verified: true}},
		"address no longer verified":        {{Address: "moving@example.com", Verified: false}},
		"no address at all":                 nil,
	} {
		app.Clerk.SetUser(user, emails...)
		for _, path := range privatePaths("demo", "shot.png") {
			if r := c.Get(t, path); r.StatusCode != http.StatusNotFound || strings.Contains(r.Body, "Welcome") {
				t.Fatalf("%s: GET %s: %d, want the generic 404", name, path, r.StatusCode)
			}
		}
	}
	app.Clerk.RemoveUser(user)
	if r := c.Get(t, "/api/me/early-access/demo"); r.StatusCode != http.StatusNotFound {
		t.Fatalf("user deleted at Clerk: %d, want 404", r.StatusCode)
	}
	// Verified again, the grant still stands: the denial came from the
	// fresh lookup, not from a changed grant.
	app.Clerk.SetUser(user, clerkfake.Email{Address: "moving@example.com", Verified: true})
	wantPrivateReadable(t, c, "demo", "shot.png", "Welcome to the admit demo.", pngBytes)
}

func TestPrivate_ClerkDownIs503WithNoContent(t *testing.T) {
	app := MustStartApp(t, withClerk())
	c := app.NewClient(t)
	user := c.SignIn(t, "offline@example.com")
	newAccessKit(app).Grant(t, app.Demo, "offline@example.com", user)
	if r := c.Get(t, "/api/me/early-access/demo"); r.StatusCode != http.StatusOK {
		t.Fatalf("Clerk up: %d", r.StatusCode)
	}
	app.Clerk.SetDown(true)
	for _, path := range []string{"/early-access/demo", "/api/me/early-access/demo"} {
		r := c.Get(t, path)
		if r.StatusCode != http.StatusServiceUnavailable || strings.Contains(r.Body, "Welcome") {
			t.Fatalf("GET %s with Clerk down: %d, want 503 without content", path, r.StatusCode)
		}
	}
}

func TestPrivate_SignedOutIs401OrSignInRedirect(t *testing.T) {
	app := MustStartApp(t)
	anon := app.NewClient(t)
	if r := anon.Get(t, "/api/me/early-access/demo"); r.StatusCode != http.StatusUnauthorized || r.Body != "{\"error\":\"unauthorized\"}\n" {
		t.Fatalf("API: %d %q, want 401", r.StatusCode, r.Body)
	}
	r := anon.Get(t, "/early-access/demo")
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/sign-in?redirect_url=%2Fearly-access%2Fdemo" {
		t.Fatalf("page: %d Location %q, want a redirect to sign-in and back", r.StatusCode, r.Header.Get("Location"))
	}
}

func TestPrivate_ContentIsNeverInPublicResponsesOrAssets(t *testing.T) {
	app := MustStartApp(t)
	const secret = "only people whose invitation was redeemed"
	anon := app.NewClient(t)
	signedIn := app.NewClient(t)
	signedIn.SignIn(t, "curious@example.com")
	for _, c := range []*testClient{anon, signedIn} {
		for _, path := range []string{"/", "/waitlist/demo", "/api/public/programs/demo", "/redeem", "/privacy", "/manage/", "/me"} {
			if r := c.Get(t, path); strings.Contains(r.Body, secret) {
				t.Errorf("GET %s shows private content", path)
			}
		}
	}
	// No public file holds it either: every file of the assets directory,
	// as served under /assets/.
	files, err := os.ReadDir(filepath.Join("..", "assets"))
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	for _, f := range files {
		if f.IsDir() || strings.HasSuffix(f.Name(), ".go") || strings.HasSuffix(f.Name(), "LICENSE") {
			continue
		}
		r := anon.Get(t, assets.Path(f.Name()))
		if r.StatusCode != http.StatusOK {
			continue
		}
		served++
		if strings.Contains(r.Body, secret) {
			t.Errorf("public asset %s holds private content", f.Name())
		}
	}
	if served == 0 {
		t.Fatal("no public asset was fetched: the check proves nothing")
	}
}
