package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gorilla/securecookie"
)

// failingCodec is the cookie store's real codec, made to refuse every
// encoding while fail is set: a cookie state that cannot be saved.
type failingCodec struct {
	securecookie.Codec
	fail *atomic.Bool
}

func (c failingCodec) Encode(name string, value any) (string, error) {
	if c.fail.Load() {
		return "", errors.New("the cookie codec refuses to encode")
	}
	return c.Codec.Encode(name, value)
}

// withCookieStateSaveFailing makes every cookie state save fail while fail is set.
func withCookieStateSaveFailing(fail *atomic.Bool) appOption {
	return func(c *appConfig) {
		c.Server = func(h http.Handler) {
			s := h.(*Server)
			for i, codec := range s.cookieStore.Codecs {
				s.cookieStore.Codecs[i] = failingCodec{Codec: codec, fail: fail}
			}
		}
	}
}

// stateSetCookies are the Set-Cookie headers of r naming admit_session.
func stateSetCookies(r *testResponse) []string {
	var out []string
	for _, c := range r.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, stateCookie+"=") {
			out = append(out, c)
		}
	}
	return out
}

// mustIssueByForm issues an invitation to a new selected entry through the
// console's form and returns the code page's path; the cookie state then holds
// the code for that page.
func mustIssueByForm(t *testing.T, app *testApp, owner *testClient, email string) string {
	t.Helper()
	entry := "/owner/programs/" + app.Demo.ID + "/entries/" + mustInsertEntry(t, app.DB, app.Demo, email, "selected")
	page := owner.Get(t, entry)
	form := url.Values{}
	for _, f := range []string{"requestKey", "expiresOn", "time"} {
		m := regexp.MustCompile(`name="` + f + `"[^>]*value="([^"]+)"`).FindStringSubmatch(page.Body)
		if m == nil {
			t.Fatalf("the issue form has no %s", f)
		}
		form.Set(f, m[1])
	}
	posted := owner.PostOwnerForm(t, entry+"/invitations", form)
	owWantStatus(t, "issue", posted, http.StatusSeeOther)
	return owLocation(posted)
}

// TestCookieState_FailedSaveIsAnErrorAnswer: when the cookie state cannot be saved
// the client gets the error adapter's 500 — page or JSON, no-store — and
// nothing of the handler's answer; what the cookie state held is still there
// once saving works again.
func TestCookieState_FailedSaveIsAnErrorAnswer(t *testing.T) {
	var fail atomic.Bool
	app := MustStartApp(t, withCookieStateSaveFailing(&fail))
	owner := mustOwnerClient(t, app)
	codePage := mustIssueByForm(t, app, owner, "held@example.com")

	fail.Store(true)
	r := owner.Get(t, codePage)
	owWantStatus(t, "code page, cookie state not saved", r, http.StatusInternalServerError)
	if got, want := r.Header.Get("Cache-Control"), "private, no-store"; got != want {
		t.Errorf("Cache-Control=%q, want %q", got, want)
	}
	if codePattern.MatchString(r.Body) || strings.Contains(r.Body, "shown only this once") {
		t.Fatalf("the code page went out although its cookie state was not saved:\n%.600s", r.Body)
	}
	if !strings.Contains(r.Body, "Something went wrong") || r.Header.Get("X-Request-ID") == "" ||
		r.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("not the error page with the security headers and request ID: %v\n%.600s", r.Header, r.Body)
	}
	if sc := stateSetCookies(r); len(sc) != 0 {
		t.Fatalf("Set-Cookie %q on an answer whose cookie state was not saved", sc)
	}

	// A fresh browser's first CSRF token needs a new secret in the cookie state:
	// the API answers the error JSON rather than a token that cannot verify.
	other := app.NewClient(t)
	other.SignIn(t, "other@example.test")
	api := other.Get(t, "/api/csrf")
	owWantStatus(t, "GET /api/csrf, cookie state not saved", api, http.StatusInternalServerError)
	if got, want := api.Body, "{\"error\":\"internal\"}\n"; got != want {
		t.Fatalf("body %q, want %q", got, want)
	}
	if got, want := api.Header.Get("Cache-Control"), "private, no-store"; got != want {
		t.Errorf("API Cache-Control=%q, want %q", got, want)
	}

	// Nothing was lost: the code is still held, shown on the next load.
	fail.Store(false)
	again := owner.Get(t, codePage)
	owWantStatus(t, "code page, saving again", again, http.StatusOK)
	m := codePattern.FindStringSubmatch(again.Body)
	if m == nil {
		t.Fatal("the code held in the cookie state was lost with the failed save")
	}
	if strings.Contains(app.Logs.String(), m[1]) || strings.Contains(app.Logs.String(), "held@example.com") {
		t.Fatal("the log holds the code or the address")
	}
	if !strings.Contains(app.Logs.String(), "save cookie state") {
		t.Fatal("the failed save is not logged as the request's failure")
	}
}

// TestCookieState_AtMostOneSetCookiePerResponse: however many of the cookie state's
// fields a request changes — a CSRF secret made, the address cached, a
// confirmation taken, a shown code's mark forgotten — its answer sets
// admit's state cookie once.
func TestCookieState_AtMostOneSetCookiePerResponse(t *testing.T) {
	app := MustStartApp(t)
	owner := app.NewClient(t)
	owner.SignIn(t, "owner@example.test")

	// The first page after signing in makes the CSRF secret and caches the
	// address: two changes, one cookie.
	first := owner.Get(t, "/owner")
	owWantStatus(t, "first page", first, http.StatusOK)
	if got := len(stateSetCookies(first)); got != 1 {
		t.Fatalf("the first page set admit_session %d times, want once", got)
	}
	owner.CSRF(t)

	// The entry's page after its code page, with a confirmation waiting:
	// the shown code's mark forgotten and the flash taken, one cookie.
	codePage := mustIssueByForm(t, app, owner, "once@example.com")
	owWantStatus(t, "code page", owner.Get(t, codePage), http.StatusOK)
	recorded := owner.PostOwnerForm(t, codePage+"/delivery-record", url.Values{"requestKey": {owKey()}, "channel": {"chat"}, "reference": {"batch 3"}})
	owWantStatus(t, "record the send", recorded, http.StatusSeeOther)
	entry := owLocation(recorded)
	page := owner.Get(t, entry)
	owWantStatus(t, "entry page", page, http.StatusOK)
	if !strings.Contains(page.Body, "Send recorded.") {
		t.Fatal("the entry page does not show the confirmation")
	}
	if got := len(stateSetCookies(page)); got != 1 {
		t.Fatalf("the entry page set admit_session %d times, want once: %q", got, stateSetCookies(page))
	}

	// Signing out empties the cookie state and leaves the note: one cookie.
	out := owner.PostForm(t, "/sign-out", url.Values{"csrf": {owner.CSRFToken}})
	owWantStatus(t, "sign out", out, http.StatusSeeOther)
	if got := len(stateSetCookies(out)); got != 1 {
		t.Fatalf("sign-out set admit_session %d times, want once", got)
	}
}

// TestCookieState_UnchangedStateSetsNoCookie: an answer that left the
// cookie state as it found it sets no state cookie — a public page, a
// refused signup, a signed-in page once the state is settled, a sign-out
// or a sign-in with nothing of admit's cookie state to clear.
func TestCookieState_UnchangedStateSetsNoCookie(t *testing.T) {
	app := MustStartApp(t)
	noCookie := func(what string, r *testResponse, want int) {
		t.Helper()
		owWantStatus(t, what, r, want)
		if sc := stateSetCookies(r); len(sc) != 0 {
			t.Errorf("%s: Set-Cookie %q, but the cookie state did not change", what, sc)
		}
	}
	refused := signupFormValues(owKey(), "not-an-address", 1, true)

	anon := app.NewClient(t)
	noCookie("public page", anon.Get(t, "/"), http.StatusOK)
	noCookie("waitlist page", anon.Get(t, signupPath), http.StatusOK)
	noCookie("refused signup", anon.PostForm(t, signupPath, refused, "Accept", browserAccept), http.StatusBadRequest)
	for _, r := range []*testResponse{anon.Get(t, "/"), anon.PostForm(t, signupPath, refused)} {
		if sc := r.Header.Values("Set-Cookie"); len(sc) != 0 {
			t.Errorf("an anonymous answer sets %q", sc)
		}
	}
	// Nothing of admit's cookie state to clear: only the identity's cookie.
	noCookie("sign-out without a sign-in", anon.PostForm(t, "/sign-out", url.Values{}), http.StatusSeeOther)
	noCookie("sign-in from a fresh browser", anon.PostForm(t, "/dev/sign-in",
		url.Values{"email": {"owner@example.test"}, "redirect_url": {"/owner"}}), http.StatusSeeOther)

	// But a sign-out replaces a state cookie it cannot read.
	stale := app.NewClient(t)
	u, _ := url.Parse(app.URL)
	stale.Jar.SetCookies(u, []*http.Cookie{{Name: stateCookie, Value: "written-under-keys-long-gone", Path: "/"}})
	owWantStatus(t, "page with an unreadable state cookie", stale.Get(t, "/"), http.StatusOK)
	if got := len(stateSetCookies(stale.PostForm(t, "/sign-out", url.Values{}))); got != 1 {
		t.Errorf("sign-out set admit_session %d times over an unreadable one, want once", got)
	}

	// Signed in, once the first page made the CSRF secret and cached the
	// address.
	owWantStatus(t, "first page", anon.Get(t, "/owner"), http.StatusOK)
	noCookie("owner page", anon.Get(t, "/owner"), http.StatusOK)
	noCookie("public page signed in", anon.Get(t, "/"), http.StatusOK)
	noCookie("refused signup signed in", anon.PostForm(t, signupPath, refused, "Accept", browserAccept), http.StatusBadRequest)
	noCookie("CSRF token", anon.Get(t, "/api/csrf"), http.StatusOK)
}
