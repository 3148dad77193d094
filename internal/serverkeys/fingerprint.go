package serverkeys

import (
	"crypto/hmac"
	"crypto/sha256"
)

// Fingerprint is a digest of the keys every server on one PostgreSQL
// database must share and that are never rotated — binding, counter and
// session_tokens — keyed by the binding key, so that no key can be read
// back from it. The session and CSRF keys, which a rotation replaces
// (docs/DEPLOY.md, "Rotating a key"), are left out: a rotation keeps it.
func (k Keys) Fingerprint() []byte {
	mac := hmac.New(sha256.New, k.Binding)
	mac.Write([]byte("admit server keys fingerprint v1\x00"))
	for _, key := range [][]byte{k.Counter, k.SessionTokens} {
		sum := sha256.Sum256(key)
		mac.Write(sum[:])
	}
	return mac.Sum(nil)
}
