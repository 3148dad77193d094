// Package handlerstest binds the test harness, internal/apptest, to the
// handlers package's server, for the tests that run admit from outside
// that package: the browser tests (handlers/browsertest) and the origin and
// CSRF tests of handlers/secure. The handlers package's own tests bind the
// harness themselves, as they cannot import a package that imports
// handlers. Only tests import this package.
package handlerstest

import (
	"net/http"

	"admit/handlers"
	"admit/handlers/admission"
	"admit/internal/apptest"
)

// Bind makes apptest.Start run the handlers package's server; a test
// binary calls it once, from TestMain or an init function, before any test
// starts.
func Bind() { apptest.Bind(server) }

// WithServerOptions changes the server's options before it is built.
func WithServerOptions(f func(*handlers.Options)) apptest.Option {
	return func(c *apptest.Config) { c.Options = func(o any) { f(o.(*handlers.Options)) } }
}

// server builds the handlers package's Server for the harness.
var server = apptest.Server{
	New: func(s apptest.Setup) (http.Handler, error) {
		opts := handlers.Options{PublicURL: s.PublicURL, NetworkHourlyLimit: s.NetworkHourlyLimit,
			ClientIPHeader: s.ClientIPHeader, ClerkPublishableKey: s.ClerkPublishableKey, Keys: s.Keys,
			SignupAnswerDelay: s.SignupAnswerDelay, SignupBodyTimeout: s.SignupBodyTimeout,
			DevSignInKey: s.DevSignInKey, Logger: s.Logger, Ready: s.Ready}
		if s.Options != nil {
			s.Options(&opts)
		}
		return handlers.New(opts, s.DB, s.Identity)
	},
	ConnContext:     admission.ConnContext,
	NewDevSignInKey: handlers.NewDevSignInKey,
	DevSignInLink:   handlers.DevSignInLink,
	DevKeyCookie:    handlers.DevKeyCookie,
}
