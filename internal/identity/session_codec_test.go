package identity

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/gorilla/securecookie"
)

func TestSessionSerializer_RoundTripsTheCSRFSecretAndFlashes(t *testing.T) {
	in := map[any]any{"csrf": "s3cret", "_flash": []any{"Program created.", "Saved."}}
	b, err := SessionSerializer{}.Serialize(in)
	if err != nil {
		t.Fatal(err)
	}
	out := map[any]any{}
	if err := (SessionSerializer{}).Deserialize(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip gave %#v, want %#v", out, in)
	}
	if _, err := (SessionSerializer{}).Serialize(map[any]any{1: "x"}); err == nil {
		t.Fatal("a non-string key was encoded, want an error")
	}
	if err := (SessionSerializer{}).Deserialize([]byte(`{"csrf":`), &out); err == nil {
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

func TestDevIdentity_CookieIsSignedEncryptedJSON(t *testing.T) {
	hash, block := bytes.Repeat([]byte{8}, 32), bytes.Repeat([]byte{9}, 32)
	d := NewDevIdentity(hash, block, false)
	w := httptest.NewRecorder()
	if _, err := d.SignIn(w, "reader@example.test"); err != nil {
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
