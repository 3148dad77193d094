package handlers

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// routeRecorder records what a RequestObserver is told.
type routeRecorder struct {
	mu     sync.Mutex
	routes []string
	n      int
}

func (r *routeRecorder) Request(method, route string, status int, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.routes = append(r.routes, method+" "+route)
	r.n++
}

func TestRequestObserver_IsGivenOnlyRegisteredPatternsAndFixedMethods(t *testing.T) {
	app := MustStartApp(t)
	rec := &routeRecorder{}
	opts := srvOf(app).opts
	opts.Requests = rec
	srv, err := New(opts, app.DB, app.Dev)
	if err != nil {
		t.Fatal(err)
	}
	hostile := []struct{ method, target string }{
		{"GET", "/waitlist/alice@example.com"},
		{"GET", "/waitlist/demo?email=bob@example.com"},
		{"GET", "//waitlist/carol@example.com"},
		{"GET", "/waitlist/../manage/dave@example.com"},
		{"GET", "/manage?token=tok_erin"},
		{"GET", "/assets/../../frank@example.com"},
		{"POST", "/api/public/programs/grace@example.com/signups"},
		{"DELETE", "/api/owner/programs/heidi@example.com"},
		{"IVAN@EXAMPLE.COM", "/"},
		{"GET", "/%40judy"},
		{"GET", "/no-such/../../kim@example.com/"},
		{"PUT", "/me/"},
		{"CONNECT", "/manage"},
		{"CONNECT", "/waitlist/leo@example.com"},
	}
	for _, h := range hostile {
		req, err := http.NewRequest("GET", app.URL+h.target, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Method = h.method     // also one no client library would send
		req.URL.Opaque = h.target // send the target exactly as written
		srv.ServeHTTP(newRecorder(), req)
	}
	allowed := srv.Routes()
	if len(allowed) < 20 {
		t.Fatalf("only %d registered patterns", len(allowed))
	}
	allowed = append(allowed, "unmatched")
	methods := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "OTHER"}
	if rec.n != len(hostile) {
		t.Fatalf("observed %d requests, want %d", rec.n, len(hostile))
	}
	for _, got := range rec.routes {
		method, route, _ := strings.Cut(got, " ")
		if !slices.Contains(methods, method) || !slices.Contains(allowed, route) {
			t.Errorf("observer was given %q: not a fixed method and a registered pattern", got)
		}
	}
}
