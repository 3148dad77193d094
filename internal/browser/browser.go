// Package browser starts headless Chromium for tests, driven by chromedp
// (docs/ARCHITECTURE.md#tests). It is test-only: import it from _test.go
// files only, so it never ships in the binary.
//
//	ctx := browser.MustNew(t, browser.WithJavaScriptDisabled())
//	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/waitlist/demo")); err != nil {
//		t.Fatal(err)
//	}
//	heading, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("h1")))
//
// (chromedp v0.23 has the generic API: Do for steps, Run for one value.)
//
// Chromium is the CHROMIUM_PATH environment variable when set, otherwise
// Debian's /usr/bin/chromium-headless-shell or else /usr/bin/chromium.
// When it is missing, a test is skipped if CI is unset or empty, and fails
// otherwise: under CI a missing browser must never look like a pass.
package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// DefaultPaths are where Debian installs Chromium, in the order ExecPath
// tries them: the chromium-headless-shell package first, the chromium
// package next. The headless shell is the same engine (Blink, V8, DevTools)
// without the browser's user-interface layers; the handlers package's
// browser tests take about 40% less CPU in it
// (docs/PERFORMANCE.md#the-browser-the-tests-run).
var DefaultPaths = []string{"/usr/bin/chromium-headless-shell", "/usr/bin/chromium"}

// StartAttempts is how many times MustNew launches Chromium before it fails
// the test.
const StartAttempts = 3

// StartTimeout is how long one launch may take to answer over DevTools.
const StartTimeout = 30 * time.Second

// DefaultTimeout is the deadline of the context MustNew returns, so a test
// whose page never answers fails instead of hanging. It bounds a whole test,
// some of which load dozens of pages: long enough for a machine loaded many
// times over, well inside Go's 10-minute package timeout.
const DefaultTimeout = 5 * time.Minute

// config collects the Options given to MustNew.
type config struct {
	jsDisabled   bool
	ownBrowser   bool
	timeout      time.Duration
	startTimeout time.Duration
}

// Option changes how MustNew starts the browser.
type Option func(*config)

// WithJavaScriptDisabled turns script execution off in the tab before its
// first navigation (emulation.setScriptExecutionDisabled), so pages behave as
// for a visitor without JavaScript: scripts do not run and <noscript> content
// renders. It applies to the tab MustNew returns, not to tabs the test opens
// later with chromedp.NewContext.
func WithJavaScriptDisabled() Option {
	return func(c *config) { c.jsDisabled = true }
}

// WithTimeout replaces DefaultTimeout as the deadline of the returned context.
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// WithStartTimeout replaces StartTimeout as the first launch's budget. A
// launch that overran it is retried with twice as long, and never less than
// StartTimeout: on a busy machine a second launch is no faster than the
// first.
func WithStartTimeout(d time.Duration) Option {
	return func(c *config) { c.startTimeout = d }
}

// WithOwnBrowser launches a browser for this test alone, stopped when the
// test ends, instead of opening a tab in the browser the test binary shares.
// Tests of the launch itself use it.
func WithOwnBrowser() Option {
	return func(c *config) { c.ownBrowser = true }
}

// ExecPath returns the Chromium binary to run: CHROMIUM_PATH when set,
// otherwise the first of DefaultPaths that is installed. It reports an
// error when there is none.
func ExecPath() (string, error) {
	if p := os.Getenv("CHROMIUM_PATH"); p != "" {
		return exec.LookPath(p)
	}
	var failures []error
	for _, p := range DefaultPaths {
		resolved, err := exec.LookPath(p)
		if err == nil {
			return resolved, nil
		}
		failures = append(failures, err)
	}
	return "", errors.Join(failures...)
}

// MustNew returns a chromedp context for a new tab in a browser context of
// its own (like a private window: its own cookies, storage and cache),
// opened in the one headless Chromium that the test binary shares; the
// first call launches it. The tab emulates focus, so that pages in tabs
// side by side behave as the one in front. The context has a deadline of
// DefaultTimeout (see WithTimeout). The tab and its browser context are
// closed when the test ends; the shared browser is stopped by RunTests.
// WithOwnBrowser launches a browser for the test alone instead.
//
// A launch that fails or gives no DevTools connection within StartTimeout
// (see WithStartTimeout) is retried, up to StartAttempts launches in all,
// each with a fresh profile: under `go test ./...` other test binaries load
// the machine while Chromium starts.
//
// With Chromium absent, MustNew skips the test when the CI environment
// variable is unset or empty and fails it otherwise.
func MustNew(tb testing.TB, opts ...Option) context.Context {
	tb.Helper()
	cfg := config{timeout: DefaultTimeout, startTimeout: StartTimeout}
	for _, o := range opts {
		o(&cfg)
	}

	execPath, err := ExecPath()
	if err != nil {
		if os.Getenv("CI") == "" {
			tb.Skipf("browser: Chromium not available (%v); set CHROMIUM_PATH or install chromium", err)
		}
		tb.Fatalf("browser: Chromium required under CI but not available: %v", err)
	}

	var tabCtx context.Context
	if cfg.ownBrowser {
		// TempDir first: cleanups run last-in first-out, so the browser is
		// stopped before its profile directory is removed.
		ctx, stop, err := launchWithRetries(tb, execPath, tb.TempDir, cfg.startTimeout)
		if err != nil {
			tb.Fatalf("browser: start %s: %v", execPath, err)
		}
		tb.Cleanup(stop)
		tabCtx = ctx
	} else {
		tabCtx = mustNewTab(tb, execPath, cfg.startTimeout)
	}
	// Pages in tabs side by side each behave as the focused one: focus and
	// blur events, :focus-visible and autofocus as for the tab in front.
	if _, err := chromedp.Call(tabCtx, emulation.SetFocusEmulationEnabled,
		emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		tb.Fatalf("browser: emulate focus: %v", err)
	}
	if cfg.jsDisabled {
		// Before any navigation, so no page of the test ever runs a script.
		if _, err := chromedp.Call(tabCtx, emulation.SetScriptExecutionDisabled,
			emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			tb.Fatalf("browser: disable JavaScript: %v", err)
		}
	}

	ctx, cancelTimeout := context.WithTimeout(tabCtx, cfg.timeout)
	tb.Cleanup(cancelTimeout)
	return ctx
}

// shared is the browser the test binary's tests open their tabs in.
var shared struct {
	mu       sync.Mutex
	execPath string
	ctx      context.Context // nil until launched
	stop     func()
	profile  string
}

// mustNewTab opens a tab in a new browser context of the shared browser,
// launching the browser first when it is not running (never launched,
// exited, or launched from another binary), and closes the tab when the test
// ends.
func mustNewTab(tb testing.TB, execPath string, startTimeout time.Duration) context.Context {
	tb.Helper()
	browserCtx, err := sharedBrowser(tb, execPath, startTimeout)
	if err != nil {
		tb.Fatalf("browser: start %s: %v", execPath, err)
	}
	tabCtx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	// The first action owns the tab: it gets the untimed context, so the
	// tab lives until the cleanup closes it.
	if err := chromedp.Do(tabCtx); err != nil {
		cancel()
		tb.Fatalf("browser: open a tab: %v", err)
	}
	tb.Cleanup(func() {
		// Closes the tab and disposes of its browser context, and waits.
		if err := chromedp.Cancel(tabCtx); err != nil && !errors.Is(err, context.Canceled) {
			tb.Logf("browser: close the tab: %v", err)
		}
		cancel()
	})
	return tabCtx
}

// sharedBrowser returns the shared browser's context, launching it when no
// browser from execPath is running.
func sharedBrowser(tb testing.TB, execPath string, startTimeout time.Duration) (context.Context, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.ctx != nil && shared.ctx.Err() == nil && shared.execPath == execPath {
		return shared.ctx, nil
	}
	stopSharedLocked()
	var profiles []string
	ctx, stop, err := launchWithRetries(tb, execPath, func() string {
		dir, err := os.MkdirTemp("", "admit-chromium-")
		if err != nil {
			tb.Fatalf("browser: profile directory: %v", err)
		}
		profiles = append(profiles, dir)
		return dir
	}, startTimeout)
	// Only the running browser's profile is kept, for StopShared to remove.
	keep := ""
	if err == nil {
		keep = profiles[len(profiles)-1]
	}
	for _, dir := range profiles {
		if dir != keep {
			os.RemoveAll(dir)
		}
	}
	if err != nil {
		return nil, err
	}
	shared.execPath, shared.ctx, shared.stop, shared.profile = execPath, ctx, stop, keep
	return ctx, nil
}

// StopShared stops the browser the test binary's tests share, waits for it
// to exit and removes its profile. Tabs still open are closed with it.
func StopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	stopSharedLocked()
}

func stopSharedLocked() {
	if shared.stop != nil {
		shared.stop()
	}
	if shared.profile != "" {
		os.RemoveAll(shared.profile)
	}
	shared.execPath, shared.ctx, shared.stop, shared.profile = "", nil, nil, ""
}

// RunTests runs the package's tests and then stops the shared browser; a
// package whose tests call MustNew uses it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(browser.RunTests(m)) }
//
// Without it the kernel still stops the browser when the test binary exits
// (chromedp starts it with a parent-death signal), but its profile
// directory is left behind.
func RunTests(m *testing.M) int {
	defer StopShared()
	return m.Run()
}

// launchWithRetries launches the browser, on a fresh profile from profile()
// each time, up to StartAttempts times. The first launch may take
// startTimeout, each retry twice the last one's budget and no less than
// StartTimeout.
func launchWithRetries(tb testing.TB, execPath string, profile func() string, startTimeout time.Duration) (context.Context, func(), error) {
	tb.Helper()
	var failures []error
	budget := startTimeout
	for attempt := 1; ; attempt++ {
		ctx, stop, err := launch(execPath, profile(), budget)
		if err == nil {
			return ctx, stop, nil
		}
		failures = append(failures, fmt.Errorf("launch %d: %w", attempt, err))
		if attempt == StartAttempts {
			return nil, nil, errors.Join(failures...)
		}
		tb.Logf("browser: launch %d of %s failed, retrying: %v", attempt, execPath, err)
		budget = max(2*budget, StartTimeout)
	}
}

// launch starts one browser on profile and returns its context and the
// function that stops it and waits for the process to exit. It gives up,
// leaving no process behind, when the browser exits or has not answered
// over DevTools within startTimeout.
func launch(execPath, profile string, startTimeout time.Duration) (context.Context, func(), error) {
	// docs/ARCHITECTURE.md#tests: root on a closed network, so no sandbox
	// and no background traffic; a fresh profile for every test.
	allocOpts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(execPath),
		chromedp.UserDataDir(profile),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), allocOpts...)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	stop := func() {
		// Close the browser gracefully so that it stops its own child
		// processes, then make sure: cancelling the allocator waits until
		// the browser process has exited.
		closeCtx, cancelClose := context.WithTimeout(browserCtx, 10*time.Second)
		_ = chromedp.Cancel(closeCtx)
		cancelClose()
		cancelBrowser()
		cancelAlloc()
	}

	// Start the browser with the untimed context: the context of the first
	// action owns the browser process, so the start deadline is kept here.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(browserCtx) }()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-started:
	case <-timer.C:
		err = fmt.Errorf("no DevTools connection within %v", startTimeout)
		cancelBrowser()
		cancelAlloc() // kills the process and waits for it
		<-started     // the start gives up once its context is cancelled
	}
	if err != nil {
		cancelBrowser()
		cancelAlloc()
		return nil, nil, err
	}
	return browserCtx, stop, nil
}

// Screenshot saves a full-page PNG of the tab in ctx to path, for looking at
// a failing page. It fails the test when the capture or the write fails.
func Screenshot(tb testing.TB, ctx context.Context, path string) {
	tb.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.Fatalf("browser: screenshot: %v", err)
	}
	if len(png) == 0 {
		tb.Fatal("browser: screenshot: empty image")
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.Fatalf("browser: write screenshot: %v", err)
	}
}

// ScriptsRun reports whether the page open in ctx runs scripts, whatever
// the page loads: it asks the page's own HTML parser, which reads a
// <noscript> block as elements only when scripting is off.
func ScriptsRun(ctx context.Context) (bool, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const d = document.createElement("div");
		d.innerHTML = "<noscript><i></i></noscript>";
		return d.querySelector("noscript i") === null;
	})()`))
}

// PollInterval is how often WaitFor evaluates its condition.
const PollInterval = 50 * time.Millisecond

// WaitFor waits until the JavaScript expression cond is true in the page
// open in ctx, for at most within. It evaluates cond from Go every
// PollInterval. chromedp.Poll would poll inside the page instead, and
// neither of its clocks is sure to run there: a page whose scripts are off
// runs no timers, so a condition false at its first evaluation would wait
// out ctx's whole deadline, and a tab the shared Chromium is not painting
// at that moment, one of several side by side on a busy machine, runs no
// animation frames. An evaluation that fails, as one does while a new
// document replaces the old, is tried again; the error after within names
// the condition and the last such failure.
func WaitFor(ctx context.Context, cond string, within time.Duration) error {
	deadline := time.Now().Add(within)
	var lastErr error
	for {
		evalCtx, cancel := context.WithDeadline(ctx, deadline)
		ok, err := chromedp.Run(evalCtx, chromedp.Evaluate[bool](cond))
		cancel()
		switch {
		case err == nil && ok:
			return nil
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("waiting for %s: %w", cond, ctx.Err())
		case err != nil && !errors.Is(err, context.DeadlineExceeded):
			lastErr = err
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			if lastErr != nil {
				return fmt.Errorf("%s still not true after %v (last evaluation failed: %v)", cond, within, lastErr)
			}
			return fmt.Errorf("%s still not true after %v", cond, within)
		}
		t := time.NewTimer(min(wait, PollInterval))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for %s: %w", cond, ctx.Err())
		case <-t.C:
		}
	}
}
