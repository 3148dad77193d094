package handlers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"

	"admit/internal/identity"
)

// csrfToken returns the CSRF token bound to this browser's session and the
// principal's provider session, making the session's secret if needed.
func (s *Server) csrfToken(r *http.Request, p *identity.Principal) string {
	if p == nil {
		return ""
	}
	return s.mintCSRF(s.cookieState(r).csrfSecret(), p.SessionID)
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
	if got == "" || p == nil {
		return errCSRF
	}
	secret := s.cookieState(r).CSRFSecret
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
