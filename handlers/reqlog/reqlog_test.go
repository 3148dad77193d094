package reqlog

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestNewID_BelievesOnlyAWellFormedTrustedHeader: a proxy's ID is kept
// only from the trusted header and only when it is 1–64 of A-Z a-z 0-9 -
// _; otherwise admit makes its own, 16 hex digits, different each time.
func TestNewID_BelievesOnlyAWellFormedTrustedHeader(t *testing.T) {
	for _, tc := range []struct {
		trusted, sent string
		kept          bool
	}{
		{"X-Request-ID", "abc-123_XYZ", true},
		{"X-Request-ID", strings.Repeat("a", 64), true},
		{"X-Request-ID", strings.Repeat("a", 65), false},
		{"X-Request-ID", "a@example.com", false},
		{"X-Request-ID", "two words", false},
		{"X-Request-ID", "", false},
		{"", "abc", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-Request-ID", tc.sent)
		got := NewID(r, tc.trusted)
		if tc.kept {
			if got != tc.sent {
				t.Errorf("trusted %q, sent %q: ID %q, want the sent one", tc.trusted, tc.sent, got)
			}
			continue
		}
		if got == tc.sent || len(got) != 16 || strings.Trim(got, "0123456789abcdef") != "" {
			t.Errorf("trusted %q, sent %q: ID %q, want 16 hex digits of admit's own", tc.trusted, tc.sent, got)
		}
		if again := NewID(r, tc.trusted); again == got {
			t.Errorf("two requests got the same made ID %q", got)
		}
	}
}

// TestMethod_NamesOnlyTheFixedMethods keeps a made-up method out of the
// log and the metric labels.
func TestMethod_NamesOnlyTheFixedMethods(t *testing.T) {
	for m, want := range map[string]string{"GET": "GET", "DELETE": "DELETE", "TRACE": "TRACE", "get": "OTHER", "BREW": "OTHER", "": "OTHER"} {
		if got := Method(m); got != want {
			t.Errorf("Method(%q) = %q, want %q", m, got, want)
		}
	}
}
