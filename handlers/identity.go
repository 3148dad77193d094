package handlers

import (
	"context"
	"errors"
	"net/http"
)

// Principal is an authenticated user for one request.
type Principal struct {
	// UserID is the identity provider's stable user ID (a Clerk user ID, or a
	// derived ID in development). It is never logged or put in a URL.
	UserID string
	// SessionID is the provider session the request belongs to; the CSRF
	// token is bound to it.
	SessionID string

	// devEmail is the address a development sign-in claimed.
	devEmail string
}

// ErrSignedOut means the request carries no valid session: 401, or a
// redirect to the sign-in page for an HTML request.
var ErrSignedOut = errors.New("signed out")

// ErrIdentityUnavailable means the identity provider could not be reached;
// routes that need an email fail closed with 503.
var ErrIdentityUnavailable = errors.New("identity provider unavailable")

// Identity authenticates requests and looks up verified email addresses.
// There are two implementations: Clerk and development.
type Identity interface {
	// Authenticate returns the request's principal, or ErrSignedOut for a
	// missing, malformed, expired or otherwise invalid session. It never
	// falls back to an unauthenticated pass-through.
	Authenticate(r *http.Request) (*Principal, error)
	// VerifiedEmails returns the user's addresses whose verification status
	// is currently "verified", fetched fresh on every call. Any failure to
	// reach the provider is ErrIdentityUnavailable.
	VerifiedEmails(ctx context.Context, p *Principal) ([]string, error)
	// Mode is "clerk" or "dev".
	Mode() string
}
