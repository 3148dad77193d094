// Package identity authenticates admit's requests and looks up a signed-in
// user's verified email addresses (docs/ARCHITECTURE.md#identity). The HTTP
// layer works with the Identity interface and the types around it; main
// picks the implementation: Clerk, OpenID Connect or the development sign-in.
// It also holds admit's server-side sessions and the encoding of its session
// cookie. It knows nothing of routes or of the store's operations.
package identity

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"
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
	// digest is the server-side session's ID digest (development and
	// OpenID Connect modes).
	digest []byte
	// expires is when the provider token behind this principal stops
	// verifying (Clerk mode).
	expires time.Time
	// live is the server-side session this principal was read from, with
	// its provider data (OpenID Connect mode).
	live *liveSession
}

// ErrSignedOut means the request carries no valid session: 401, or a
// redirect to the sign-in page for an HTML request.
var ErrSignedOut = errors.New("signed out")

// ErrIdentityUnavailable means the identity provider could not be reached;
// routes that need an email fail closed with 503.
var ErrIdentityUnavailable = errors.New("identity provider unavailable")

// Identity authenticates requests and looks up verified email addresses.
// There are three implementations: Clerk, OpenID Connect and development.
type Identity interface {
	// Authenticate returns the request's principal, or ErrSignedOut for a
	// missing, malformed, expired or otherwise invalid session. It never
	// falls back to an unauthenticated pass-through.
	Authenticate(r *http.Request) (*Principal, error)
	// VerifiedEmails returns the user's addresses whose verification status
	// is currently "verified", fetched fresh on every call. Any failure to
	// reach the provider is ErrIdentityUnavailable.
	VerifiedEmails(ctx context.Context, p *Principal) ([]string, error)
	// Mode says which provider this is.
	Mode() Mode
	// SignOut ends the request's session on the server, so a copy of its
	// cookie or token is refused from now on, and clears the cookies it
	// set. It returns where to send the browser next to sign out at the
	// provider too, or "" to stay on this site.
	SignOut(w http.ResponseWriter, r *http.Request, p *Principal) (string, error)
	// SignOutEverywhere ends every session of p's user, this one included
	// (docs/ARCHITECTURE.md#sessions).
	SignOutEverywhere(w http.ResponseWriter, r *http.Request, p *Principal) error
}

// Address is one of a user's email addresses as the provider reports it
// now, verified or not.
type Address struct {
	Email    string
	Verified bool
}

// AddressLister is an Identity that can also report the addresses its
// provider has not verified, so that a person can be told which address
// they are signed in with and that it does not count yet
// (docs/ARCHITECTURE.md#identity). Only verified addresses ever match an
// entry or an invitation. The development sign-in treats every address as
// verified and does not implement it.
type AddressLister interface {
	// Addresses returns the user's addresses, fetched fresh, each with
	// whether it counts as verified (the same rule as VerifiedEmails).
	// Failures are those of VerifiedEmails.
	Addresses(ctx context.Context, p *Principal) ([]Address, error)
}

// verifiedOnly keeps the verified addresses of a list.
func verifiedOnly(all []Address) []string {
	emails := []string{}
	for _, a := range all {
		if a.Verified {
			emails = append(emails, a.Email)
		}
	}
	return emails
}

// Mode is an identity provider.
type Mode int

const (
	// ModeClerk verifies Clerk session tokens and asks Clerk's Backend API
	// for verified addresses; pages load ClerkJS.
	ModeClerk Mode = iota + 1
	// ModeDev is the development sign-in form, which treats any address as
	// verified; pages show a development banner.
	ModeDev
	// ModeOIDC signs in through an OpenID Connect provider and reads
	// verified addresses from its userinfo endpoint.
	ModeOIDC
)

// String names the mode, for messages.
func (m Mode) String() string {
	switch m {
	case ModeClerk:
		return "clerk"
	case ModeDev:
		return "dev"
	case ModeOIDC:
		return "oidc"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// FormSignIn is an Identity whose sign-in is admit's own form, keeping the
// session in admit's own cookie (the development identity). Clerk signs in
// through ClerkJS and does not implement it.
type FormSignIn interface {
	// SignIn starts a server-side session for a normalized email address
	// and returns its principal.
	SignIn(w http.ResponseWriter, r *http.Request, email string) (*Principal, error)
}
