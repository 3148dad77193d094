package handlers

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"admit/handlers/admission"
	"admit/store"

	"github.com/google/uuid"
)

// slowAnswer is what a slow signup connection was answered.
type slowAnswer struct {
	status int
	header http.Header
	body   string
	// close reports that the server said it closes the connection.
	close bool
	err   error
}

// startSlowSignup opens a connection to the app and posts body to path
// one byte every `every`, as a client on a stalled link (or an attacker)
// would: the headers at once, with the body's full Content-Length, then
// the body a byte at a time until the server answers or stop is closed.
// The answer (or the error) arrives on the returned channel; answered is
// incremented when it does.
func startSlowSignup(app *testApp, path, contentType, body string, every time.Duration, stop <-chan struct{},
	answered *atomic.Int64) <-chan slowAnswer {
	out := make(chan slowAnswer, 1)
	go func() {
		u, _ := url.Parse(app.URL)
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			out <- slowAnswer{err: err}
			return
		}
		defer conn.Close()
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
			path, u.Host, contentType, len(body))
		if _, err := io.WriteString(conn, head+body[:1]); err != nil {
			out <- slowAnswer{err: err}
			return
		}
		got := make(chan slowAnswer, 1)
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				got <- slowAnswer{err: err}
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			got <- slowAnswer{status: resp.StatusCode, header: resp.Header, body: string(b), close: resp.Close, err: err}
		}()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 1; ; {
			select {
			case a := <-got:
				answered.Add(1)
				out <- a
				return
			case <-stop:
				out <- slowAnswer{err: fmt.Errorf("stopped before an answer")}
				return
			case <-tick.C:
				if i < len(body) {
					// A write error (the server closed) leaves the answer to the reader.
					_, _ = io.WriteString(conn, body[i:i+1])
					i++
				}
			}
		}
	}()
	return out
}

// TestSlowBodies_NeverShutTheSignupFormAndAreAnswered408: 64 connections
// sending their signup bodies a byte at a time, much slower than the body
// deadline, while real signups arrive. A slow body takes no in-progress
// place, so the real signups are admitted as if the slow ones were not
// there — with the bound at its floor of 32 places, as when traffic is
// light — and each slow one is answered 408 once its deadline passes,
// having counted nothing: no entry, no receipt, no attempt against the
// network's hourly limit.
func TestSlowBodies_NeverShutTheSignupFormAndAreAnswered408(t *testing.T) {
	const slow, real, workers = 64, 64, 8
	// The only wall-clock amount of the test: the real signups must be
	// answered within it, the slow bodies must not arrive within it.
	const deadline = 3 * time.Second
	app := MustStartApp(t, withWriteQueues(admission.MinInProgress, 0), withNetworkLimit(100000),
		withSignupBodyTimeout(deadline))
	if got, want := srvOf(app).intake.Limiter.Bound(), admission.MinInProgress; got != want {
		t.Fatalf("the in-progress bound is %d, want its floor %d", got, want)
	}

	stop := make(chan struct{})
	defer close(stop)
	var slowAnswered atomic.Int64
	answers := make([]<-chan slowAnswer, slow)
	for i := range slow {
		key, email := uuid.NewString(), fmt.Sprintf("slow%03d@example.com", i)
		// A complete, valid signup: were it allowed to arrive, it would be
		// admitted. It is refused for its pace alone.
		path, ctype, body := signupAPI, "application/json", signupJSONBody(key, email, 1, true)
		if i%2 == 1 {
			path, ctype, body = signupPath, "application/x-www-form-urlencoded", signupFormValues(key, email, 1, true).Encode()
		}
		answers[i] = startSlowSignup(app, path, ctype, body, deadline/4, stop, &slowAnswered)
	}
	// Every slow signup has reached admit's handler (and, before the fix,
	// taken its place) before the first real one is sent.
	eventually(t, "every slow signup to reach the handler", func() bool { return app.Arrived.Load() == slow })

	c := app.NewClient(t)
	statuses := make([]int, real)
	errs := make([]error, real)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < real; i = int(next.Add(1) - 1) {
				key, email := uuid.NewString(), fmt.Sprintf("real%03d@example.com", i)
				var r *testResponse
				if i%2 == 0 {
					r, errs[i] = c.SendJSON("POST", signupAPI, signupJSONBody(key, email, 1, true))
				} else {
					r, errs[i] = c.Send("POST", signupPath, "application/x-www-form-urlencoded",
						strings.NewReader(signupFormValues(key, email, 1, true).Encode()))
				}
				if errs[i] == nil {
					statuses[i] = r.StatusCode
				}
			}
		}()
	}
	wg.Wait()
	answeredDuringReal := slowAnswered.Load()

	accepted, refused := 0, 0
	for i := range real {
		if errs[i] != nil {
			t.Fatalf("real signup %d: %v", i, errs[i])
		}
		switch statuses[i] {
		case http.StatusAccepted:
			accepted++
		case http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("real signup %d: status %d, want 202 (or 503 for load)", i, statuses[i])
		}
	}
	if least := (real*95 + 99) / 100; accepted < least {
		t.Fatalf("%d slow bodies: %d of %d real signups accepted (%d refused for load), want at least %d (95%%)",
			slow, accepted, real, refused, least)
	}
	if answeredDuringReal != 0 {
		t.Fatalf("%d slow signups were answered before the last real one: the real ones must run while the slow ones are held "+
			"(the %v deadline was too short for this machine)", answeredDuringReal, deadline)
	}

	for i, ch := range answers {
		a := <-ch
		if a.err != nil {
			t.Fatalf("slow signup %d: %v", i, a.err)
		}
		if got, want := a.status, http.StatusRequestTimeout; got != want {
			t.Fatalf("slow signup %d: status %d, want %d\n%s", i, got, want, a.body)
		}
		if got, want := a.header.Get("Cache-Control"), "private, no-store"; got != want {
			t.Errorf("slow signup %d: Cache-Control=%q, want %q", i, got, want)
		}
		if !a.close {
			t.Errorf("slow signup %d: no Connection: close; a connection whose body stalled must not be read again", i)
		}
		if i%2 == 0 {
			if got, want := a.body, "{\"error\":\"request_timeout\"}\n"; got != want {
				t.Errorf("slow JSON signup %d: body %q, want %q", i, got, want)
			}
			continue
		}
		for _, want := range []string{"<h1>Took too long to arrive</h1>", "took too long to reach us", "Nothing was saved."} {
			if !strings.Contains(a.body, want) {
				t.Errorf("slow form %d: the page does not say %q:\n%s", i, want, a.body)
			}
		}
	}

	// Exact counts: every accepted real signup is stored once, the slow
	// ones not at all, and only the accepted ones counted an attempt.
	if got := appCount(t, app, `SELECT count(*) FROM entries WHERE email_key LIKE 'real%'`); got != accepted {
		t.Fatalf("entries of real signups=%d, want %d", got, accepted)
	}
	if got := appCount(t, app, `SELECT count(*) FROM entries WHERE email_key LIKE 'slow%'`); got != 0 {
		t.Fatalf("entries of slow signups=%d, want 0", got)
	}
	if got := appCount(t, app, `SELECT count(*) FROM signup_receipts`); got != accepted {
		t.Fatalf("receipts=%d, want %d (the accepted real signups only)", got, accepted)
	}
	if got := networkAttempts(t, app); got != accepted {
		t.Fatalf("network attempts=%d, want %d: a slow body counts none", got, accepted)
	}
	if got := srvOf(app).intake.Limiter.InProgress(); got != 0 {
		t.Fatalf("%d signups still in progress, want 0", got)
	}
	// The 408s are logged like any answer, and no body reaches the log.
	logs := app.Logs.String()
	if got := strings.Count(logs, "status=408"); got != slow {
		t.Errorf("the request log has %d lines with status 408, want %d", got, slow)
	}
	if strings.Contains(logs, "@example.com") {
		t.Errorf("the log holds an address:\n%s", logs)
	}
}

// TestSignupBusy_RefusalIsPreparedAndReadsNoSession: past the bound on
// signups in progress the refusal is the answer prepared at start — the
// same bytes for a signed-in owner as for anyone, but for the request ID
// — so refusing renders no template and reads neither the session nor
// the database (a page built per request would show the owner's
// navigation, read from both).
func TestSignupBusy_RefusalIsPreparedAndReadsNoSession(t *testing.T) {
	const depth = 2
	app := MustStartApp(t, withWriteQueues(depth, 0), withNetworkLimit(100000))
	anon := app.NewClient(t)
	owner := app.NewClient(t)
	owner.SignIn(t, "owner@example.test")
	release := mustHoldWriter(t, app)
	var wg sync.WaitGroup
	for i := range depth {
		wg.Add(1)
		go func() {
			defer wg.Done()
			anon.SendJSON("POST", signupAPI, signupJSONBody(uuid.NewString(), fmt.Sprintf("held%d@example.com", i), 1, true))
		}()
	}
	eventually(t, "the places to be taken", func() bool { return srvOf(app).intake.Limiter.InProgress() == depth })

	form := signupFormValues(uuid.NewString(), "someone@example.com", 1, true)
	pages := map[string]*testResponse{"anyone": anon.PostForm(t, signupPath, form), "owner": owner.PostForm(t, signupPath, form)}
	for who, r := range pages {
		wantBusy(t, who, r)
		id := r.Header.Get("X-Request-ID")
		if id == "" || !strings.Contains(r.Body, `data-testid="request-id">`+id+`<`) {
			t.Fatalf("%s: the busy page does not show the request ID %q:\n%s", who, id, r.Body)
		}
		r.Body = strings.Replace(r.Body, id, "ID", 1)
	}
	if pages["anyone"].Body != pages["owner"].Body {
		t.Fatalf("the owner's busy page differs from anyone's:\n%s\n---\n%s", pages["owner"].Body, pages["anyone"].Body)
	}
	if strings.Contains(pages["owner"].Body, "Owner console") {
		t.Fatalf("the busy page was built from the owner's session:\n%s", pages["owner"].Body)
	}
	block := anon.PostForm(t, signupPath, form, "HX-Request", "true")
	wantBusy(t, "htmx", block)
	if strings.Contains(block.Body, "<html") || !strings.Contains(block.Body, "<h1>Too busy right now</h1>") {
		t.Fatalf("htmx got %q, want the busy block alone", block.Body)
	}
	api := anon.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "someone@example.com", 1, true))
	wantBusy(t, "JSON", api)
	if got, want := api.Body, "{\"error\":\"unavailable\"}\n"; got != want {
		t.Fatalf("JSON busy body %q, want %q", got, want)
	}
	release()
	wg.Wait()
	// rule: shed before anything is counted: only the signups that held
	// places counted an attempt.
	if got, want := networkAttempts(t, app), depth; got != want {
		t.Fatalf("network attempts=%d, want %d: a signup refused for load counts none", got, want)
	}
}

// BenchmarkSignupRefusal is what a refusal for load costs in-process,
// with every in-progress place taken and no hold: the whole handler chain
// (request log, headers, origin check, routing, body read, limiter,
// answer) for each route, and the answer alone, prepared at start against
// the busy page rendered per request by the error adapter.
func BenchmarkSignupRefusal(b *testing.B) {
	app := MustStartApp(b, withWriteQueues(admission.MinInProgress, 0))
	for {
		if _, ok := srvOf(app).intake.Limiter.Start(); !ok {
			break
		}
	}
	// As many refusals held as may be: each refusal leaves at once, so the
	// benchmark times a refusal's work, not the pace that holds it.
	srvOf(app).intake.Limiter.SetHeld(admission.MaxRefusalsHeld)
	jsonBody := signupJSONBody(uuid.NewString(), "someone@example.com", 1, true)
	formBody := signupFormValues(uuid.NewString(), "someone@example.com", 1, true).Encode()
	for _, bc := range []struct {
		name, path, ctype, body string
	}{{"chain/json", signupAPI, "application/json", jsonBody}, {"chain/form", signupPath, "application/x-www-form-urlencoded", formBody}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest("POST", bc.path, strings.NewReader(bc.body))
				r.Header.Set("Content-Type", bc.ctype)
				w := httptest.NewRecorder()
				srvOf(app).ServeHTTP(w, r)
				if w.Code != http.StatusServiceUnavailable {
					b.Fatalf("status %d, want 503", w.Code)
				}
			}
		})
	}
	answers := map[string]func(http.ResponseWriter, *http.Request){
		"answer/prepared": func(w http.ResponseWriter, r *http.Request) { srvOf(app).intake.Busy.Write(w, r, answerForm(r)) },
		"answer/rendered": func(w http.ResponseWriter, r *http.Request) { srvOf(app).writeError(w, r, store.ErrBusy) },
	}
	for _, name := range []string{"answer/prepared", "answer/rendered"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				answers[name](httptest.NewRecorder(), httptest.NewRequest("POST", signupPath, nil))
			}
		})
	}
}
