package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"

	"admit/store"
)

// devCookie holds the development session's random ID.
const devCookie = "admit_dev"

// DevIdentity is the development identity: a sign-in form that treats any
// address as verified. main refuses to use it on a non-loopback address.
// Its sessions live on the server (docs/ARCHITECTURE.md#sessions): the
// claimed address is sealed in the session's row, the cookie holds only
// the random session ID.
type DevIdentity struct {
	sessions *Sessions
}

var (
	_ Identity   = (*DevIdentity)(nil)
	_ FormSignIn = (*DevIdentity)(nil)
)

// devSession is what a development session keeps, sealed.
type devSession struct {
	Email string `json:"email"`
}

// NewDevIdentity returns the development identity, keeping its sessions in
// db sealed with the 32-byte token key.
func NewDevIdentity(db *store.DB, tokenKey []byte, secureCookie bool) (*DevIdentity, error) {
	s, err := NewSessions(db, tokenKey, devCookie, store.SessionModeDev, secureCookie)
	if err != nil {
		return nil, err
	}
	return &DevIdentity{sessions: s}, nil
}

// DevUserID derives the stable development user ID for an email address.
func DevUserID(email string) string {
	sum := sha256.Sum256([]byte("admit dev user\x00" + email))
	return "user_dev_" + hex.EncodeToString(sum[:12])
}

// Mode implements Identity: ModeDev.
func (d *DevIdentity) Mode() Mode { return ModeDev }

// Authenticate implements Identity: the cookie must name a live session.
func (d *DevIdentity) Authenticate(r *http.Request) (*Principal, error) {
	l, err := d.sessions.load(r)
	if err != nil {
		return nil, err
	}
	var s devSession
	if err := json.Unmarshal(l.data, &s); err != nil || s.Email == "" || DevUserID(s.Email) != l.userID {
		return nil, ErrSignedOut
	}
	p := l.principal()
	p.devEmail = s.Email
	return p, nil
}

// VerifiedEmails implements Identity: the signed-in address, as verified.
func (d *DevIdentity) VerifiedEmails(_ context.Context, p *Principal) ([]string, error) {
	if p == nil || p.devEmail == "" {
		return nil, nil
	}
	return []string{p.devEmail}, nil
}

// SignIn starts a development session for a normalized email address and
// returns its principal.
func (d *DevIdentity) SignIn(w http.ResponseWriter, r *http.Request, email string) (*Principal, error) {
	if _, err := store.NormalizeEmail(email); err != nil {
		return nil, err
	}
	data, err := json.Marshal(devSession{Email: email})
	if err != nil {
		return nil, err
	}
	l, err := d.sessions.start(r.Context(), w, DevUserID(email), data)
	if err != nil {
		return nil, err
	}
	p := l.principal()
	p.devEmail = email
	return p, nil
}

// SignOut implements Identity: the session's row is deleted.
func (d *DevIdentity) SignOut(w http.ResponseWriter, r *http.Request, _ *Principal) (string, error) {
	return "", d.sessions.end(w, r)
}

// SignOutEverywhere implements Identity: every session of the user ends.
func (d *DevIdentity) SignOutEverywhere(w http.ResponseWriter, r *http.Request, p *Principal) error {
	if p == nil {
		return errors.New("sign out everywhere: no principal")
	}
	return d.sessions.endAll(w, r, p.UserID)
}
