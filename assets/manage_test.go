package assets_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"admit/assets"
	"admit/internal/browser"
)

const token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// removalSite is a stand-in for the removal pages: the real manage.js from
// the asset handler, under the production CSP (no inline script).
type removalSite struct {
	*httptest.Server
	mu       sync.Mutex
	received []string // tokens POSTed to /manage/remove
}

func mustServeRemovalSite(tb testing.TB) *removalSite {
	tb.Helper()
	s := &removalSite{}
	script := fmt.Sprintf(`<script src="%s" defer></script>`, assets.Path("manage.js"))
	html := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; object-src 'none'; base-uri 'none'")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>manage</title>%s</head>%s</html>`, script, body)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+assets.Prefix, assets.Handler())
	mux.HandleFunc("GET /manage/{$}", func(w http.ResponseWriter, r *http.Request) {
		html(w, `<body><form id="remove-form" method="post" action="/manage/remove">
<label>Token <input name="token" autocomplete="off"></label>
<button id="remove" type="submit">Remove my signup</button></form></body>`)
	})
	mux.HandleFunc("POST /manage/remove", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.received = append(s.received, r.PostFormValue("token"))
		s.mu.Unlock()
		html(w, `<body data-removal-confirmed><p id="done">Processed.</p></body>`)
	})
	mux.HandleFunc("GET /confirmed/element", func(w http.ResponseWriter, r *http.Request) {
		html(w, `<body><p id="removal-confirmed">Processed.</p></body>`)
	})
	mux.HandleFunc("GET /confirmed/body", func(w http.ResponseWriter, r *http.Request) {
		html(w, `<body data-removal-confirmed><p>Processed.</p></body>`)
	})
	s.Server = httptest.NewServer(mux) // loopback
	tb.Cleanup(s.Close)
	return s
}

func (s *removalSite) tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.received...)
}

// mustLoad navigates and waits until manage.js has run (deferred scripts run
// before DOMContentLoaded, which Navigate waits past).
func mustLoad(tb testing.TB, ctx context.Context, url string) {
	tb.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		tb.Fatalf("navigate %s: %v", url, err)
	}
}

func mustEval[T any](tb testing.TB, ctx context.Context, expr string) T {
	tb.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// historyURLs lists the URLs of every entry in the tab's session history.
func historyURLs(tb testing.TB, ctx context.Context) []string {
	tb.Helper()
	res, err := chromedp.Call(ctx, page.GetNavigationHistory, cdp.Empty{})
	if err != nil {
		tb.Fatalf("navigation history: %v", err)
	}
	var urls []string
	for _, e := range res.Entries {
		urls = append(urls, e.URL)
	}
	return urls
}

func TestManageJS_FragmentTokenFillsFormAndLeavesNoTrace(t *testing.T) {
	t.Parallel()
	site := mustServeRemovalSite(t)
	ctx := browser.MustNew(t)

	mustLoad(t, ctx, site.URL+"/manage/#"+token)
	if got, want := mustEval[string](t, ctx, `document.querySelector("#remove-form input[name=token]").value`), token; got != want {
		t.Fatalf("token field=%q, want the fragment token %q", got, want)
	}
	// docs/API.md#removal: the fragment is cleared after confirmed removal, not on load.
	if got, want := mustEval[string](t, ctx, `location.hash`), "#"+token; got != want {
		t.Fatalf("location.hash before removal=%q, want %q", got, want)
	}

	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("remove")),
		chromedp.WaitVisible(chromedp.ID("done")),
	); err != nil {
		t.Fatalf("submit removal: %v", err)
	}
	if got := site.tokens(); len(got) != 1 || got[0] != token {
		t.Fatalf("server received tokens %q, want [%q]", got, token)
	}
	for _, u := range historyURLs(t, ctx) {
		if strings.Contains(u, token) {
			t.Fatalf("session history still holds the token: %q", u)
		}
	}
}

func TestManageJS_IgnoresFragmentThatIsNotAToken(t *testing.T) {
	t.Parallel()
	site := mustServeRemovalSite(t)
	ctx := browser.MustNew(t)
	for i, frag := range []string{
		strings.ToUpper(token), // not lowercase
		token[:63],             // too short
		token + "0",            // too long
		"x" + token[1:],        // not hex
	} {
		// A distinct query each time: a change of fragment alone would be a
		// same-document navigation that does not run the script again.
		mustLoad(t, ctx, fmt.Sprintf("%s/manage/?try=%d#%s", site.URL, i, frag))
		if got := mustEval[string](t, ctx, `document.querySelector("#remove-form input[name=token]").value`); got != "" {
			t.Errorf("fragment %q: token field=%q, want empty", frag, got)
		}
	}
}

func TestManageJS_ConfirmedPageClearsFragment(t *testing.T) {
	t.Parallel()
	site := mustServeRemovalSite(t)
	ctx := browser.MustNew(t)
	for _, path := range []string{"/confirmed/element", "/confirmed/body"} {
		mustLoad(t, ctx, site.URL+path+"#"+token)
		if got := mustEval[string](t, ctx, `location.href`); strings.Contains(got, "#") {
			t.Errorf("%s: location.href=%q after a confirmed removal, want no fragment", path, got)
		}
	}
}
