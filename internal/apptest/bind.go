// Package apptest is the test harness that starts admit on a loopback port
// over a fresh SQLite file, with its fake identity providers (Clerk's
// Backend API, an OpenID Provider, or the development sign-in), and gives
// browser-like clients and ways to seed state through the store's own
// operations.
//
// It does not import the handlers package, so that package's own tests can
// use it: each test binary binds admit's server once, with Bind, before its
// tests run.
package apptest

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"admit/internal/identity"
	"admit/internal/serverkeys"
	"admit/store"
)

// Setup is what Start hands the bound server: the settings of handlers'
// Options a test varies, and the database and identity Start made.
type Setup struct {
	PublicURL           *url.URL
	NetworkHourlyLimit  int
	ClientIPHeader      string
	ClerkPublishableKey string
	Keys                serverkeys.Keys
	SignupAnswerDelay   time.Duration
	SignupBodyTimeout   time.Duration
	DevSignInKey        string
	Logger              *slog.Logger
	Ready               func(context.Context) error
	DB                  *store.DB
	Identity            identity.Identity
	// Options, when set, changes the server's options (a *handlers.Options)
	// before the server is built.
	Options func(any)
}

// Server is how the harness builds and reaches admit's server: the
// handlers package's constructor and the few names of its development
// sign-in and connection context.
type Server struct {
	// New builds the server from a Setup.
	New func(Setup) (http.Handler, error)
	// ConnContext is the server's http.Server.ConnContext.
	ConnContext func(context.Context, net.Conn) context.Context
	// NewDevSignInKey makes a development sign-in key, DevSignInLink the
	// link admit prints with it, and DevKeyCookie names the cookie that
	// holds it in a browser.
	NewDevSignInKey func() (string, error)
	DevSignInLink   func(base, key string) string
	DevKeyCookie    string
}

var bound Server

// Bind sets the server Start runs; a test binary calls it once, from
// TestMain or an init function, before any test starts.
func Bind(s Server) { bound = s }
