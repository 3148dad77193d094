package handlers

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"admit/internal/identity"
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

func TestSessionCookie_IsSignedEncryptedJSONAndCarriesFlashes(t *testing.T) {
	key := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
	keys := Keys{SessionHash: key(1), SessionBlock: key(2), CSRF: key(3), Binding: key(4), Counter: key(5)}
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

	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	sess := s.session(r)
	sess.Values["csrf"] = "secret"
	sess.AddFlash("Saved.")
	if err := sess.Save(r, w); err != nil {
		t.Fatalf("save: %v", err)
	}
	var cookie *http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == sessionCookie {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatal("no session cookie was set")
	}

	var plain []byte
	raw := securecookie.New(keys.SessionHash, keys.SessionBlock).SetSerializer(rawSerializer{&plain})
	if err := raw.Decode(sessionCookie, cookie.Value, new(any)); err != nil {
		t.Fatalf("the cookie does not verify and decrypt with the session keys: %v", err)
	}
	if got, want := string(plain), `{"_flash":["Saved."],"csrf":"secret"}`; got != want {
		t.Fatalf("cookie plaintext=%s, want %s", got, want)
	}

	next := httptest.NewRequest(http.MethodGet, "/", nil)
	next.AddCookie(cookie)
	got := s.session(next)
	if v, _ := got.Values["csrf"].(string); v != "secret" {
		t.Fatalf("csrf=%q, want secret", v)
	}
	if fl := got.Flashes(); len(fl) != 1 || fl[0] != "Saved." {
		t.Fatalf("flashes=%v, want [Saved.]", fl)
	}
}
