package browser_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"admit/internal/browser"
)

// page has text that its external script replaces, and a <noscript> block
// that becomes elements only when scripting is off.
const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>browser harness</title></head>
<body>
<p id="status">static</p>
<noscript><p id="noscript">JavaScript is off</p></noscript>
<script src="/app.js"></script>
</body></html>`

func TestMain(m *testing.M) { os.Exit(browser.RunTests(m)) }

// nilSignal checks that a process exists without affecting it.
var nilSignal = syscall.Signal(0)

// mustServePage serves page and its script on loopback.
func mustServePage(tb testing.TB) *httptest.Server {
	tb.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	})
	mux.HandleFunc("GET /app.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `document.getElementById("status").textContent = "scripted";`)
	})
	srv := httptest.NewServer(mux) // listens on 127.0.0.1
	tb.Cleanup(srv.Close)
	return srv
}

// loadPage navigates to the test page and reports the #status text and how
// many #noscript elements the DOM holds.
func loadPage(tb testing.TB, ctx context.Context, url string) (status string, noscript int) {
	tb.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		tb.Fatalf("load %s: %v", url, err)
	}
	status, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("status")))
	if err != nil {
		tb.Fatalf("read #status: %v", err)
	}
	noscript, err = chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#noscript").length`))
	if err != nil {
		tb.Fatalf("count #noscript: %v", err)
	}
	return status, noscript
}

func TestMustNew_JavaScriptDisabledScriptsDoNotRun(t *testing.T) {
	srv := mustServePage(t)
	ctx := browser.MustNew(t, browser.WithJavaScriptDisabled())

	status, noscript := loadPage(t, ctx, srv.URL+"/")
	if got, want := status, "static"; got != want {
		t.Fatalf("#status=%q, want %q (the page script ran)", got, want)
	}
	if got, want := noscript, 1; got != want {
		t.Fatalf("#noscript elements=%d, want %d (<noscript> not rendered)", got, want)
	}
	if run, err := browser.ScriptsRun(ctx); err != nil || run {
		t.Fatalf("ScriptsRun=%v (%v), want false", run, err)
	}

	// Still off after a second navigation.
	status, _ = loadPage(t, ctx, srv.URL+"/")
	if got, want := status, "static"; got != want {
		t.Fatalf("second load: #status=%q, want %q", got, want)
	}
}

func TestMustNew_JavaScriptEnabledByDefault(t *testing.T) {
	srv := mustServePage(t)
	ctx := browser.MustNew(t)

	status, noscript := loadPage(t, ctx, srv.URL+"/")
	if got, want := status, "scripted"; got != want {
		t.Fatalf("#status=%q, want %q (the page script did not run)", got, want)
	}
	if got, want := noscript, 0; got != want {
		t.Fatalf("#noscript elements=%d, want %d", got, want)
	}
	if run, err := browser.ScriptsRun(ctx); err != nil || !run {
		t.Fatalf("ScriptsRun=%v (%v), want true", run, err)
	}
}

func TestMustNew_ContextHasDeadline(t *testing.T) {
	ctx := browser.MustNew(t, browser.WithTimeout(30*time.Second))
	deadline, ok := ctx.Deadline()
	if !ok {
		t.Fatal("context has no deadline")
	}
	if left := time.Until(deadline); left <= 0 || left > 30*time.Second {
		t.Fatalf("deadline in %v, want within (0, 30s]", left)
	}
}

func TestMustNew_OwnBrowserProcessEndsAtCleanup(t *testing.T) {
	var proc *os.Process
	var skipped bool
	t.Run("use", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }() // runs on Skip too
		ctx := browser.MustNew(t, browser.WithOwnBrowser())
		proc = chromedp.FromContext(ctx).Browser.Process()
		if proc == nil {
			t.Fatal("no browser process")
		}
		if err := proc.Signal(nilSignal); err != nil {
			t.Fatalf("browser not running during the test: %v", err)
		}
	})
	if skipped {
		t.Skip("no browser to watch: the subtest skipped")
	}
	if proc == nil {
		t.Fatal("subtest did not start a browser")
	}
	// The subtest's cleanup has run: the process must be gone and reaped.
	if err := proc.Signal(nilSignal); err == nil {
		t.Fatalf("browser process %d still running after cleanup", proc.Pid)
	}
}

func TestScreenshot_WritesPNG(t *testing.T) {
	srv := mustServePage(t)
	ctx := browser.MustNew(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "page.png")
	browser.Screenshot(t, ctx, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("screenshot is not a PNG (first bytes %q)", b[:min(len(b), 8)])
	}
}

// recordingTB stands in for the test given to MustNew, to observe whether it
// skips or fails. Skip and fail end the calling goroutine, as testing does.
type recordingTB struct {
	testing.TB
	mu      sync.Mutex
	skipped bool
	failed  bool
}

func (r *recordingTB) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.skipped = true
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recordingTB) Fatal(args ...any) { r.Fatalf("") }

func TestMustNew_MissingChromium(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-chromium")
	for _, tc := range []struct {
		name              string
		ci                string
		wantSkip, wantErr bool
	}{
		{name: "CI unset skips", ci: "", wantSkip: true},
		{name: "CI=true fails", ci: "true", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CHROMIUM_PATH", missing)
			t.Setenv("CI", tc.ci)
			rec := &recordingTB{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				browser.MustNew(rec)
			}()
			<-done
			if got, want := rec.skipped, tc.wantSkip; got != want {
				t.Errorf("skipped=%v, want %v", got, want)
			}
			if got, want := rec.failed, tc.wantErr; got != want {
				t.Errorf("failed=%v, want %v", got, want)
			}
		})
	}
}

// flakyChromium writes a stand-in for Chromium whose first launch misbehaves
// as first says (a shell command) and whose later launches run the real
// browser. It returns the script's path and a function that counts launches.
func flakyChromium(t *testing.T, first string) (path string, launches func() int) {
	t.Helper()
	real, err := browser.ExecPath()
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("Chromium not available: %v", err)
		}
		t.Fatalf("Chromium required under CI: %v", err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "launches")
	path = filepath.Join(dir, "chromium")
	script := "#!/bin/sh\n" +
		"echo launch >> '" + log + "'\n" +
		"if [ \"$(wc -l < '" + log + "')\" -eq 1 ]; then " + first + "; fi\n" +
		"exec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, func() int {
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatalf("read launch log: %v", err)
		}
		return bytes.Count(b, []byte("\n"))
	}
}

// TestMustNew_RetriesALaunchThatFails: a browser that exits at start is
// launched again, and the test gets a working tab.
func TestMustNew_RetriesALaunchThatFails(t *testing.T) {
	path, launches := flakyChromium(t, "echo 'simulated crash' >&2; exit 1")
	t.Setenv("CHROMIUM_PATH", path)
	srv := mustServePage(t)
	ctx := browser.MustNew(t, browser.WithOwnBrowser())
	if status, _ := loadPage(t, ctx, srv.URL+"/"); status != "scripted" {
		t.Fatalf("#status=%q after the retried launch, want %q", status, "scripted")
	}
	if got, want := launches(), 2; got != want {
		t.Fatalf("launches=%d, want %d", got, want)
	}
}

// TestMustNew_RetriesALaunchThatNeverAnswers: a browser that never opens
// DevTools is stopped at the start deadline and launched again, with a
// budget of its own no shorter than StartTimeout, so that a real launch on
// a busy machine is not taken for a hung one.
func TestMustNew_RetriesALaunchThatNeverAnswers(t *testing.T) {
	path, launches := flakyChromium(t, "exec sleep 600")
	t.Setenv("CHROMIUM_PATH", path)
	srv := mustServePage(t)
	const firstBudget = 2 * time.Second
	start := time.Now()
	ctx := browser.MustNew(t, browser.WithOwnBrowser(), browser.WithStartTimeout(firstBudget))
	if status, _ := loadPage(t, ctx, srv.URL+"/"); status != "scripted" {
		t.Fatalf("#status=%q after the retried launch, want %q", status, "scripted")
	}
	if got, want := launches(), 2; got != want {
		t.Fatalf("launches=%d, want %d", got, want)
	}
	if waited := time.Since(start); waited < firstBudget {
		t.Fatalf("second launch after %v, before the first launch's %v budget", waited, firstBudget)
	}
}

// TestMustNew_TabsShareOneBrowserButNotCookies: two tests' tabs run in one
// browser process, each in a browser context of its own, so a cookie set in
// one is not sent from the other.
func TestMustNew_TabsShareOneBrowserButNotCookies(t *testing.T) {
	var seen sync.Map // cookie header by tab
	mux := http.NewServeMux()
	mux.HandleFunc("GET /set", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "tab", Value: r.URL.Query().Get("v"), Path: "/"})
		fmt.Fprint(w, "<!doctype html><title>set</title>")
	})
	mux.HandleFunc("GET /get", func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.URL.Query().Get("tab"), r.Header.Get("Cookie"))
		fmt.Fprint(w, "<!doctype html><title>get</title>")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	a := browser.MustNew(t)
	b := browser.MustNew(t)
	pa, pb := chromedp.FromContext(a).Browser.Process(), chromedp.FromContext(b).Browser.Process()
	if pa == nil || pb == nil || pa.Pid != pb.Pid {
		t.Fatalf("the two tabs run in browser processes %v and %v, want one", pa, pb)
	}
	if err := chromedp.Do(a, chromedp.Navigate(srv.URL+"/set?v=a")); err != nil {
		t.Fatal(err)
	}
	for _, tab := range []struct {
		name string
		ctx  context.Context
		want string
	}{{"a", a, "tab=a"}, {"b", b, ""}} {
		if err := chromedp.Do(tab.ctx, chromedp.Navigate(srv.URL+"/get?tab="+tab.name)); err != nil {
			t.Fatal(err)
		}
		got, _ := seen.Load(tab.name)
		if got != tab.want {
			t.Errorf("tab %s sent Cookie %q, want %q", tab.name, got, tab.want)
		}
	}
}

// TestMustNew_FailsAfterTheLastAttempt: a browser that never starts fails
// the test after StartAttempts launches (it is installed, so no skip).
func TestMustNew_FailsAfterTheLastAttempt(t *testing.T) {
	path, launches := flakyChromium(t, "true")
	// Every launch fails: rewrite the script to exit at once.
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho launch >> '"+filepath.Join(filepath.Dir(path), "launches")+"'\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CHROMIUM_PATH", path)
	t.Setenv("CI", "")
	rec := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		browser.MustNew(rec, browser.WithOwnBrowser())
	}()
	<-done
	if rec.skipped || !rec.failed {
		t.Fatalf("skipped=%v failed=%v, want a failure", rec.skipped, rec.failed)
	}
	if got, want := launches(), browser.StartAttempts; got != want {
		t.Fatalf("launches=%d, want %d", got, want)
	}
}

// TestExecPath_PrefersTheHeadlessShellThenChromiumUnlessNamed checks the
// order ExecPath looks in: CHROMIUM_PATH, then each of DefaultPaths.
func TestExecPath_PrefersTheHeadlessShellThenChromiumUnlessNamed(t *testing.T) {
	dir := t.TempDir()
	shell, full, named := filepath.Join(dir, "shell"), filepath.Join(dir, "full"), filepath.Join(dir, "named")
	for _, p := range []string{full, named} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	saved := browser.DefaultPaths
	t.Cleanup(func() { browser.DefaultPaths = saved })
	browser.DefaultPaths = []string{shell, full}
	t.Setenv("CHROMIUM_PATH", "")

	check := func(what, want string) {
		t.Helper()
		got, err := browser.ExecPath()
		if err != nil || got != want {
			t.Errorf("%s: ExecPath() = %q, %v; want %q", what, got, err, want)
		}
	}
	check("only chromium installed", full)
	if err := os.WriteFile(shell, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	check("both installed", shell)
	t.Setenv("CHROMIUM_PATH", named)
	check("CHROMIUM_PATH set", named)

	t.Setenv("CHROMIUM_PATH", "")
	browser.DefaultPaths = []string{filepath.Join(dir, "none-1"), filepath.Join(dir, "none-2")}
	_, err := browser.ExecPath()
	if err == nil || !strings.Contains(err.Error(), "none-1") || !strings.Contains(err.Error(), "none-2") {
		t.Errorf("neither installed: ExecPath() error = %v; want one naming both paths", err)
	}
}

// TestWaitFor_WaitsWithScriptsOff: a condition that is false at first
// becomes true on its third evaluation, in a tab whose scripts are off.
func TestWaitFor_WaitsWithScriptsOff(t *testing.T) {
	srv := mustServePage(t)
	for _, js := range []bool{false, true} {
		t.Run(fmt.Sprintf("scripts on=%v", js), func(t *testing.T) {
			var opts []browser.Option
			if !js {
				opts = append(opts, browser.WithJavaScriptDisabled())
			}
			ctx := browser.MustNew(t, opts...)
			loadPage(t, ctx, srv.URL+"/")
			if err := browser.WaitFor(ctx, `(window.__evaluations = (window.__evaluations || 0) + 1) >= 3`, time.Minute); err != nil {
				t.Fatal(err)
			}
			n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__evaluations`))
			if err != nil || n != 3 {
				t.Fatalf("the condition was evaluated %d times (%v), want 3", n, err)
			}
		})
	}
}

// TestWaitFor_GivesUpNamingTheCondition: a condition never true, or one
// whose evaluation fails, ends with an error that says which, well before
// the tab's own deadline.
func TestWaitFor_GivesUpNamingTheCondition(t *testing.T) {
	srv := mustServePage(t)
	ctx := browser.MustNew(t, browser.WithJavaScriptDisabled())
	loadPage(t, ctx, srv.URL+"/")
	for cond, want := range map[string]string{
		`document.title === "never"`:  `document.title === "never" still not true after 200ms`,
		`document.nosuch.thing === 1`: "last evaluation failed",
	} {
		err := browser.WaitFor(ctx, cond, 200*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("WaitFor(%s) = %v, want an error saying %q", cond, err, want)
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("the tab's own deadline ran out: %v", ctx.Err())
	}
}

// TestPoll_InPageTimerNeverFiresWithScriptsOff shows why WaitFor exists:
// chromedp.Poll with scripts off never times itself out, so a condition
// false at its first evaluation waits until the caller's context ends.
func TestPoll_InPageTimerNeverFiresWithScriptsOff(t *testing.T) {
	srv := mustServePage(t)
	ctx := browser.MustNew(t, browser.WithJavaScriptDisabled())
	loadPage(t, ctx, srv.URL+"/")
	pollCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := chromedp.Run(pollCtx, chromedp.Poll[bool](`false`,
		chromedp.WithPollingInterval(browser.PollInterval), chromedp.WithPollingTimeout(100*time.Millisecond)))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("chromedp.Poll with scripts off returned %v, want it to wait until the context ended", err)
	}
}
