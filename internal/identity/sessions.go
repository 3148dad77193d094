package identity

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"

	"admit/store"
)

// SessionTTL is how long a server-side session lives from sign-in
// (docs/ARCHITECTURE.md#sessions); the privacy page states it.
const SessionTTL = 7 * 24 * time.Hour

// sessionTouchEvery bounds how often a session's last use is written: a
// write per request would cost every signed-in page a database write.
const sessionTouchEvery = 10 * time.Minute

// sessionIDBytes is the size of a session ID: 256 random bits.
const sessionIDBytes = 32

// Sessions keeps admit's own sign-in sessions on the server: the cookie
// carries a random session ID, the database its SHA-256 digest, the user
// and the provider's data sealed with AES-GCM under a server key. Ending
// the row ends every copy of the cookie.
type Sessions struct {
	db     *store.DB
	aead   cipher.AEAD
	cookie string
	secure bool
	mode   string
}

// NewSessions returns the server-side sessions of one identity mode
// (store.SessionModeDev or store.SessionModeOIDC), held in the named
// cookie and sealed with the 32-byte key.
func NewSessions(db *store.DB, key []byte, cookie, mode string, secureCookie bool) (*Sessions, error) {
	if db == nil {
		return nil, errors.New("sessions: a database is required")
	}
	if len(key) != 32 {
		return nil, errors.New("sessions: the token key must be 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sessions{db: db, aead: aead, cookie: cookie, secure: secureCookie, mode: mode}, nil
}

// liveSession is a session read back for one request, its provider data
// opened.
type liveSession struct {
	digest []byte
	userID string
	data   []byte
}

// principal is the Principal of a session. The CSRF token is bound to an
// ID derived from the digest, never the cookie's secret ID itself.
func (l *liveSession) principal() *Principal {
	return &Principal{UserID: l.userID, SessionID: "s_" + base64.RawURLEncoding.EncodeToString(l.digest[:18]), digest: l.digest}
}

// aad binds a sealed blob to its row: moved to another session or user it
// does not open.
func (s *Sessions) aad(digest []byte, userID string) []byte {
	return fmt.Appendf(nil, "admit session v1\x00%s\x00%x\x00%s", s.mode, digest, userID)
}

func (s *Sessions) seal(digest []byte, userID string, data []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, data, s.aad(digest, userID)), nil
}

func (s *Sessions) open(digest []byte, userID string, sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("sealed session data too short")
	}
	return s.aead.Open(nil, sealed[:n], sealed[n:], s.aad(digest, userID))
}

// start creates a session for userID holding data, and sets its cookie.
func (s *Sessions) start(ctx context.Context, w http.ResponseWriter, userID string, data []byte) (*liveSession, error) {
	id := make([]byte, sessionIDBytes)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(id)
	digest := sum[:]
	sealed, err := s.seal(digest, userID, data)
	if err != nil {
		return nil, err
	}
	row, err := s.db.CreateSession(ctx, digest, userID, s.mode, sealed, SessionTTL)
	if err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: base64.RawURLEncoding.EncodeToString(id), Path: "/",
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode, Expires: row.ExpiresAt,
		MaxAge: int(SessionTTL.Seconds())})
	return &liveSession{digest: digest, userID: userID, data: data}, nil
}

// digestOf returns the digest of the request's session ID, or nil when it
// carries none (or more than one, or a malformed one).
func (s *Sessions) digestOf(r *http.Request) []byte {
	cookies := r.CookiesNamed(s.cookie)
	if len(cookies) != 1 {
		return nil
	}
	id, err := base64.RawURLEncoding.Strict().DecodeString(cookies[0].Value)
	if err != nil || len(id) != sessionIDBytes {
		return nil
	}
	sum := sha256.Sum256(id)
	return sum[:]
}

// load returns the request's live session: ErrSignedOut when the cookie
// is missing or names no live session of this mode.
func (s *Sessions) load(r *http.Request) (*liveSession, error) {
	digest := s.digestOf(r)
	if digest == nil {
		return nil, ErrSignedOut
	}
	row, err := s.db.SessionByDigest(r.Context(), digest)
	if store.ErrorCode(err) == store.ENOTFOUND {
		return nil, ErrSignedOut
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read session", ErrIdentityUnavailable)
	}
	if row.Mode != s.mode {
		return nil, ErrSignedOut
	}
	data, err := s.open(digest, row.UserID, row.Sealed)
	if err != nil {
		// Sealed under another key (the key was rotated): signed out.
		return nil, ErrSignedOut
	}
	l := &liveSession{digest: digest, userID: row.UserID, data: data}
	if s.db.Now().Sub(row.LastSeenAt) >= sessionTouchEvery {
		// A failed touch only leaves last use older than it was.
		_ = s.db.TouchSession(r.Context(), digest)
	}
	return l, nil
}

// update replaces a live session's provider data (refreshed tokens).
func (s *Sessions) update(ctx context.Context, l *liveSession, data []byte) error {
	sealed, err := s.seal(l.digest, l.userID, data)
	if err != nil {
		return err
	}
	if err := s.db.UpdateSessionSealed(ctx, l.digest, sealed); err != nil {
		if store.ErrorCode(err) == store.ENOTFOUND {
			return ErrSignedOut
		}
		return err
	}
	l.data = data
	return nil
}

// end deletes the request's session, if any, and clears its cookie.
func (s *Sessions) end(w http.ResponseWriter, r *http.Request) error {
	s.clearCookie(w)
	if digest := s.digestOf(r); digest != nil {
		return s.db.DeleteSession(r.Context(), digest)
	}
	return nil
}

// endDigest deletes one session by its digest.
func (s *Sessions) endDigest(ctx context.Context, digest []byte) error {
	return s.db.DeleteSession(ctx, digest)
}

// endAll deletes every session of userID and clears this request's cookie.
func (s *Sessions) endAll(w http.ResponseWriter, r *http.Request, userID string) error {
	s.clearCookie(w)
	_, err := s.db.DeleteUserSessions(r.Context(), userID)
	return err
}

func (s *Sessions) clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: "", Path: "/", HttpOnly: true, Secure: s.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
}
