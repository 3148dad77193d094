package admission

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"admit/handlers/reqlog"
	"admit/internal/testutil"
)

// intakeServer serves in.Wrap(next) behind the request log on a loopback
// port, with the connection records admit's server sets; logs receives
// the request log as JSON lines.
func intakeServer(t *testing.T, in *Intake, next http.Handler) (*httptest.Server, *testutil.SyncBuffer) {
	t.Helper()
	logs := &testutil.SyncBuffer{}
	h := reqlog.Middleware(reqlog.Options{Log: slog.New(slog.NewJSONHandler(logs, nil)),
		Route: func(*http.Request) string { return "POST /signup" }}, in.Wrap(next))
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ConnContext = ConnContext
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, logs
}

// testIntake is an intake bounded at MinInProgress places on clock, with
// answers whose page shows the request ID, and body errors answered 400.
func testIntake(clock *testutil.Clock) *Intake {
	page := func(s string) []byte { return []byte("<p>" + s + " " + RequestIDSlot + "</p>") }
	return &Intake{
		Limiter:     NewLimiter(MinInProgress, clock.Now, idleCPU),
		BodyTimeout: BodyTimeout,
		Busy:        NewCannedAnswer(http.StatusServiceUnavailable, "1", []byte(`{"error":"unavailable"}`), page("busy"), page("busy block")),
		SlowBody:    NewCannedAnswer(http.StatusRequestTimeout, "", []byte(`{"error":"request_timeout"}`), page("slow"), page("slow block")),
		Form: func(r *http.Request) Form {
			if strings.HasPrefix(r.URL.Path, "/api/") {
				return FormJSON
			}
			return FormPage
		},
		BodyError: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, err.Error(), http.StatusBadRequest)
		},
		AfterHold: AfterHoldTimer,
	}
}

// waitFor waits until cond holds, failing t after ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// fillPlaces takes every in-progress place of l.
func fillPlaces(l *Limiter) {
	for {
		if _, ok := l.Start(); !ok {
			return
		}
	}
}

// TestIntake_ABodyIsReadBeforeAPlaceIsTakenAndASlowOneIs408: a signup
// whose body stops arriving holds no place while it is read and is
// answered 408 with Connection: close once its deadline passes; the
// handler behind never runs for it. A signup whose body arrives whole
// reaches the handler with that body, holding a place.
func TestIntake_ABodyIsReadBeforeAPlaceIsTakenAndASlowOneIs408(t *testing.T) {
	in := testIntake(testutil.NewClock(time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)))
	in.BodyTimeout = 200 * time.Millisecond
	var ran atomic.Int64
	var inProgress atomic.Int64
	ts, _ := intakeServer(t, in, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran.Add(1)
		inProgress.Store(int64(in.Limiter.InProgress()))
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "got %s", b)
	}))
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Ten bytes of the hundred promised, then nothing.
	fmt.Fprintf(conn, "POST /api/signup HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"email\":")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	// net/http reads Connection: close into Close.
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close || string(body) != `{"error":"request_timeout"}` {
		t.Fatalf("slow body: %d, close %v, %q; want 408, Connection: close, the prepared JSON", resp.StatusCode, resp.Close, body)
	}
	if ran.Load() != 0 || in.Limiter.InProgress() != 0 {
		t.Fatalf("slow body: the handler ran %d times, %d places taken; want 0, 0", ran.Load(), in.Limiter.InProgress())
	}
	r, err := http.Post(ts.URL+"/api/signup", "application/json", strings.NewReader(`{"email":"a@example.com"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK || string(b) != `got {"email":"a@example.com"}` || inProgress.Load() != 1 {
		t.Fatalf("whole body: %d %q, %d places taken in the handler; want 200, the body, 1", r.StatusCode, b, inProgress.Load())
	}
	if got := in.Limiter.InProgress(); got != 0 {
		t.Fatalf("%d places taken after the answer, want 0", got)
	}
}

// TestIntake_PastTheBoundTheBusyAnswerLeavesAtOnce: with every place
// taken and refusals not paced, 50 signups at once are each answered the
// prepared 503 at once (with Retry-After, never cached, the request ID in
// the page), the handler never runs and no refusal is held.
func TestIntake_PastTheBoundTheBusyAnswerLeavesAtOnce(t *testing.T) {
	in := testIntake(testutil.NewClock(time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)))
	fillPlaces(in.Limiter)
	var ran atomic.Int64
	ts, logs := intakeServer(t, in, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran.Add(1) }))
	const n = 50
	var wg sync.WaitGroup
	var busy atomic.Int64
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := http.Post(ts.URL+"/waitlist", "application/x-www-form-urlencoded", strings.NewReader("email=a%40example.com"))
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			id := r.Header.Get("X-Request-ID")
			if r.StatusCode == http.StatusServiceUnavailable && r.Header.Get("Retry-After") == "1" &&
				r.Header.Get("Cache-Control") == "private, no-store" && id != "" && string(b) == "<p>busy "+id+"</p>" {
				busy.Add(1)
			}
		}()
	}
	wg.Wait()
	if busy.Load() != n || ran.Load() != 0 || in.Limiter.RefusalsHeld() != 0 {
		t.Fatalf("%d of %d answered the busy page, handler ran %d times, %d held; want %d, 0, 0\nlog:\n%s",
			busy.Load(), n, ran.Load(), in.Limiter.RefusalsHeld(), n, logs.String())
	}
	if got := strings.Count(logs.String(), `"status":503`); got != n {
		t.Fatalf("%d refusals logged, want %d", got, n)
	}
}

// TestIntake_AParkedRefusalLeavesWhenItsHoldEndsAndClosesItsConnection:
// while refusals are paced, a second refusal is parked: nothing reaches
// its client until its hold is over (AfterHold lets it go); then the
// prepared 503 arrives whole, with Connection: close and its length, the
// connection is closed, the refusal is no longer counted held, and its
// request's log line, with held_ms, is written only then.
func TestIntake_AParkedRefusalLeavesWhenItsHoldEndsAndClosesItsConnection(t *testing.T) {
	in := testIntake(testutil.NewClock(time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)))
	fillPlaces(in.Limiter)
	in.Limiter.SetPacing(true)
	release := make(chan struct{})
	var holds atomic.Int64
	in.AfterHold = func(d time.Duration, f func()) (stop func() bool) {
		holds.Add(1)
		go func() {
			<-release
			f()
		}()
		return func() bool { return false }
	}
	ts, logs := intakeServer(t, in, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		body := `{"email":"a@example.com"}`
		fmt.Fprintf(c, "POST /api/signup HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		return c, bufio.NewReader(c)
	}
	// The first refusal of the pace leaves at once; the second is held.
	_, first := send()
	if r, err := http.ReadResponse(first, nil); err != nil || r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("first refusal: %v, %v; want 503 at once", r, err)
	}
	second, br := send()
	waitFor(t, "the second refusal to be held", func() bool { return in.Limiter.RefusalsHeld() == 1 && holds.Load() == 1 })
	if strings.Count(logs.String(), `"status":503`) != 1 {
		t.Fatalf("a parked refusal's line was written before it left:\n%s", logs.String())
	}
	_ = second.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := br.Peek(1); err == nil {
		t.Fatalf("the parked refusal's client read something before its hold ended")
	}
	_ = second.SetReadDeadline(time.Time{})
	close(release)
	r, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusServiceUnavailable || !r.Close || r.ContentLength != int64(len(b)) ||
		string(b) != `{"error":"unavailable"}` || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("parked refusal: %d, close %v, length %d, %q; want 503, Connection: close, the body's length, the prepared JSON",
			r.StatusCode, r.Close, r.ContentLength, b)
	}
	_ = second.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after the parked refusal the connection was not closed: %v", err)
	}
	waitFor(t, "the parked refusal to count as sent", func() bool { return in.Limiter.RefusalsHeld() == 0 })
	waitFor(t, "the parked refusal's log line", func() bool { return strings.Count(logs.String(), `"status":503`) == 2 })
	var parked map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["held_ms"] != nil {
			parked = m
		}
	}
	if parked == nil || parked["bytes"] != float64(len(b)) {
		t.Fatalf("no line with held_ms and the answer's %d bytes:\n%s", len(b), logs.String())
	}
}
