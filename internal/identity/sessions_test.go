package identity

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"admit/internal/testutil"
	"admit/store"
)

// mustIdentityDB opens a fresh database in a temp file, reading time from
// now (nil: time.Now), closed when the test ends.
func mustIdentityDB(tb testing.TB, now func() time.Time) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "admit.db"),
		store.Options{BindingKey: bytes.Repeat([]byte{3}, 32), Now: now})
	if err != nil {
		tb.Fatalf("open db: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

var testTokenKey = bytes.Repeat([]byte{9}, 32)

func mustDevIdentity(tb testing.TB, db *store.DB) *DevIdentity {
	tb.Helper()
	d, err := NewDevIdentity(db, testTokenKey, false)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// devSignIn signs in and returns the cookie a browser would now hold.
func devSignIn(tb testing.TB, d *DevIdentity, email string) *http.Cookie {
	tb.Helper()
	w := httptest.NewRecorder()
	if _, err := d.SignIn(w, httptest.NewRequest(http.MethodPost, "/dev/sign-in", nil), email); err != nil {
		tb.Fatal(err)
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != devCookie {
		tb.Fatalf("cookies=%v, want one %s", cookies, devCookie)
	}
	return cookies[0]
}

func requestWith(c *http.Cookie) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/me", nil)
	if c != nil {
		r.AddCookie(c)
	}
	return r
}

func TestDevSession_CookieHoldsOnlyARandomIDAndTheRowHoldsTheAddressSealed(t *testing.T) {
	db := mustIdentityDB(t, nil)
	d := mustDevIdentity(t, db)
	c := devSignIn(t, d, "reader@example.test")
	if bytes.Contains([]byte(c.Value), []byte("reader")) || len(c.Value) != 43 {
		t.Fatalf("cookie value %q is not a bare 32-byte random ID", c.Value)
	}
	p, err := d.Authenticate(requestWith(c))
	if err != nil || p.UserID != DevUserID("reader@example.test") {
		t.Fatalf("authenticate=%+v, %v", p, err)
	}
	var sealed []byte
	if err := db.View(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT sealed FROM sessions`).Scan(&sealed)
	}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("reader@example.test")) {
		t.Fatal("the session row holds the address in the clear")
	}
	// Another key cannot open it: the session reads as signed out.
	other, err := NewDevIdentity(db, bytes.Repeat([]byte{1}, 32), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Authenticate(requestWith(c)); !errors.Is(err, ErrSignedOut) {
		t.Fatalf("a session sealed under another key: err=%v, want ErrSignedOut", err)
	}
}

func TestDevSession_CopiedCookieIsRefusedAfterSignOut(t *testing.T) {
	d := mustDevIdentity(t, mustIdentityDB(t, nil))
	c := devSignIn(t, d, "reader@example.test")
	copied := *c
	p, err := d.Authenticate(requestWith(c))
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	if _, err := d.SignOut(w, requestWith(c), p); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Authenticate(requestWith(&copied)); !errors.Is(err, ErrSignedOut) {
		t.Fatalf("copied cookie after sign-out: err=%v, want ErrSignedOut", err)
	}
}

func TestDevSession_ExpiresAfterSessionTTL(t *testing.T) {
	clock := testutil.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	d := mustDevIdentity(t, mustIdentityDB(t, clock.Now))
	c := devSignIn(t, d, "reader@example.test")
	clock.Add(SessionTTL - time.Second)
	if _, err := d.Authenticate(requestWith(c)); err != nil {
		t.Fatalf("a second before expiry: %v", err)
	}
	clock.Add(time.Second)
	if _, err := d.Authenticate(requestWith(c)); !errors.Is(err, ErrSignedOut) {
		t.Fatalf("at expiry: err=%v, want ErrSignedOut", err)
	}
}

func TestDevSession_SignOutEverywhereEndsEverySessionOfTheUserOnly(t *testing.T) {
	d := mustDevIdentity(t, mustIdentityDB(t, nil))
	a1 := devSignIn(t, d, "a@example.test")
	a2 := devSignIn(t, d, "a@example.test")
	b := devSignIn(t, d, "b@example.test")
	p, err := d.Authenticate(requestWith(a1))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SignOutEverywhere(httptest.NewRecorder(), requestWith(a1), p); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*http.Cookie{a1, a2} {
		if _, err := d.Authenticate(requestWith(c)); !errors.Is(err, ErrSignedOut) {
			t.Fatalf("a session of the user survived sign-out everywhere: err=%v", err)
		}
	}
	if _, err := d.Authenticate(requestWith(b)); err != nil {
		t.Fatalf("another user's session ended: %v", err)
	}
}

func TestSessions_MalformedOrMissingCookieIsSignedOut(t *testing.T) {
	d := mustDevIdentity(t, mustIdentityDB(t, nil))
	for _, v := range []string{"", "x", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"} {
		if _, err := d.Authenticate(requestWith(&http.Cookie{Name: devCookie, Value: v})); !errors.Is(err, ErrSignedOut) {
			t.Fatalf("cookie %q: err=%v, want ErrSignedOut", v, err)
		}
	}
	if _, err := d.Authenticate(requestWith(nil)); !errors.Is(err, ErrSignedOut) {
		t.Fatalf("no cookie: err=%v", err)
	}
}
