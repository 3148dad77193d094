package handlers

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"admit/internal/identity"
	"admit/internal/serverkeys"
	"admit/store"

	"github.com/gorilla/securecookie"
)

// rawSerializer keeps the decrypted plaintext of a cookie.
type rawSerializer struct{ got *[]byte }

func (rawSerializer) Serialize(any) ([]byte, error) { return nil, nil }
func (r rawSerializer) Deserialize(src []byte, _ any) error {
	*r.got = append([]byte(nil), src...)
	return nil
}

func TestStateCookie_IsSignedEncryptedJSONAndCarriesFlashes(t *testing.T) {
	key := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
	keys := serverkeys.Keys{SessionHash: key(1), SessionBlock: key(2), CSRF: key(3), Binding: key(4), Counter: key(5)}
	u, _ := url.Parse("http://127.0.0.1:8080")
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "admit.db"), store.Options{BindingKey: key(4)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dev, err := identity.NewDevIdentity(db, key(6), false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{PublicURL: u, Keys: keys}, nil, dev)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}

	cookie := mustStateCookie(t, s, cookieState{CSRFSecret: "secret", Flash: "Saved."})

	var plain []byte
	raw := securecookie.New(keys.SessionHash, keys.SessionBlock).SetSerializer(rawSerializer{&plain})
	if err := raw.Decode(stateCookie, cookie.Value, new(any)); err != nil {
		t.Fatalf("the cookie does not verify and decrypt with the session keys: %v", err)
	}
	if got, want := strings.TrimSpace(string(plain)), `{"_flash":["Saved."],"csrf":"secret"}`; got != want {
		t.Fatalf("cookie plaintext=%s, want %s", got, want)
	}

	next := httptest.NewRequest(http.MethodGet, "/", nil)
	next.AddCookie(cookie)
	got := s.cookieState(next)
	if got.CSRFSecret != "secret" {
		t.Fatalf("csrf=%q, want secret", got.CSRFSecret)
	}
	if fl := got.takeFlash(); fl != "Saved." {
		t.Fatalf("flash=%q, want Saved.", fl)
	}

	// A cookie written as gorilla/sessions values, before the cookie state was
	// typed, reads into the same fields.
	old := securecookie.New(keys.SessionHash, keys.SessionBlock).SetSerializer(securecookie.JSONEncoder{})
	v, err := old.Encode(stateCookie, map[string]any{"csrf": "s1", "who": "sess_1 ada@example.com",
		"issuedCode": "inv_1 CODE-1", "codeShown": "inv_0", "note": []string{"first", "You are signed out."}, "_flash": []string{"Saved."}})
	if err != nil {
		t.Fatal(err)
	}
	before := httptest.NewRequest(http.MethodGet, "/", nil)
	before.AddCookie(&http.Cookie{Name: stateCookie, Value: v})
	want := cookieState{CSRFSecret: "s1", Who: whoLine{ProviderSession: "sess_1", Address: "ada@example.com"},
		Code: heldCode{InvitationID: "inv_1", Code: "CODE-1"}, CodeShown: "inv_0", Note: "You are signed out.", Flash: "Saved."}
	if got := *s.cookieState(before); got != want {
		t.Fatalf("an older cookie read as %+v, want %+v", got, want)
	}
}

// mustStateCookie is the admit_session cookie s writes for state.
func mustStateCookie(tb testing.TB, s *Server, state cookieState) *http.Cookie {
	tb.Helper()
	cookies, err := s.cookieStateCookies(&requestCookieState{loaded: true, now: state})
	if err != nil {
		tb.Fatalf("save: %v", err)
	}
	for _, c := range cookies {
		if c.Name == stateCookie {
			return c
		}
	}
	tb.Fatal("no state cookie was set")
	return nil
}

// TestKeyRotation_PreviousSessionAndCSRFKeysStillAccepted: a session cookie
// and a CSRF token made before the session and CSRF keys were replaced are
// still accepted while the old keys are listed as the previous ones, and
// refused once they are gone; what the server makes after the rotation is
// signed with the new keys only.
func TestKeyRotation_PreviousSessionAndCSRFKeysStillAccepted(t *testing.T) {
	key := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
	u, _ := url.Parse("http://127.0.0.1:8080")
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "admit.db"), store.Options{BindingKey: key(4)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dev, err := identity.NewDevIdentity(db, key(6), false)
	if err != nil {
		t.Fatal(err)
	}
	server := func(k serverkeys.Keys) *Server {
		t.Helper()
		k.Binding, k.Counter = key(4), key(5)
		s, err := New(Options{PublicURL: u, Keys: k}, nil, dev)
		if err != nil {
			t.Fatalf("new server: %v", err)
		}
		return s
	}
	before := server(serverkeys.Keys{SessionHash: key(1), SessionBlock: key(2), CSRF: key(3)})
	during := server(serverkeys.Keys{SessionHash: key(11), SessionBlock: key(12), CSRF: key(13),
		PreviousSessionHash: key(1), PreviousSessionBlock: key(2), PreviousCSRF: key(3)})
	after := server(serverkeys.Keys{SessionHash: key(11), SessionBlock: key(12), CSRF: key(13)})

	// A state cookie and a form's token from before the rotation.
	p := &identity.Principal{UserID: "user_1", SessionID: "sess_1"}
	saveState := func(s *Server, csrf string) *http.Cookie {
		t.Helper()
		return mustStateCookie(t, s, cookieState{CSRFSecret: csrf})
	}
	oldCookie := saveState(before, "secret")
	oldToken := before.csrf.Token("secret", p.SessionID)
	post := func(cookie *http.Cookie, token string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.AddCookie(cookie)
		r.Header.Set("X-CSRF-Token", token)
		return r
	}

	for _, tc := range []struct {
		name string
		s    *Server
		want bool
	}{
		{"before the rotation", before, true},
		{"during the rotation window", during, true},
		{"after the previous keys are removed", after, false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.AddCookie(oldCookie)
		if got := tc.s.cookieState(r).CSRFSecret == "secret"; got != tc.want {
			t.Errorf("%s: the old session cookie read=%v, want %v", tc.name, got, tc.want)
		}
		if got := tc.s.checkCSRF(post(oldCookie, oldToken), p) == nil; got != tc.want {
			t.Errorf("%s: the old CSRF token accepted=%v, want %v", tc.name, got, tc.want)
		}
	}

	// What the server makes during the window needs no previous key.
	newCookie := saveState(during, "fresh")
	newToken := during.csrf.Token("fresh", p.SessionID)
	if err := after.checkCSRF(post(newCookie, newToken), p); err != nil {
		t.Errorf("a cookie and token made during the window are refused after it: %v", err)
	}
	if err := before.checkCSRF(post(newCookie, newToken), p); err == nil {
		t.Error("a cookie and token made during the window verify with the old keys: they were signed with the previous ones")
	}
	// A CSRF token from before, on a cookie it was not minted for, is
	// refused during the window too.
	if err := during.checkCSRF(post(newCookie, oldToken), p); err == nil {
		t.Error("an old token was accepted with another session's cookie")
	}
}
