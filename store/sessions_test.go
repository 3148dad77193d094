package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"testing"
	"time"
)

func sessionDigest(s string) []byte {
	d := sha256.Sum256([]byte(s))
	return d[:]
}

func TestSessions_ExpireAndAreSwept(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	ctx := context.Background()
	sealed := bytes.Repeat([]byte{7}, 40)
	if _, err := db.CreateSession(ctx, sessionDigest("a"), "user_a", SessionModeDev, sealed, time.Hour); err != nil {
		t.Fatalf("create: %v", err)
	}
	if s, err := db.SessionByDigest(ctx, sessionDigest("a")); err != nil || s.UserID != "user_a" || !bytes.Equal(s.Sealed, sealed) {
		t.Fatalf("read=%+v, %v", s, err)
	}
	clock.Set(testEpoch.Add(time.Hour - time.Millisecond))
	if _, err := db.SessionByDigest(ctx, sessionDigest("a")); err != nil {
		t.Fatalf("a session a moment before its expiry: %v", err)
	}
	clock.Set(testEpoch.Add(time.Hour))
	if _, err := db.SessionByDigest(ctx, sessionDigest("a")); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("an expired session: err=%v, want not found", err)
	}
	if err := db.TouchSession(ctx, sessionDigest("a")); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("touching an expired session: err=%v, want not found", err)
	}
	if err := db.EndProviderSession(ctx, sessionDigest("sid"), testEpoch.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Sweep(ctx); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if n := mustCount(t, db, `SELECT count(*) FROM sessions`); n != 0 {
		t.Fatalf("%d sessions after the sweep, want the expired one deleted", n)
	}
	if ended, _ := db.ProviderSessionEnded(ctx, sessionDigest("sid")); !ended {
		t.Fatal("an ended provider session was swept before its expiry")
	}
	clock.Set(testEpoch.Add(2 * time.Hour))
	if _, err := db.Sweep(ctx); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if n := mustCount(t, db, `SELECT count(*) FROM ended_sessions`); n != 0 {
		t.Fatalf("%d ended sessions after their expiry and a sweep, want 0", n)
	}
}

func TestSessions_DeleteUserSessionsEndsOnlyTheirs(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	sealed := bytes.Repeat([]byte{7}, 40)
	for _, c := range []struct{ id, user string }{{"a1", "user_a"}, {"a2", "user_a"}, {"b1", "user_b"}} {
		if _, err := db.CreateSession(ctx, sessionDigest(c.id), c.user, SessionModeOIDC, sealed, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.DeleteUserSessions(ctx, "user_a")
	if err != nil || n != 2 {
		t.Fatalf("deleted %d, %v; want 2", n, err)
	}
	if _, err := db.SessionByDigest(ctx, sessionDigest("b1")); err != nil {
		t.Fatalf("another user's session ended too: %v", err)
	}
	if err := db.UpdateSessionSealed(ctx, sessionDigest("a1"), sealed); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("a refresh revived an ended session: err=%v", err)
	}
}
