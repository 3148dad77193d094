package secure

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestOrigin_RefusesEveryCrossOriginWriteAndOnlyWrites: a write from
// another origin, or that the browser calls cross-site or same-site, is
// refused; a same-origin write, a user-initiated one and every read pass.
func TestOrigin_RefusesEveryCrossOriginWriteAndOnlyWrites(t *testing.T) {
	const origin = "https://admit.example"
	refuse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) })
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h, err := Origin(origin, refuse, next)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, origin, site string
		want                 int
	}{
		{"POST", origin, "same-origin", http.StatusNoContent},
		{"POST", "", "none", http.StatusNoContent},
		{"POST", "null", "same-origin", http.StatusNoContent},
		{"POST", "https://evil.example", "", http.StatusForbidden},
		{"POST", origin, "same-site", http.StatusForbidden},
		{"POST", origin, "cross-site", http.StatusForbidden},
		{"POST", "null", "", http.StatusForbidden},
		{"DELETE", "https://evil.example", "cross-site", http.StatusForbidden},
		{"GET", "https://evil.example", "cross-site", http.StatusNoContent},
	} {
		r := httptest.NewRequest(tc.method, origin+"/x", nil)
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if tc.site != "" {
			r.Header.Set("Sec-Fetch-Site", tc.site)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s Origin %q Sec-Fetch-Site %q: %d, want %d", tc.method, tc.origin, tc.site, w.Code, tc.want)
		}
	}
}

// TestLayer_SetsTheHeadersAndHandsOnAPanic: every answer carries the
// security headers (HSTS only over HTTPS), and a panic reaches recovered
// with whether the handler had answered.
func TestLayer_SetsTheHeadersAndHandsOnAPanic(t *testing.T) {
	for _, https := range []bool{false, true} {
		var got any
		var answered bool
		h := Layer(https, func(w http.ResponseWriter, r *http.Request, v any, a bool) { got, answered = v, a },
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusAccepted)
				panic("boom")
			}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		if got != "boom" || !answered {
			t.Errorf("https=%t: recovered %v, answered %t; want boom, true", https, got, answered)
		}
		if w.Header().Get("Content-Security-Policy") != BaseCSP || w.Header().Get("X-Frame-Options") != "DENY" {
			t.Errorf("https=%t: headers %v", https, w.Header())
		}
		if hsts := w.Header().Get("Strict-Transport-Security") != ""; hsts != https {
			t.Errorf("https=%t: HSTS set=%t", https, hsts)
		}
	}
}
