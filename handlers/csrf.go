package handlers

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"

	"admit/internal/identity"

	"github.com/gorilla/sessions"
)

// sessionCookie is the name of admit's own signed and encrypted cookie. It
// holds the CSRF secret; the identity lives in the provider's session.
const sessionCookie = "admit_session"

func (s *Server) session(r *http.Request) *sessions.Session {
	sess, err := s.sessions.Get(r, sessionCookie)
	if err != nil {
		// A cookie that fails to decode (old keys, tampering) starts a new session.
		sess, _ = s.sessions.New(r, sessionCookie)
	}
	return sess
}

// csrfToken returns the CSRF token bound to this cookie session and the
// principal's provider session, creating the cookie secret if needed.
func (s *Server) csrfToken(w http.ResponseWriter, r *http.Request, p *identity.Principal) string {
	if p == nil {
		return ""
	}
	sess := s.session(r)
	secret, _ := sess.Values["csrf"].(string)
	if secret == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			panic(err)
		}
		secret = base64.RawURLEncoding.EncodeToString(b)
		sess.Values["csrf"] = secret
		if err := sess.Save(r, w); err != nil {
			s.log.Error("save session", "err", err)
		}
	}
	return s.mintCSRF(secret, p.SessionID)
}

func (s *Server) mintCSRF(secret, sessionID string) string {
	return mintCSRFWith(s.opts.Keys.CSRF, secret, sessionID)
}

// mintCSRFWith is the CSRF token for a cookie secret and a provider
// session under key.
func mintCSRFWith(key []byte, secret, sessionID string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("admit csrf v1\x00"))
	m.Write([]byte(secret))
	m.Write([]byte{0})
	m.Write([]byte(sessionID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF verifies the token from the X-CSRF-Token header or the csrf form
// field against this cookie session and provider session. A token minted
// for another session fails.
func (s *Server) checkCSRF(r *http.Request, p *identity.Principal) error {
	got := r.Header.Get("X-CSRF-Token")
	if got == "" && mediaType(r) == "application/x-www-form-urlencoded" {
		if err := parseForm(r); err != nil {
			return err
		}
		v, err := formValue(r, "csrf")
		if err != nil {
			return err
		}
		got = v
	}
	sess, err := s.sessions.Get(r, sessionCookie)
	if err != nil || got == "" || p == nil {
		return errCSRF
	}
	secret, _ := sess.Values["csrf"].(string)
	if secret == "" {
		return errCSRF
	}
	if hmac.Equal([]byte(got), []byte(s.mintCSRF(secret, p.SessionID))) {
		return nil
	}
	// rule: a token minted with the previous CSRF key is still accepted
	// during a rotation (docs/DEPLOY.md, "Rotating a key").
	if prev := s.opts.Keys.PreviousCSRF; prev != nil &&
		hmac.Equal([]byte(got), []byte(mintCSRFWith(prev, secret, p.SessionID))) {
		return nil
	}
	return errCSRF
}
