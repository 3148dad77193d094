package handlers

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"admit/handlers/admission"
	"admit/internal/testutil"

	"github.com/google/uuid"
)

// idleCPU is a CPU never busy: the limiter's bound follows the answer
// rate alone.
var idleCPU = admission.CPUMeter{Used: func() time.Duration { return 0 }, Cores: func() int { return 1 }}

// wantBusy checks a refusal for load: 503, Retry-After, never cached.
func wantBusy(tb testing.TB, what string, r *testResponse) {
	tb.Helper()
	if got, want := r.StatusCode, http.StatusServiceUnavailable; got != want {
		tb.Fatalf("%s: status %d, want %d\n%s", what, got, want, r.Body)
	}
	if got, want := r.Header.Get("Retry-After"), "1"; got != want {
		tb.Errorf("%s: Retry-After=%q, want %q", what, got, want)
	}
	if got, want := r.Header.Get("Cache-Control"), "private, no-store"; got != want {
		tb.Errorf("%s: Cache-Control=%q, want %q", what, got, want)
	}
}

func TestSignup_PastTheWriterQueueIs503WithRetryAfterAndChangesNothing(t *testing.T) {
	const n, depth = 120, 16
	app := MustStartApp(t, withWriteQueues(depth, 0), withNetworkLimit(100000))
	c := app.NewClient(t)
	release := mustHoldWriter(t, app)
	before := dbFingerprint(t, app.DB)
	attemptsBefore := networkAttempts(t, app)
	eventsBefore := appCount(t, app, `SELECT count(*) FROM audit_events WHERE event_type = 'signup'`)

	keys := make([]string, n)
	resps := make([]*testResponse, n)
	errs := make([]error, n)
	var shed atomic.Int64
	var wg sync.WaitGroup
	for i := range keys {
		keys[i] = uuid.NewString()
		wg.Add(1)
		go func() {
			defer wg.Done()
			resps[i], errs[i] = c.SendJSON("POST", signupAPI, signupJSONBody(keys[i], fmt.Sprintf("overload%03d@example.com", i), 1, true))
			if errs[i] == nil && resps[i].StatusCode == http.StatusServiceUnavailable {
				shed.Add(1)
			}
		}()
	}
	// With the writer held, exactly the requests past the bound are
	// answered, at once; the rest wait for it.
	eventually(t, "every signup to be queued or refused", func() bool {
		return shed.Load() == n-depth && app.DB.SignupsWaiting() == depth
	})
	wantNoChange(t, "signups waiting for a held writer", app, before)
	// The refusal comes before the body is parsed: a malformed one is
	// refused for load too, not judged.
	wantBusy(t, "a malformed signup past the bound", c.PostJSON(t, "POST", signupAPI, `{"requestKey":`))
	release()
	wg.Wait()

	var accepted []int
	for i := range resps {
		if errs[i] != nil {
			t.Fatalf("signup %d: %v", i, errs[i])
		}
		switch resps[i].StatusCode {
		case http.StatusAccepted:
			accepted = append(accepted, i)
		case http.StatusServiceUnavailable:
			wantBusy(t, fmt.Sprintf("signup %d", i), resps[i])
			if got, want := resps[i].Body, "{\"error\":\"unavailable\"}\n"; got != want {
				t.Fatalf("signup %d: 503 body %q, want %q", i, got, want)
			}
		default:
			t.Fatalf("signup %d: status %d, want 202 or 503\n%s", i, resps[i].StatusCode, resps[i].Body)
		}
	}
	if got, want := len(accepted), depth; got != want {
		t.Fatalf("accepted %d, want exactly %d (the queue's depth)", got, want)
	}
	// The accepted ones committed, and nothing else changed: no entry,
	// receipt, event or counted attempt for a refused one.
	for _, i := range accepted {
		if got := appCount(t, app, `SELECT count(*) FROM signup_receipts WHERE request_key = ?`, keys[i]); got != 1 {
			t.Fatalf("accepted signup %d has %d receipts, want 1", i, got)
		}
	}
	if got, want := appCount(t, app, `SELECT count(*) FROM entries WHERE email_key LIKE 'overload%'`), depth; got != want {
		t.Fatalf("entries=%d, want %d", got, want)
	}
	if got, want := appCount(t, app, `SELECT count(*) FROM audit_events WHERE event_type = 'signup'`),
		eventsBefore+depth; got != want {
		t.Fatalf("signup events=%d, want %d", got, want)
	}
	if got, want := networkAttempts(t, app), attemptsBefore+depth; got != want {
		t.Fatalf("network attempts=%d, want %d: a refused signup spends none", got, want)
	}
	changed := testutil.Changed(before, dbFingerprint(t, app.DB))
	for _, table := range changed {
		switch table {
		case "entries", "signup_receipts", "audit_events", "network_counters", "entry_state_counts",
			"intake_hours", "programs", "program_funnel":
		default:
			t.Errorf("table %s changed; a signup writes only its entry, receipt, event and counters", table)
		}
	}

	// A refused signup sent again with the same key, once the writer is
	// free, is admitted: the refusal stored nothing.
	for i := range resps {
		if resps[i].StatusCode == http.StatusServiceUnavailable {
			r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(keys[i], fmt.Sprintf("overload%03d@example.com", i), 1, true))
			if got, want := r.StatusCode, http.StatusAccepted; got != want {
				t.Fatalf("retry: status %d, want %d\n%s", got, want, r.Body)
			}
			if !strings.Contains(r.Body, `"removalToken":"`) {
				t.Fatalf("retry answered %q, want a first 202 with a removal token", r.Body)
			}
			break
		}
	}
}

// TestSignupForm_PastTheBoundIsABusyPageAnsweredBeforeTheFormIsRead: past
// the bound on signups in progress the form is refused once its bytes
// have arrived but before they are parsed or the database is asked
// anything (admission.Intake), with a page of its own that
// says admit is busy and when to try again. It stores nothing, so the
// same form sent again later is admitted.
func TestSignupForm_PastTheBoundIsABusyPageAnsweredBeforeTheFormIsRead(t *testing.T) {
	const depth = 2
	app := MustStartApp(t, withWriteQueues(depth, 0), withNetworkLimit(100000))
	c := app.NewClient(t)
	key := formRequestKey(t, c.Get(t, signupPath).Body)
	release := mustHoldWriter(t, app)
	var wg sync.WaitGroup
	for i := range depth {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SendJSON("POST", signupAPI, signupJSONBody(uuid.NewString(), fmt.Sprintf("first%d@example.com", i), 1, true))
		}()
	}
	eventually(t, "the queue to fill", func() bool { return app.DB.SignupsWaiting() == depth })
	before := dbFingerprint(t, app.DB)

	form := signupFormValues(key, "patient.person@example.com", 1, true)
	r := c.PostForm(t, signupPath, form)
	wantBusy(t, "the form past the bound", r)
	wantNoChange(t, "the refused form", app, before)
	for _, want := range []string{"<h1>Too busy right now</h1>", "more requests than we can handle right now",
		"Nothing was saved.", "You can try again in a few seconds."} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("the busy page does not say %q:\n%s", want, r.Body)
		}
	}
	if strings.Contains(r.Body, "sign-in provider") {
		t.Errorf("the busy page blames the sign-in provider:\n%s", r.Body)
	}
	if !strings.Contains(r.Body, `<title>Too busy right now`) {
		t.Errorf("the busy page's title does not say admit is busy:\n%s", r.Body)
	}
	// Refused before anything was judged: neither a body of the wrong type
	// (else 415) nor a program that does not exist (else 404) is judged.
	wantBusy(t, "a body of the wrong type past the bound",
		c.Do(t, "POST", signupPath, "text/plain", strings.NewReader("email=x")))
	wantBusy(t, "a form for no program past the bound", c.PostForm(t, "/waitlist/no-such-program", form))

	release()
	wg.Wait()
	// Sent again as it stands, the form is admitted: nothing was stored.
	r = c.PostForm(t, signupPath, form)
	if got, want := r.StatusCode, http.StatusAccepted; got != want {
		t.Fatalf("the form sent again: status %d, want %d\n%s", got, want, r.Body)
	}
}

func TestOwnerWrites_HaveTheirOwnReserveWhileSignupsFillTheQueue(t *testing.T) {
	const depth, reserve = 4, 2
	app := MustStartApp(t, withWriteQueues(depth, reserve), withNetworkLimit(100000))
	owner := mustOwnerClient(t, app)
	public := app.NewClient(t)
	path := "/api/owner/programs/" + app.Demo.ID + "/content"
	rev := fmt.Sprint(owPath(owDecode(t, owner.Get(t, path).Body), "revision"))
	release := mustHoldWriter(t, app) // takes one slot of the reserve

	var wg sync.WaitGroup
	for i := range depth + 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			public.SendJSON("POST", signupAPI, signupJSONBody(uuid.NewString(), fmt.Sprintf("crowd%d@example.com", i), 1, true))
		}()
	}
	eventually(t, "the signup queue to fill", func() bool { return app.DB.SignupsWaiting() == depth })

	// The owner's write still gets in line: the signups do not use the
	// reserve.
	saved := make(chan *testResponse, 1)
	go func() {
		r, err := owner.SendJSON("PUT", path, `{"expectedRevision":`+rev+`,"body":"Saved while signups queue."}`)
		if err != nil {
			t.Errorf("owner PUT: %v", err)
		}
		saved <- r
	}()
	eventually(t, "the owner's write to wait for the writer", func() bool { return app.DB.WritesWaiting() == reserve })
	// Past the reserve, an owner's write is refused at once too.
	r := owner.PostJSON(t, "PUT", path, `{"expectedRevision":`+rev+`,"body":"One too many."}`)
	wantBusy(t, "an owner write past the reserve", r)
	if got, want := r.Body, "{\"error\":\"unavailable\"}\n"; got != want {
		t.Errorf("503 body %q, want %q", got, want)
	}
	release()
	wg.Wait()
	if r := <-saved; r == nil || r.StatusCode != http.StatusOK {
		t.Fatalf("the owner's queued write: %+v, want 200", r)
	}
	if got := appCount(t, app, `SELECT count(*) FROM early_access_content WHERE body = 'Saved while signups queue.'`); got != 1 {
		t.Fatalf("the owner's queued write was not saved")
	}
}

// startFullServer serves app's database through a Server whose log is
// JSON lines in the returned buffer, its signup limiter on clock, pacing
// every refusal when pacing is set (as after a window of refusals far
// outnumbering answers), with every in-progress place taken.
func startFullServer(t *testing.T, app *testApp, clock *testutil.Clock, pacing bool) (*httptest.Server, *Server, *testutil.SyncBuffer) {
	t.Helper()
	return startFullServerOn(t, app, clock, pacing, false)
}

// startFullServerOn is startFullServer, serving HTTP/2 over TLS when h2 is
// set (its client is the server's Client).
func startFullServerOn(t *testing.T, app *testApp, clock *testutil.Clock, pacing, h2 bool) (*httptest.Server, *Server, *testutil.SyncBuffer) {
	t.Helper()
	logs := &testutil.SyncBuffer{}
	ts := httptest.NewUnstartedServer(nil)
	u, _ := url.Parse("http://" + ts.Listener.Addr().String())
	srv, err := New(Options{PublicURL: u, Keys: srvOf(app).opts.Keys, Logger: slog.New(slog.NewJSONHandler(logs, nil))}, app.DB, app.Dev)
	if err != nil {
		t.Fatal(err)
	}
	srv.intake.Limiter = admission.NewLimiter(admission.MinInProgress, clock.Now, idleCPU)
	srv.intake.Limiter.SetPacing(pacing)
	for {
		if _, ok := srv.intake.Limiter.Start(); !ok {
			break
		}
	}
	ts.Config.Handler = srv
	ts.Config.ConnContext = admission.ConnContext
	if h2 {
		ts.EnableHTTP2 = true
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(ts.Close)
	return ts, srv, logs
}

// TestSignupBusy_ShedRefusalsArePacedLoggedAsHeldAndWriteNothing: with
// every in-progress place taken, 200 well-formed signups arrive at one
// instant (the limiter's clock stands still). Each is refused 503 having
// written nothing — no row of any table, no attempt on the network's
// counter — and the refusals leave one per refusal interval (eight answers
// at the floor's rate, 32 per mean target): the first at once, the k-th
// held at least k intervals, up to the longest hold. Each held refusal's
// request log line says so (held_ms), within its duration, which is the
// time the client waited.
func TestSignupBusy_ShedRefusalsArePacedLoggedAsHeldAndWriteNothing(t *testing.T) {
	const n = 200
	app := MustStartApp(t, withNetworkLimit(100000))
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	ts, srv, logs := startFullServer(t, app, clock, true)
	before := dbFingerprint(t, app.DB)
	attemptsBefore := networkAttempts(t, app)

	c := &http.Client{}
	var refused atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := signupJSONBody(uuid.NewString(), fmt.Sprintf("shed%03d@example.com", i), 1, true)
			req, _ := http.NewRequest("POST", ts.URL+signupAPI, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			if err != nil {
				t.Errorf("signup %d: %v", i, err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "1" {
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := refused.Load(); got != n {
		t.Fatalf("%d of %d signups refused 503 with Retry-After, want all", got, n)
	}
	wantNoChange(t, "signups shed for load", app, before)
	if got := networkAttempts(t, app); got != attemptsBefore {
		t.Fatalf("network attempts %d, want %d: a shed signup counts none", got, attemptsBefore)
	}
	if got := srv.intake.Limiter.RefusalsHeld(); got != 0 {
		t.Fatalf("%d refusals still held after every answer", got)
	}

	var held []time.Duration
	lines := logLines(t, logs.String(), "request")
	for _, l := range lines {
		if l["route"] != "POST /api/public/programs/{slug}/signups" || l["status"] != float64(503) {
			t.Fatalf("unexpected request line %v", l)
		}
		h, ok := l["held_ms"].(float64)
		if !ok {
			continue
		}
		if d := l["duration_ms"].(float64); d < h {
			t.Fatalf("a held refusal's duration %v ms is shorter than its hold %v ms", d, h)
		}
		held = append(held, time.Duration(h*float64(time.Millisecond)))
	}
	if len(lines) != n || len(held) != n-1 {
		t.Fatalf("%d request lines, %d of them held; want %d and %d (all but the first)", len(lines), len(held), n, n-1)
	}
	slices.Sort(held)
	interval := srv.intake.Limiter.RefusalInterval()
	for k, h := range held {
		// The log rounds to the microsecond.
		if want := min(time.Duration(k+1)*interval, admission.MaxFloodHold) - time.Microsecond; h < want {
			t.Fatalf("the %d-th held refusal waited %v, want at least %v", k+1, h, want)
		}
	}
}

// TestSignupBusy_AHeldRefusalEndsWhenItsClientGoesAway: on HTTP/2, whose
// connection carries other requests and so is not parked, a refusal due
// to wait the longest hold is held by its handler and let go as soon as
// its client cancels it, and its log line gives the hold it really had.
func TestSignupBusy_AHeldRefusalEndsWhenItsClientGoesAway(t *testing.T) {
	app := MustStartApp(t)
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	ts, srv, logs := startFullServerOn(t, app, clock, true, true)
	// A second's worth of refusals already paced: the next waits a second.
	for range int(admission.MaxRefusalHold/srv.intake.Limiter.RefusalInterval()) + 1 {
		if rf := srv.intake.Limiter.Refuse(nil); rf.Sent != nil {
			rf.Sent()
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+signupAPI,
		strings.NewReader(signupJSONBody(uuid.NewString(), "gone@example.com", 1, true)))
	req.Header.Set("Content-Type", "application/json")
	errc := make(chan error, 1)
	go func() {
		resp, err := ts.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	eventually(t, "the refusal to be held", func() bool { return srv.intake.Limiter.RefusalsHeld() == 1 })
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the cancelled request was answered")
	}
	eventually(t, "the held refusal to end", func() bool { return srv.intake.Limiter.RefusalsHeld() == 0 })
	var lines []map[string]any
	eventually(t, "its request line", func() bool {
		lines = logLines(t, logs.String(), "request")
		return len(lines) == 1
	})
	h, ok := lines[0]["held_ms"].(float64)
	if !ok {
		t.Fatalf("the refusal's line has no held_ms: %v", lines[0])
	}
	if held := time.Duration(h * float64(time.Millisecond)); held >= admission.MaxRefusalHold {
		t.Fatalf("held %v, the whole hold: it did not end when the client went away", held)
	}
}

// TestSignupBusy_AResendBeforeRetryAfterOnItsConnectionIsPaced: with
// refusals overall not paced and every place taken (the limiter's clock
// stands still), a client that sends again at once on the same keep-alive
// connection, ignoring Retry-After, is paced: its first resend leaves at
// once (the pace has nothing scheduled), each later one one refusal
// interval after the one before. A client on a new connection each time
// is never held, nor is the first client once its Retry-After has passed.
func TestSignupBusy_AResendBeforeRetryAfterOnItsConnectionIsPaced(t *testing.T) {
	app := MustStartApp(t, withNetworkLimit(100000))
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	ts, srv, logs := startFullServer(t, app, clock, false)
	interval := srv.intake.Limiter.RefusalInterval()

	keepAlive := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	newEach := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	t.Cleanup(keepAlive.CloseIdleConnections)
	sent := 0
	// send signs up through c and returns the refusal's hold from the
	// request log, and whether the request went on a connection used before.
	send := func(what string, c *http.Client) (held time.Duration, reused bool) {
		t.Helper()
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "POST",
			ts.URL+signupAPI, strings.NewReader(signupJSONBody(uuid.NewString(), "resend@example.com", 1, true)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != busyRetryAfter {
			t.Fatalf("%s: status %d, Retry-After %q; want 503 and %s", what, resp.StatusCode,
				resp.Header.Get("Retry-After"), busyRetryAfter)
		}
		sent++
		var lines []map[string]any
		eventually(t, what+"'s request line", func() bool {
			lines = logLines(t, logs.String(), "request")
			return len(lines) == sent
		})
		h, _ := lines[sent-1]["held_ms"].(float64)
		return time.Duration(h * float64(time.Millisecond)), reused
	}
	wantHeld := func(what string, c *http.Client, reuse bool, atLeast time.Duration) {
		t.Helper()
		held, reused := send(what, c)
		if reused != reuse {
			t.Fatalf("%s: went on a connection used before = %v, want %v", what, reused, reuse)
		}
		// The log rounds to the microsecond.
		if atLeast == 0 && held != 0 || atLeast > 0 && held < atLeast-time.Microsecond {
			t.Fatalf("%s: held %v, want %v", what, held, atLeast)
		}
	}

	wantHeld("the first signup", keepAlive, false, 0)
	wantHeld("its first resend", keepAlive, true, 0)
	for k := 1; k <= 3; k++ {
		wantHeld(fmt.Sprintf("resend %d", k+1), keepAlive, true, time.Duration(k)*interval)
	}
	// Three intervals are scheduled ahead now; a new connection each time
	// is not a resend, and leaves at once every time.
	for k := range 3 {
		wantHeld(fmt.Sprintf("signup %d on a new connection", k+1), newEach, false, 0)
	}
	// The last resend left three intervals from now; a Retry-After later
	// the same connection is not resending early.
	clock.Add(3*interval + busyRetryWait)
	wantHeld("a signup after the Retry-After", keepAlive, true, 0)
	if got := srv.intake.Limiter.RefusalsHeld(); got != 0 {
		t.Fatalf("%d refusals still held after every answer", got)
	}
}

// holdRefusalsUntilReleased makes srv's paced refusals wait, instead of
// their hold, until release is called (or they are stopped: their client
// went away), without a goroutine of their own, and returns the longest
// hold asked for so far.
func holdRefusalsUntilReleased(t *testing.T, srv *Server) (release func(), longest func() time.Duration) {
	t.Helper()
	var (
		mu       sync.Mutex
		waiting  []*func()
		released bool
		most     time.Duration
	)
	release = func() {
		mu.Lock()
		defer mu.Unlock()
		if released {
			return
		}
		released = true
		for _, f := range waiting {
			if *f != nil {
				go (*f)()
			}
		}
	}
	// Registered after the server's start, so run before its close, which
	// waits for the held connections.
	t.Cleanup(release)
	srv.intake.AfterHold = func(d time.Duration, f func()) (stop func() bool) {
		mu.Lock()
		defer mu.Unlock()
		most = max(most, d)
		if released {
			go f()
			return func() bool { return false }
		}
		p := &f
		waiting = append(waiting, p)
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			stopped := *p != nil && !released
			*p = nil
			return stopped
		}
	}
	return release, func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return most
	}
}

// servingGoroutines counts the goroutines net/http runs for a connection
// whose request it has not finished with: each held refusal has one.
func servingGoroutines() int {
	buf := make([]byte, 64<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return bytes.Count(buf, []byte("net/http.(*conn).serve("))
}

// rawSignup is one client on a connection of its own, written to by hand
// so that a test can keep thousands open without a pool in between.
type rawSignup struct {
	conn net.Conn
	r    *bufio.Reader
}

// sendRawSignups opens n connections to ts and sends a JSON signup on each.
func sendRawSignups(t *testing.T, ts *httptest.Server, n int, name string) []*rawSignup {
	t.Helper()
	out := make([]*rawSignup, n)
	for i := range out {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		body := signupJSONBody(uuid.NewString(), fmt.Sprintf("%s%04d@example.com", name, i), 1, true)
		if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			signupAPI, ts.Listener.Addr(), len(body), body); err != nil {
			t.Fatalf("signup %d: %v", i, err)
		}
		out[i] = &rawSignup{conn: c, r: bufio.NewReader(c)}
	}
	return out
}

// answer reads the signup's answer, checks it is a refusal for load and
// reports whether admit closed the connection after it.
func (s *rawSignup) answer() (closed bool, err error) {
	resp, err := http.ReadResponse(s.r, nil)
	if err != nil {
		return false, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != busyRetryAfter ||
		resp.Header.Get("Cache-Control") != "private, no-store" {
		return false, fmt.Errorf("status %d, Retry-After %q, Cache-Control %q; want a refusal for load",
			resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Cache-Control"))
	}
	if !resp.Close {
		return false, nil
	}
	if _, err := s.r.ReadByte(); err != io.EOF {
		return true, fmt.Errorf("answered Connection: close, yet the connection stayed open (%v)", err)
	}
	return true, nil
}

// answerAll reads every signup's answer, each from a goroutine of its
// own, counting into closed and open as they come; wait waits for all.
func answerAll(t *testing.T, what string, signups []*rawSignup, closed, open *atomic.Int64) (wait func()) {
	var wg sync.WaitGroup
	for i, s := range signups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := s.answer()
			switch {
			case err != nil:
				t.Errorf("%s %d: %v", what, i, err)
			case c:
				closed.Add(1)
			default:
				open.Add(1)
			}
		}()
	}
	return wg.Wait
}

// TestSignupBusy_HeldRefusalsPastTheOldCapAreParkedUpToTheirBound: with
// every place taken and refusals paced, 1,200 clients, each on a
// connection of its own, send a signup at one instant (the limiter's
// clock stands still; the holds last until the test lets them go). All
// but the first, which the pace sends at once, are held: more than the
// 1,024 that were once the most held, past which the rest came straight
// back. They are parked: net/http serves none of their connections any
// more. With the bound on held refusals then set to 1,250, 100 more
// arrive: exactly 51 are held, and the other 49 are answered at once and
// their connections closed, so that the held refusals never exceed the
// bound. Once let go, every held refusal is answered, the 503 with
// Retry-After, and its connection closed; only the first's stays open.
// Every answer has its log line, the held ones' with held_ms, and none
// was asked to be held past the longest hold.
func TestSignupBusy_HeldRefusalsPastTheOldCapAreParkedUpToTheirBound(t *testing.T) {
	const first, bound, more = 1200, 1250, 100
	app := MustStartApp(t, withNetworkLimit(100000))
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	ts, srv, logs := startFullServer(t, app, clock, true)
	release, longest := holdRefusalsUntilReleased(t, srv)

	var closed, open atomic.Int64
	waitFirst := answerAll(t, "signup", sendRawSignups(t, ts, first, "held"), &closed, &open)
	eventually(t, "all but the first refusal to be held", func() bool {
		return srv.intake.Limiter.RefusalsHeld() == first-1 && open.Load() == 1
	})
	// The first's connection is still served, idle; a held refusal would
	// keep its own.
	eventually(t, "the held refusals' connections to be parked", func() bool { return servingGoroutines() <= 1 })
	srv.intake.Limiter.SetMaxHeld(bound)
	waitMore := answerAll(t, "signup past the first", sendRawSignups(t, ts, more, "past"), &closed, &open)
	pastBound := int64(more - (bound - (first - 1)))
	eventually(t, "the refusals past the bound to be answered", func() bool { return closed.Load() == pastBound })
	if got, want := srv.intake.Limiter.RefusalsHeld(), bound; got != want {
		t.Fatalf("%d refusals held, want %d: the bound", got, want)
	}
	if got := open.Load(); got != 1 {
		t.Fatalf("%d answered on an open connection while the others were held, want 1 (the first)", got)
	}

	release()
	waitFirst()
	waitMore()
	if got, want := closed.Load(), int64(first+more-1); got != want || open.Load() != 1 {
		t.Fatalf("%d answers closed their connection, %d kept it; want %d and 1", got, open.Load(), want)
	}
	eventually(t, "every held refusal to be sent", func() bool { return srv.intake.Limiter.RefusalsHeld() == 0 })
	if got := longest(); got <= admission.MaxRefusalHold || got > admission.MaxFloodHold {
		t.Fatalf("the longest hold asked for was %v, want more than a resend's longest, %v, and at most %v",
			got, admission.MaxRefusalHold, admission.MaxFloodHold)
	}
	lines := logLines(t, logs.String(), "request")
	held := 0
	for _, l := range lines {
		if l["status"] != float64(http.StatusServiceUnavailable) {
			t.Fatalf("unexpected request line %v", l)
		}
		if _, ok := l["held_ms"]; ok {
			held++
		}
	}
	if len(lines) != first+more || held != bound {
		t.Fatalf("%d request lines, %d with held_ms; want %d and %d", len(lines), held, first+more, bound)
	}
}

// TestSignupBusy_AParkedFormRefusalIsTheBusyPageWithItsRequestID: with
// every place taken and refusals paced, two form signups arrive on
// connections of their own; the second is parked. Once let go, it is the
// whole busy page, as an unparked refusal would be: 503 with Retry-After,
// never cached, HTML, its own request ID in the header and on the page, a
// Content-Length that is the page's, a Date, and Connection: close.
func TestSignupBusy_AParkedFormRefusalIsTheBusyPageWithItsRequestID(t *testing.T) {
	app := MustStartApp(t, withNetworkLimit(100000))
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	ts, srv, _ := startFullServer(t, app, clock, true)
	release, _ := holdRefusalsUntilReleased(t, srv)
	send := func() *bufio.Reader {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		body := "email=parked%40example.com"
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s",
			signupPath, ts.Listener.Addr(), ts.URL, len(body), body)
		return bufio.NewReader(c)
	}
	first := send()
	if resp, err := http.ReadResponse(first, nil); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("the first form signup: %v, %v; want a 503 at once", resp, err)
	}
	second := send()
	eventually(t, "the second refusal to be held", func() bool { return srv.intake.Limiter.RefusalsHeld() == 1 })
	release()
	resp, err := http.ReadResponse(second, nil)
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the parked page: %v", err)
	}
	wantBusy(t, "the parked form refusal", &testResponse{StatusCode: resp.StatusCode, Header: resp.Header, Body: string(page)})
	id := resp.Header.Get("X-Request-ID")
	switch {
	case !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"):
		t.Fatalf("Content-Type %q, want the page", resp.Header.Get("Content-Type"))
	case !strings.Contains(string(page), "<h1>Too busy right now</h1>") || id == "" || !strings.Contains(string(page), id):
		t.Fatalf("the parked page is not the busy page with its request ID %q:\n%s", id, page)
	case resp.ContentLength != int64(len(page)) || resp.Header.Get("Date") == "" || !resp.Close:
		t.Fatalf("Content-Length %d for %d bytes, Date %q, Connection: close %v", resp.ContentLength, len(page),
			resp.Header.Get("Date"), resp.Close)
	}
	if _, err := second.ReadByte(); err != io.EOF {
		t.Fatalf("the parked refusal's connection stayed open (%v)", err)
	}
}
