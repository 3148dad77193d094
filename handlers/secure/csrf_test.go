package secure

import (
	"bytes"
	"testing"
)

// TestCSRF_TokenVerifiesOnlyForItsSecretSessionAndKey: a token verifies
// for the browser secret and provider session it was minted for, under the
// key that minted it or, during a rotation, as the previous key; any other
// secret, session or key, or an empty token or secret, is refused.
func TestCSRF_TokenVerifiesOnlyForItsSecretSessionAndKey(t *testing.T) {
	key := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
	old := CSRF{Key: key(1)}
	during := CSRF{Key: key(2), Previous: key(1)}
	after := CSRF{Key: key(2)}

	token := old.Token("secret", "sess_1")
	if token == "" || token != old.Token("secret", "sess_1") {
		t.Fatalf("Token is not a fixed function of its inputs: %q", token)
	}
	for _, tc := range []struct {
		name                   string
		c                      CSRF
		token, secret, session string
		want                   bool
	}{
		{"its own secret, session and key", old, token, "secret", "sess_1", true},
		{"another browser's secret", old, token, "other", "sess_1", false},
		{"another sign-in's session", old, token, "secret", "sess_2", false},
		{"the secret and session run together", old, old.Token("secre", "tsess_1"), "secret", "sess_1", false},
		{"an empty token", old, "", "secret", "sess_1", false},
		{"an empty secret", old, old.Token("", "sess_1"), "", "sess_1", false},
		{"the previous key during a rotation", during, token, "secret", "sess_1", true},
		{"the previous key once it is gone", after, token, "secret", "sess_1", false},
		{"the new key during a rotation", during, during.Token("secret", "sess_1"), "secret", "sess_1", true},
		{"the new key after the rotation", after, during.Token("secret", "sess_1"), "secret", "sess_1", true},
		{"the new key before the rotation", old, during.Token("secret", "sess_1"), "secret", "sess_1", false},
		{"the previous key's token for another session", during, old.Token("secret", "sess_2"), "secret", "sess_1", false},
	} {
		if got := tc.c.Verify(tc.token, tc.secret, tc.session); got != tc.want {
			t.Errorf("%s: Verify=%t, want %t", tc.name, got, tc.want)
		}
	}
	if during.Token("secret", "sess_1") == token {
		t.Error("a token minted during the rotation is the previous key's: new tokens must use the new key")
	}
}
