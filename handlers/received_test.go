package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"admit/store"
)

// browserAccept is what a browser sends when it navigates.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

func TestSignup_BrowserFormIs303ToAPageThatShowsTheLinkOnce(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	const email = "reloader@example.com"
	key := formRequestKey(t, c.Get(t, signupPath).Body)
	form := signupFormValues(key, email, 1, true)

	r := c.PostForm(t, signupPath, form, "Accept", browserAccept)
	if got, want := r.StatusCode, http.StatusSeeOther; got != want {
		t.Fatalf("browser form signup: status %d, want %d\n%s", got, want, r.Body)
	}
	loc := r.Header.Get("Location")
	if loc != "/waitlist/demo/received" {
		t.Fatalf("Location %q, want the received page", loc)
	}
	if got, want := r.Header.Get("Cache-Control"), "private, no-store"; got != want {
		t.Errorf("303 Cache-Control=%q, want %q", got, want)
	}
	// rule: the token is in no URL and no header but the sealed cookie.
	var sealed *http.Cookie
	for _, ck := range (&http.Response{Header: r.Header}).Cookies() {
		if ck.Name == receivedCookie {
			sealed = ck
		}
	}
	if sealed == nil || sealed.Path != "/waitlist/" || !sealed.HttpOnly || sealed.MaxAge <= 0 || sealed.MaxAge > 600 {
		t.Fatalf("received cookie %+v, want HttpOnly, path /waitlist/, minutes long", sealed)
	}
	if n := appCount(t, app, `SELECT count(*) FROM entries WHERE email_key = ?`, email); n != 1 {
		t.Fatalf("entries=%d, want 1", n)
	}

	page := c.Get(t, loc)
	if got, want := page.StatusCode, http.StatusOK; got != want {
		t.Fatalf("received page: %d, want %d", got, want)
	}
	if got, want := page.Header.Get("Cache-Control"), "private, no-store"; got != want {
		t.Errorf("received page Cache-Control=%q, want %q", got, want)
	}
	tok := pageToken(t, page.Body)
	if tok == "" || strings.Contains(loc, tok) || strings.Contains(r.Header.Get("Set-Cookie"), tok) {
		t.Fatalf("the received page shows no token, or the token travelled in the clear")
	}
	if n := appCount(t, app, `SELECT count(*) FROM entries WHERE email_key = ? AND removal_hash = ?`, email, store.HashRemovalToken(tok)); n != 1 {
		t.Fatalf("the shown token matches %d entries, want 1", n)
	}
	// The link comes first: before anything about what was stored.
	if i, j := strings.Index(page.Body, `data-testid="removal-link"`), strings.Index(page.Body, "What we stored"); i < 0 || j < 0 || i > j {
		t.Errorf("the removal link is not the first thing on the page")
	}

	// Reload: the link is gone, the page says why and how else to leave.
	again := c.Get(t, loc)
	if again.StatusCode != http.StatusOK || pageToken(t, again.Body) != "" || strings.Contains(again.Body, tok) {
		t.Fatalf("reloading shows the link again: %d", again.StatusCode)
	}
	for _, want := range []string{`data-testid="link-shown"`, `href="/sign-in?redirect_url=%2Fme"`} {
		if !strings.Contains(again.Body, want) {
			t.Errorf("the reloaded page lacks %s", want)
		}
	}
	if n := appCount(t, app, `SELECT count(*) FROM entries WHERE email_key = ?`, email); n != 1 {
		t.Fatalf("after reloading entries=%d, want 1: something was posted again", n)
	}

	// Back and submit again: the same key is a replay, shown as such.
	r = c.PostForm(t, signupPath, form, "Accept", browserAccept)
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("browser replay: %d, want 303", r.StatusCode)
	}
	replay := c.Get(t, r.Header.Get("Location"))
	if pageToken(t, replay.Body) != "" || !strings.Contains(replay.Body, `data-testid="replay"`) {
		t.Fatal("the replay's page shows a link or does not say it was received before")
	}

	// Another program's page never shows this program's answer.
	r = c.PostForm(t, signupPath, signupFormValues(formRequestKey(t, c.Get(t, signupPath).Body), "other@example.com", 1, true),
		"Accept", browserAccept)
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("second browser signup: %d, want 303", r.StatusCode)
	}
	if other := c.Get(t, "/waitlist/nothere/received"); other.StatusCode != http.StatusNotFound {
		t.Fatalf("received page of an unknown program: %d, want 404", other.StatusCode)
	}
	if strings.Contains(app.Logs.String(), tok) || strings.Contains(app.Logs.String(), email) {
		t.Fatal("the log holds the token or the address")
	}
}

func TestSignup_BrowserFormAnswersTheSameForNewAndListedAddresses(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	mustJoinDemo(t, c, "listed@example.com")
	var pages []string
	for _, email := range []string{"listed@example.com", "fresh@example.com"} {
		key := formRequestKey(t, c.Get(t, signupPath).Body)
		r := c.PostForm(t, signupPath, signupFormValues(key, email, 1, true), "Accept", browserAccept)
		if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/waitlist/demo/received" {
			t.Fatalf("%s: %d %q", email, r.StatusCode, r.Header.Get("Location"))
		}
		page := c.Get(t, "/waitlist/demo/received")
		tok := pageToken(t, page.Body)
		if tok == "" {
			t.Fatalf("%s: no link shown", email)
		}
		// Each page names the address it was sent with, and nothing else
		// differs.
		if !strings.Contains(page.Body, `data-testid="received-address">`+email+`<`) {
			t.Fatalf("%s: the received page does not name the address", email)
		}
		pages = append(pages, strings.ReplaceAll(strings.ReplaceAll(page.Body, tok, "TOKEN"), email, "ADDRESS"))
	}
	if pages[0] != pages[1] {
		t.Fatal("the received page differs between a listed and a new address")
	}
}

func TestSignup_NonBrowserFormPostKeepsThe202Page(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	for _, accept := range []string{"", "*/*", "application/json"} {
		key := formRequestKey(t, c.Get(t, signupPath).Body)
		r := c.PostForm(t, signupPath, signupFormValues(key, "plain"+itoa(len(accept))+"@example.com", 1, true), "Accept", accept)
		if r.StatusCode != http.StatusAccepted || pageToken(t, r.Body) == "" {
			t.Fatalf("Accept %q: %d, want the 202 page with its link", accept, r.StatusCode)
		}
	}
}

func TestRemoval_FormTakesThePastedLink(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	for i, paste := range []func(tok string) string{
		func(tok string) string { return app.URL + "/manage/#" + tok },
		func(tok string) string { return "  " + app.URL + "/manage/#" + strings.ToUpper(tok) + "\n" },
		func(tok string) string { return "/manage/#" + tok },
		func(tok string) string { return tok },
	} {
		email := "paster" + itoa(i) + "@example.com"
		tok := mustJoinDemo(t, c, email)
		id := mustEntryIDByEmail(t, app, email)
		r := c.PostForm(t, "/manage/remove", url.Values{"token": {paste(tok)}})
		if r.StatusCode != http.StatusOK || !strings.Contains(r.Body, `data-testid="removed"`) {
			t.Fatalf("paste %d: %d, want the removal processed", i, r.StatusCode)
		}
		wantErased(t, app, id, email)
	}
	// Another site's link with a token is still only a token: a link is
	// never followed, only its fragment read.
	if r := c.PostForm(t, "/manage/remove", url.Values{"token": {"https://evil.example/#zz"}}); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("a foreign link: %d, want 400", r.StatusCode)
	}
}

func TestManage_WithoutScriptExplainsWhatToPasteAndKeepsNothing(t *testing.T) {
	app := MustStartApp(t)
	r := app.NewClient(t).Get(t, "/manage/")
	for _, want := range []string{`data-testid="manage-noscript"`, `id="remove-form" data-testid="remove-form" autocomplete="off"`, `autocomplete="off"`} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("/manage/ lacks %s", want)
		}
	}
	if got, want := r.Header.Get("Cache-Control"), "private, no-store"; got != want {
		t.Errorf("/manage/ Cache-Control=%q, want %q", got, want)
	}
}
