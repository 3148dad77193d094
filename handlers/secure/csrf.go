package secure

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
)

// CSRF mints and verifies the tokens a signed-in write must carry. A
// token is bound to one browser, by the random secret its cookie state
// holds, and to one sign-in, by the provider session's ID: a token taken
// from another browser, or from an earlier sign-in of the same one, is
// refused.
type CSRF struct {
	// Key signs every token minted now.
	Key []byte
	// Previous, when set during a key rotation, still verifies the tokens
	// minted with the key it replaced (docs/DEPLOY.md, "Rotating a key").
	Previous []byte
}

// Token is the token for a browser's secret and a provider session.
func (c CSRF) Token(secret, sessionID string) string { return csrfMAC(c.Key, secret, sessionID) }

// Verify reports whether token was minted for this browser's secret and
// this provider session, with Key or, during a rotation, Previous. An
// empty token or secret never verifies.
func (c CSRF) Verify(token, secret, sessionID string) bool {
	if token == "" || secret == "" {
		return false
	}
	if hmac.Equal([]byte(token), []byte(csrfMAC(c.Key, secret, sessionID))) {
		return true
	}
	// rule: a token minted with the previous CSRF key is still accepted
	// during a rotation (docs/DEPLOY.md, "Rotating a key").
	return c.Previous != nil && hmac.Equal([]byte(token), []byte(csrfMAC(c.Previous, secret, sessionID)))
}

// csrfMAC is the HMAC-SHA256 under key of a versioned label, the secret
// and the session ID, a zero byte between each.
func csrfMAC(key []byte, secret, sessionID string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("admit csrf v1\x00"))
	m.Write([]byte(secret))
	m.Write([]byte{0})
	m.Write([]byte(sessionID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
