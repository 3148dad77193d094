package handlers

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"admit/store"
)

// openRedirects are return targets that would leave the site (or loop, or
// carry nothing usable) however a browser reads them.
var openRedirects = []string{
	"//evil.example",
	"//evil.example/path",
	"https://evil.example",
	"http://evil.example/",
	"/\\evil.example",
	"/\\/evil.example",
	"\\\\evil.example",
	"/%2F%2Fevil.example",
	"/%2f/evil.example",
	"/%5Cevil.example",
	"/\t/evil.example",
	"/\n/evil.example",
	"/\r//evil.example",
	" /me",
	"javascript:alert(1)",
	"data:text/html,hi",
	"evil.example",
	"me",
	"///evil.example",
	"/@evil.example",
	"/sign-in",
	"/dev/sign-in",
	"",
}

func TestReturnTarget_AcceptsOnlyPathsOnThisSite(t *testing.T) {
	for _, v := range openRedirects {
		if got, ok := returnTarget(v); ok || got != "" {
			t.Errorf("returnTarget(%q) = %q, %v; want refused", v, got, ok)
		}
		if got := signInURL(v); got != "/sign-in" {
			t.Errorf("signInURL(%q) = %q, want the plain sign-in page", v, got)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"/", "/"},
		{"/redeem", "/redeem"},
		{"/early-access/demo", "/early-access/demo"},
		{"/waitlist/demo#section", "/waitlist/demo"},
		{"/owner/programs/p1/entries?state=waiting", "/owner/programs/p1/entries?state=waiting"},
		// A search, or anything holding an address, never rides along.
		{"/owner/programs/p1/entries?state=waiting&q=ada%40example.com", "/owner/programs/p1/entries?state=waiting"},
		{"/owner/programs/p1/entries?q=ada", "/owner/programs/p1/entries"},
		{"/privacy?who=ada@example.com", "/privacy"},
		{"/privacy?redirect_url=/owner", "/privacy"},
	} {
		got, ok := returnTarget(tc.in)
		if !ok || got != tc.want {
			t.Errorf("returnTarget(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}

// signInHiddenTarget is the development form's redirect_url field.
var signInHiddenTarget = regexp.MustCompile(`name="redirect_url" value="([^"]*)"`)

func TestSignIn_OpenRedirectTargetsAreRefused(t *testing.T) {
	app := MustStartApp(t)
	for _, bad := range openRedirects {
		anon := app.NewClient(t)
		page := anon.Get(t, "/sign-in?redirect_url="+url.QueryEscape(bad))
		if page.StatusCode != http.StatusOK {
			t.Fatalf("GET /sign-in?redirect_url=%q: %d", bad, page.StatusCode)
		}
		m := signInHiddenTarget.FindStringSubmatch(page.Body)
		if m == nil || m[1] != "" {
			t.Errorf("GET /sign-in?redirect_url=%q: the form carries %v, want an empty target", bad, m)
		}
		r := anon.PostForm(t, "/dev/sign-in", url.Values{"email": {"reader@example.com"}, "redirect_url": {bad}})
		if got, want := r.Header.Get("Location"), "/me"; r.StatusCode != http.StatusSeeOther || got != want {
			t.Errorf("sign-in with redirect_url=%q: %d Location %q, want 303 %q", bad, r.StatusCode, got, want)
		}
	}
}

func TestSignIn_ReturnsToTheTargetOrTheLandingPage(t *testing.T) {
	app := MustStartApp(t)
	for _, tc := range []struct {
		name, email, target, want string
	}{
		{"a page to return to", "reader@example.com", "/redeem", "/redeem"},
		{"a page with a filter", "owner@example.test", "/owner/programs/x/entries?state=waiting", "/owner/programs/x/entries?state=waiting"},
		{"an owner without a target", "owner@example.test", "", "/owner"},
		{"anyone else without a target", "reader@example.com", "", "/me"},
	} {
		c := app.NewClient(t)
		page := c.Get(t, "/sign-in?redirect_url="+url.QueryEscape(tc.target))
		m := signInHiddenTarget.FindStringSubmatch(page.Body)
		if m == nil || html.UnescapeString(m[1]) != tc.target {
			t.Errorf("%s: the sign-in form carries %v, want %q", tc.name, m, tc.target)
		}
		r := c.PostForm(t, "/dev/sign-in", url.Values{"email": {tc.email}, "redirect_url": {tc.target}})
		if got := r.Header.Get("Location"); r.StatusCode != http.StatusSeeOther || got != tc.want {
			t.Errorf("%s: %d Location %q, want 303 %q", tc.name, r.StatusCode, got, tc.want)
		}
		// Signed in already, the sign-in page offers the same way on.
		again := c.Get(t, "/sign-in?redirect_url="+url.QueryEscape(tc.target))
		if again.StatusCode != http.StatusOK || !strings.Contains(again.Body, `href="`+html.EscapeString(tc.want)+`" role="button" data-testid="continue"`) {
			t.Errorf("%s: signed in, /sign-in is %d without a Continue link to %q", tc.name, again.StatusCode, tc.want)
		}
	}
}

func TestSignIn_UnauthorizedRequestsReturnToTheirPageNeverToAPostURL(t *testing.T) {
	app := MustStartApp(t)
	entryID := mustInsertEntry(t, app.DB, app.Demo, "queued@example.com", store.StateWaiting)
	entryPage := "/owner/programs/" + app.Demo.ID + "/entries/" + entryID
	queue := "/owner/programs/" + app.Demo.ID + "/entries"
	anon := app.NewClient(t)

	// htmx: back to the page it was on (HX-Current-URL), not the POST URL.
	r := anon.PostForm(t, entryPage+"/select", url.Values{"reason": {"owner_discretion"}},
		"HX-Request", "true", "HX-Current-URL", app.URL+entryPage)
	if got, want := r.Header.Get("HX-Redirect"), "/sign-in?redirect_url="+url.QueryEscape(entryPage); r.StatusCode != http.StatusUnauthorized || got != want {
		t.Fatalf("htmx select signed out: %d HX-Redirect %q, want 401 %q", r.StatusCode, got, want)
	}
	// A search in the page's address stays behind.
	r = anon.Get(t, queue+"?state=waiting", "HX-Request", "true",
		"HX-Current-URL", app.URL+queue+"?state=waiting&q="+url.QueryEscape("queued@example.com"))
	if got, want := r.Header.Get("HX-Redirect"), "/sign-in?redirect_url="+url.QueryEscape(queue+"?state=waiting"); got != want {
		t.Fatalf("htmx queue signed out: HX-Redirect %q, want %q", got, want)
	}
	// Another site's page is no place to return to.
	r = anon.PostForm(t, entryPage+"/select", url.Values{}, "HX-Request", "true", "HX-Current-URL", "https://evil.example"+entryPage)
	if got, want := r.Header.Get("HX-Redirect"), "/sign-in"; got != want {
		t.Fatalf("htmx with a foreign current URL: HX-Redirect %q, want %q", got, want)
	}

	// A plain form post: the page of the same path when there is one, and
	// the 401 page links to sign-in.
	for _, tc := range []struct{ path, want string }{
		{"/redeem", "/sign-in?redirect_url=%2Fredeem"},
		{"/me/waitlist/demo/withdraw", "/sign-in?redirect_url=" + url.QueryEscape("/me/waitlist/demo/withdraw")},
		{entryPage + "/select", "/sign-in"},
	} {
		r := anon.PostForm(t, tc.path, url.Values{"csrf": {"x"}})
		if r.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST %s signed out: %d, want 401", tc.path, r.StatusCode)
			continue
		}
		if want := `href="` + html.EscapeString(tc.want) + `" role="button" data-testid="error-sign-in"`; !strings.Contains(r.Body, want) {
			t.Errorf("POST %s signed out: the 401 page lacks %s", tc.path, want)
		}
	}

	// The queue's bulk select: its path is the entry route's pattern with
	// the entry "select", so only the form's own back field leads back.
	for _, tc := range []struct{ back, want string }{
		{"", "/sign-in"},
		{queue + "?state=waiting&q=queued", "/sign-in?redirect_url=" + url.QueryEscape(queue+"?state=waiting")},
		{"//evil.example" + queue, "/sign-in"},
		{entryPage + "/select", "/sign-in"},
		{queue + "/select", "/sign-in"},
	} {
		form := url.Values{"csrf": {"x"}, "entryIds": {entryID}, "reason": {"meets_policy"}}
		if tc.back != "" {
			form.Set("back", tc.back)
		}
		r := anon.PostForm(t, queue+"/select", form)
		if want := `href="` + html.EscapeString(tc.want) + `" role="button" data-testid="error-sign-in"`; r.StatusCode != http.StatusUnauthorized || !strings.Contains(r.Body, want) {
			t.Errorf("bulk select signed out with back %q: %d, the 401 page lacks %s", tc.back, r.StatusCode, want)
		}
		if !strings.Contains(r.Body, "was not saved") || r.Header.Get("Cache-Control") != "private, no-store" {
			t.Errorf("bulk select signed out: the 401 page does not say the action was not saved, or is cacheable")
		}
	}
	// With htmx, the sign-in page it is sent to says the action was not saved, once.
	c := app.NewClient(t)
	r = c.PostForm(t, entryPage+"/select", url.Values{"reason": {"owner_discretion"}},
		"HX-Request", "true", "HX-Current-URL", app.URL+entryPage)
	if got := noteOf(c.Get(t, r.Header.Get("HX-Redirect")).Body); !strings.Contains(got, "was not saved") {
		t.Fatalf("the sign-in page after an htmx write says %q", got)
	}
	if got := noteOf(c.Get(t, "/sign-in").Body); got != "" {
		t.Fatalf("the note shows again: %q", got)
	}

	// A page asked for with GET comes back with its filters, without a search.
	r = anon.Get(t, queue+"?state=waiting&q=queued")
	if got, want := r.Header.Get("Location"), "/sign-in?redirect_url="+url.QueryEscape(queue+"?state=waiting"); r.StatusCode != http.StatusSeeOther || got != want {
		t.Fatalf("GET the queue signed out: %d Location %q, want %q", r.StatusCode, got, want)
	}
	if strings.Contains(app.Logs.String(), "queued@example.com") {
		t.Fatal("the log holds the address")
	}
}

func TestSignIn_ClerkReturnsThroughTheSignInPage(t *testing.T) {
	app := MustStartApp(t, withClerk())
	anon := app.NewClient(t)
	page := anon.Get(t, "/sign-in?redirect_url="+url.QueryEscape("/redeem"))
	if want := `data-clerk-mount="sign-in" data-clerk-redirect="/sign-in?redirect_url=%2Fredeem"`; !strings.Contains(page.Body, want) {
		t.Fatalf("Clerk sign-in page lacks %s", want)
	}
	page = anon.Get(t, "/sign-in?redirect_url="+url.QueryEscape("//evil.example"))
	if want := `data-clerk-redirect="/sign-in"`; !strings.Contains(page.Body, want) {
		t.Fatalf("Clerk sign-in page with a foreign target lacks %s", want)
	}

	// ClerkJS comes back to the sign-in page signed in; its script goes on
	// to the target, or to the landing page.
	reader := app.NewClient(t)
	reader.SignIn(t, "reader@example.com")
	for target, want := range map[string]string{"/redeem": "/redeem", "": "/me"} {
		r := reader.Get(t, "/sign-in?redirect_url="+url.QueryEscape(target))
		if w := `data-clerk-mount="continue" data-clerk-redirect="` + html.EscapeString(want) + `"`; r.StatusCode != http.StatusOK || !strings.Contains(r.Body, w) {
			t.Errorf("signed in with target %q: %d, body lacks %s", target, r.StatusCode, w)
		}
	}
	owner := app.NewClient(t)
	owner.SignIn(t, "owner@example.test")
	if r := owner.Get(t, "/sign-in"); !strings.Contains(r.Body, `data-clerk-mount="continue" data-clerk-redirect="/owner"`) {
		t.Error("a signed-in owner is not sent on to the console")
	}
}

func TestNavigation_ShowsTheSignedInAddress(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts []appOption
	}{{"dev", nil}, {"clerk", []appOption{withClerk()}}} {
		t.Run(mode.name, func(t *testing.T) {
			app := MustStartApp(t, mode.opts...)
			c := app.NewClient(t)
			c.SignIn(t, "shown@example.com")
			for _, path := range []string{"/", "/privacy", "/me", "/redeem"} {
				r := c.Get(t, path)
				if !strings.Contains(r.Body, `data-testid="signed-in-as"><small>Signed in as <strong>shown@example.com</strong>`) {
					t.Errorf("%s does not show who is signed in", path)
				}
				if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
					t.Errorf("%s names the address with Cache-Control %q", path, got)
				}
			}
			if r := app.NewClient(t).Get(t, "/privacy"); strings.Contains(r.Body, "Signed in as") {
				t.Error("a signed-out page says someone is signed in")
			}
		})
	}
}

// noteOf returns the confirmation a page shows after a redirect, or "".
func noteOf(body string) string {
	m := regexp.MustCompile(`data-testid="flash-message">([^<]*)<`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

func TestNotes_SignOutWithdrawalAndRedemptionAreConfirmedOnce(t *testing.T) {
	app := MustStartApp(t)
	k := newAccessKit(app)
	const email = "confirmed@example.com"
	inv := k.Invite(t, app.Demo, email, true)
	c := app.NewClient(t)
	c.SignIn(t, email)
	tok := c.CSRF(t)

	r := c.PostForm(t, "/redeem", url.Values{"csrf": {tok}, "code": {inv.Code}})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("redeem: %d", r.StatusCode)
	}
	page := c.Get(t, r.Header.Get("Location"))
	if got := noteOf(page.Body); !strings.Contains(got, "Your code worked") {
		t.Fatalf("the private page after redeeming says %q", got)
	}
	if got := noteOf(c.Get(t, "/early-access/demo").Body); got != "" {
		t.Fatalf("the note shows again: %q", got)
	}

	r = c.PostForm(t, "/me/waitlist/demo/withdraw", url.Values{"csrf": {tok}})
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("withdraw: %d", r.StatusCode)
	}
	me := c.Get(t, "/me")
	if got, want := noteOf(me.Body), withdrawnNote(app.Demo.Name); got != want {
		t.Fatalf("/me after withdrawing says %q, want %q", got, want)
	}
	if got := noteOf(c.Get(t, "/me").Body); got != "" {
		t.Fatalf("the note shows again: %q", got)
	}

	r = c.PostForm(t, "/sign-out", url.Values{"csrf": {tok}})
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/" {
		t.Fatalf("sign out: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	home := c.Get(t, "/")
	if got, want := noteOf(home.Body), "You are signed out."; got != want {
		t.Fatalf("home after signing out says %q, want %q", got, want)
	}
	if strings.Contains(home.Body, "Signed in as") || strings.Contains(home.Body, email) {
		t.Fatal("after signing out the page still names the address")
	}
	if got := noteOf(c.Get(t, "/").Body); got != "" {
		t.Fatalf("the note shows again: %q", got)
	}
	if strings.Contains(app.Logs.String(), email) {
		t.Fatal("the log holds the address")
	}
}
