package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"admit/store"

	"github.com/gorilla/securecookie"
)

// devCookie holds the development identity.
const devCookie = "admit_dev"

// DevIdentity is the development identity: a sign-in form that treats any
// address as verified. main refuses to use it on a non-loopback address.
type DevIdentity struct {
	codec  *securecookie.SecureCookie
	secure bool
}

var (
	_ Identity   = (*DevIdentity)(nil)
	_ FormSignIn = (*DevIdentity)(nil)
)

type devSession struct {
	Email     string
	SessionID string
}

// NewDevIdentity returns the development identity, signing and encrypting
// its cookie with the given 32-byte keys.
func NewDevIdentity(hashKey, blockKey []byte, secureCookie bool) *DevIdentity {
	c := securecookie.New(hashKey, blockKey)
	c.MaxAge(int((7 * 24 * time.Hour).Seconds()))
	// JSON, not securecookie's default gob: a fresh gob decoder compiles the
	// type on every request, which was a tenth of a private read's CPU
	// (docs/PERFORMANCE.md#cookies-in-json).
	c.SetSerializer(securecookie.JSONEncoder{})
	return &DevIdentity{codec: c, secure: secureCookie}
}

// DevUserID derives the stable development user ID for an email address.
func DevUserID(email string) string {
	sum := sha256.Sum256([]byte("admit dev user\x00" + email))
	return "user_dev_" + hex.EncodeToString(sum[:12])
}

// Mode implements Identity: ModeDev.
func (d *DevIdentity) Mode() Mode { return ModeDev }

// Authenticate implements Identity from the development cookie.
func (d *DevIdentity) Authenticate(r *http.Request) (*Principal, error) {
	c, err := r.Cookie(devCookie)
	if err != nil {
		return nil, ErrSignedOut
	}
	var s devSession
	if err := d.codec.Decode(devCookie, c.Value, &s); err != nil || s.Email == "" || s.SessionID == "" {
		return nil, ErrSignedOut
	}
	return &Principal{UserID: DevUserID(s.Email), SessionID: s.SessionID, devEmail: s.Email}, nil
}

// VerifiedEmails implements Identity: the signed-in address, as verified.
func (d *DevIdentity) VerifiedEmails(_ context.Context, p *Principal) ([]string, error) {
	if p == nil || p.devEmail == "" {
		return nil, nil
	}
	return []string{p.devEmail}, nil
}

// SignIn sets the development cookie for a normalized email address and
// returns the new session's principal.
func (d *DevIdentity) SignIn(w http.ResponseWriter, email string) (*Principal, error) {
	if _, err := store.NormalizeEmail(email); err != nil {
		return nil, err
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	sess := devSession{Email: email, SessionID: "sess_dev_" + hex.EncodeToString(b)}
	v, err := d.codec.Encode(devCookie, sess)
	if err != nil {
		return nil, err
	}
	http.SetCookie(w, &http.Cookie{Name: devCookie, Value: v, Path: "/", HttpOnly: true, Secure: d.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int((7 * 24 * time.Hour).Seconds())})
	return &Principal{UserID: DevUserID(email), SessionID: sess.SessionID, devEmail: email}, nil
}

// SignOut clears the development cookie.
func (d *DevIdentity) SignOut(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: devCookie, Value: "", Path: "/", HttpOnly: true, Secure: d.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
}
