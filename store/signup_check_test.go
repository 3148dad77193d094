package store

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestSignup_ChecksEachFieldOnceAndNamesTheOneAtFault holds Signup to the
// one check of a signup's fields that the form and the JSON API both reach:
// each refusal is EINVALID with the message the form shows, names its field
// for the form, stores nothing and counts no attempt; an accepted signup is
// stored, bound to its key and deduplicated in its one normal form.
func TestSignup_ChecksEachFieldOnceAndNamesTheOneAtFault(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "one-check", 100, 100)
	counter := sha256.Sum256([]byte("one-check network"))
	attempts := &AttemptLimit{Max: 100, Key: func(time.Time) []byte { return counter[:] }}

	for _, tc := range []struct {
		name  string
		edit  func(*SignupRequest)
		field SignupField
		want  string
	}{
		{"no request key", func(r *SignupRequest) { r.RequestKey = "nope" }, SignupFieldNone,
			"This form is missing its request key. Reload the page and try again."},
		{"request key without hyphens", func(r *SignupRequest) { r.RequestKey = strings.ReplaceAll(r.RequestKey, "-", "") }, SignupFieldNone,
			"This form is missing its request key. Reload the page and try again."},
		{"no notice version", func(r *SignupRequest) { r.NoticeVersion = 0 }, SignupFieldNone,
			"This form is missing its notice version. Reload the page and try again."},
		{"bad address", func(r *SignupRequest) { r.Email = "jane@@example.com" }, SignupFieldEmail,
			"Enter an email address like name@example.com (ASCII letters, digits and common symbols)."},
		{"choice not made", func(r *SignupRequest) { r.Permission = false }, SignupFieldPermission,
			"Tick the box to confirm your choice to join under this notice."},
	} {
		req := sp.signupReq("field@example.com")
		req.Attempts = attempts
		tc.edit(&req)
		res, err := db.Signup(ctx, req)
		if err == nil {
			t.Fatalf("%s: accepted (%+v), want a refusal", tc.name, res)
		}
		if got := ErrorCode(err); got != EINVALID {
			t.Errorf("%s: code %q, want %q", tc.name, got, EINVALID)
		}
		if got := ErrorMessage(err); got != tc.want {
			t.Errorf("%s: message %q, want %q", tc.name, got, tc.want)
		}
		if got := InvalidSignupField(err); got != tc.field {
			t.Errorf("%s: field %d, want %d", tc.name, got, tc.field)
		}
	}
	if n := mustCount(t, db, `SELECT count(*) FROM entries`); n != 0 {
		t.Errorf("entries=%d after refusals, want 0", n)
	}
	if n := mustCount(t, db, `SELECT count(*) FROM network_counters`); n != 0 {
		t.Errorf("network counters=%d after refusals, want 0 (a refusal counts no attempt)", n)
	}

	// The key in upper case and the address with spaces and an upper-case
	// domain: stored as the one normal form of each.
	key := uuid.NewString()
	first := sp.signupReq("  Jane.Doe@Example.COM ")
	first.RequestKey = strings.ToUpper(key)
	if res := mustSignup(t, db, first); res.RemovalToken == "" || res.Replay {
		t.Fatalf("first signup: %+v, want a new entry with its removal token", res)
	}
	if n := mustCount(t, db, `SELECT count(*) FROM entries WHERE email_key = 'Jane.Doe@example.com'`); n != 1 {
		t.Fatalf("entries stored as Jane.Doe@example.com: %d, want 1", n)
	}
	// The same signup in normal form is a replay of the first: it was bound
	// to its key in that form.
	again := sp.signupReq("Jane.Doe@example.com")
	again.RequestKey = key
	if res, err := db.Signup(ctx, again); err != nil || !res.Replay {
		t.Fatalf("same signup in normal form: (%+v, %v), want a replay", res, err)
	}
	// Another key and another spelling of the address is a duplicate: one
	// entry still.
	if _, err := db.Signup(ctx, sp.signupReq("Jane.Doe@EXAMPLE.com ")); err != nil {
		t.Fatalf("duplicate: %v", err)
	}
	if n := mustCount(t, db, `SELECT count(*) FROM entries`); n != 1 {
		t.Errorf("entries=%d after a duplicate, want 1", n)
	}
}
