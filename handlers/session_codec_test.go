package handlers

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"testing"

	"github.com/gorilla/securecookie"
)

func TestSessionSerializer_RoundTripsTheCSRFSecretAndFlashes(t *testing.T) {
	in := map[any]any{"csrf": "s3cret", "_flash": []any{"Program created.", "Saved."}}
	b, err := sessionSerializer{}.Serialize(in)
	if err != nil {
		t.Fatal(err)
	}
	out := map[any]any{}
	if err := (sessionSerializer{}).Deserialize(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip gave %#v, want %#v", out, in)
	}
	if _, err := (sessionSerializer{}).Serialize(map[any]any{1: "x"}); err == nil {
		t.Fatal("a non-string key was encoded, want an error")
	}
	if err := (sessionSerializer{}).Deserialize([]byte(`{"csrf":`), &out); err == nil {
		t.Fatal("a truncated cookie decoded, want an error")
	}
}

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
	s, err := New(Options{PublicURL: u, Keys: keys}, nil, NewDevIdentity(key(6), key(7), false))
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

func TestDevIdentity_CookieIsSignedEncryptedJSON(t *testing.T) {
	hash, block := bytes.Repeat([]byte{8}, 32), bytes.Repeat([]byte{9}, 32)
	d := NewDevIdentity(hash, block, false)
	w := httptest.NewRecorder()
	if err := d.SignIn(w, "reader@example.test"); err != nil {
		t.Fatal(err)
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != devCookie {
		t.Fatalf("cookies=%v, want one %s", cookies, devCookie)
	}
	var plain []byte
	raw := securecookie.New(hash, block).SetSerializer(rawSerializer{&plain})
	if err := raw.Decode(devCookie, cookies[0].Value, new(any)); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if !bytes.HasPrefix(plain, []byte(`{"Email":"reader@example.test","SessionID":"sess_dev_`)) {
		t.Fatalf("cookie plaintext=%s, want the JSON session", plain)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.AddCookie(cookies[0])
	p, err := d.Authenticate(r)
	if err != nil || p.UserID != DevUserID("reader@example.test") {
		t.Fatalf("authenticate=%+v, %v", p, err)
	}
}
