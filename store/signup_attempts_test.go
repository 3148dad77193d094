package store

import (
	"bytes"
	"context"
	"testing"
	"time"
)

func TestSignup_CountsTheNetworkAttemptInTheSameTransaction(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "attempts", 100, 100)
	ctx := context.Background()
	key := bytes.Repeat([]byte{9}, 32)
	limit := &AttemptLimit{Max: 3, Key: func(time.Time) []byte { return key }}
	attempts := func() int {
		return mustCount(t, db, `SELECT coalesce(sum(attempts), 0) FROM network_counters WHERE key = ?`, key)
	}

	req := sp.signupReq("first@example.com")
	req.Attempts = limit
	if _, err := db.Signup(ctx, req); err != nil {
		t.Fatal(err)
	}
	// A refused admission (outdated notice: 409) keeps its counted attempt
	// but nothing else it would have written.
	before, counters := dbFingerprint(t, db), attemptsByKey(t, db)
	stale := sp.signupReq("second@example.com")
	stale.NoticeVersion = 99
	stale.Attempts = limit
	if _, err := db.Signup(ctx, stale); ErrorCode(err) != ECONFLICT {
		t.Fatalf("outdated notice: %v, want conflict", err)
	}
	wantOnlyAttemptsCounted(t, "a refused admission", db, before, counters, key, 1)
	if got, want := attempts(), 2; got != want {
		t.Fatalf("attempts=%d, want %d: a refused admission still counts", got, want)
	}
	third := sp.signupReq("third@example.com")
	third.Attempts = limit
	if _, err := db.Signup(ctx, third); err != nil {
		t.Fatal(err)
	}
	// Over the limit: refused, nothing stored, and the refusal is not counted.
	before = dbFingerprint(t, db)
	fourth := sp.signupReq("fourth@example.com")
	fourth.Attempts = limit
	if _, err := db.Signup(ctx, fourth); ErrorCode(err) != ERATELIMITED {
		t.Fatalf("over the network limit: %v, want rate limited", err)
	}
	wantUnchanged(t, "a signup over the network limit", db, before)
	if got, want := attempts(), 3; got != want {
		t.Fatalf("attempts=%d, want %d", got, want)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE email_key = 'fourth@example.com'`); got != 0 {
		t.Fatal("a signup over the network limit was stored")
	}
}
