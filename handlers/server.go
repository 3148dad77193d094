// Package handlers is admit's HTTP layer: routing, identity, CSRF, security
// headers, request parsing and rendering. Business rules live in store.
package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"admit/handlers/admission"
	"admit/handlers/reqlog"
	"admit/handlers/secure"
	"admit/internal/identity"
	"admit/internal/serverkeys"
	"admit/store"

	"github.com/gorilla/securecookie"
	"github.com/gorilla/sessions"
)

// SignupAnswerDelay is when a signup's answer is released by default,
// after its handler starts (admission.AnswerDelay; docs/signup.md,
// "Timing").
const SignupAnswerDelay = admission.AnswerDelay

// Options configure a Server.
type Options struct {
	// PublicURL is ADMIT_PUBLIC_URL: its origin is the only allowed Origin.
	PublicURL *url.URL
	// ClientIPHeader names a trusted proxy header carrying the client
	// address; empty means RemoteAddr.
	ClientIPHeader string
	// NetworkHourlyLimit bounds signup attempts per network per UTC hour.
	NetworkHourlyLimit int
	// ClerkPublishableKey enables ClerkJS on pages in Clerk mode.
	ClerkPublishableKey string
	Keys                serverkeys.Keys
	Logger              *slog.Logger
	// BackupRetention is how long erased data can survive in backups; 0
	// means no continuous backup is configured. The privacy page adds it.
	BackupRetention time.Duration
	// BackupStatus reports the continuous backup for the owner console; nil
	// means no replica is configured.
	BackupStatus func() (BackupStatus, error)
	// Requests, when set, is told about every request (metrics).
	Requests RequestObserver
	// RequestIDHeader names a trusted proxy header carrying the request ID
	// (ADMIT_REQUEST_ID_HEADER); empty means admit makes every ID.
	RequestIDHeader string
	// Ready reports extra readiness problems (e.g. replication); nil means ready.
	Ready func(context.Context) error
	// SignupAnswerDelay is when a signup's answer is released after its
	// handler starts; 0 means SignupAnswerDelay.
	SignupAnswerDelay time.Duration
	// SignupBodyTimeout is how long a signup's body may take to arrive;
	// 0 means SignupBodyTimeout.
	SignupBodyTimeout time.Duration
	// DevSignInKey, with the development identity, is the key from
	// NewDevSignInKey that the console's sign-in link carries. Empty, New
	// makes one that nobody is told, and the development sign-in refuses
	// everyone.
	DevSignInKey string
}

// BackupStatus is the continuous backup's state.
type BackupStatus struct {
	// Replica names the replica kind and place, never a credential.
	Replica string
	// LastSync is the last successful sync; zero if none yet.
	LastSync time.Time
	// Pending reports committed changes not yet replicated, for Lag.
	Pending bool
	Lag     time.Duration
	// VerifiedAt is when a restore drill last found the backup restorable;
	// NotRestorableSince is when drills began finding it not restorable
	// (zero while it is); LastFailedDrill is the last failed drill.
	VerifiedAt, NotRestorableSince, LastFailedDrill time.Time
}

// Server serves admit.
type Server struct {
	opts Options
	db   *store.DB
	id   identity.Identity
	// cookieStore holds the codecs (current keys first) and options of
	// admit's own cookies (cookiestate.go).
	cookieStore *sessions.CookieStore
	// csrf mints and verifies the tokens of signed-in writes.
	csrf      secure.CSRF
	log       *slog.Logger
	origin    string
	clerkFAPI string
	handler   http.Handler
	// mux is the route table, for finding the page behind a form's path.
	mux *http.ServeMux
	// patterns are the registered route patterns: the only route names
	// logs and metrics use.
	patterns map[string]bool
	// quotes caches what the form's 202 page quotes from a notice.
	quotes quoteCache
	// intake is the front of the signup routes: their bodies read under a
	// deadline, then the bound on signups in progress, from the request's
	// arrival to its answer (at most the store's signup queue,
	// ADMIT_WRITE_QUEUE), and the refusals for load.
	intake *admission.Intake
	// answers holds the signup routes' answers until their release.
	answers *admission.Schedule
}

// New builds the server and its routes.
func New(opts Options, db *store.DB, id identity.Identity) (*Server, error) {
	if opts.PublicURL == nil || opts.PublicURL.Host == "" {
		return nil, errors.New("handlers: a public URL is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.NetworkHourlyLimit <= 0 {
		opts.NetworkHourlyLimit = 20
	}
	if opts.SignupAnswerDelay <= 0 {
		opts.SignupAnswerDelay = SignupAnswerDelay
	}
	if opts.SignupBodyTimeout <= 0 {
		opts.SignupBodyTimeout = SignupBodyTimeout
	}
	if err := checkKeys(opts.Keys); err != nil {
		return nil, err
	}
	if id.Mode() == identity.ModeDev {
		if err := useDevKey(&opts); err != nil {
			return nil, err
		}
	}
	s := &Server{opts: opts, db: db, id: id, log: slog.New(reqlog.LogHandler{Handler: opts.Logger.Handler()}), patterns: map[string]bool{}}
	depth := store.DefaultSignupQueue
	if db != nil {
		depth, _ = db.QueueBounds()
	}
	s.answers = admission.NewSchedule(opts.SignupAnswerDelay)
	var err error
	if s.intake, err = s.newSignupIntake(depth, id.Mode() == identity.ModeDev); err != nil {
		return nil, err
	}
	s.origin = opts.PublicURL.Scheme + "://" + opts.PublicURL.Host
	if id.Mode() == identity.ModeClerk {
		fapi, err := frontendAPIFromPublishableKey(opts.ClerkPublishableKey)
		if err != nil {
			return nil, err
		}
		s.clerkFAPI = fapi
	}
	s.cookieStore = newCookieStore(opts)
	s.csrf = secure.CSRF{Key: opts.Keys.CSRF, Previous: opts.Keys.PreviousCSRF}
	s.handler = s.routes()
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// isHTTPS reports whether the public URL is https (for HSTS and cookies).
func (s *Server) isHTTPS() bool { return s.opts.PublicURL.Scheme == "https" }

// isAPI reports whether the request is for the JSON API.
func isAPI(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/api/") }

// isHTMX reports whether htmx sent the request (and it wants a block).
func isHTMX(r *http.Request) bool { return r.Header.Get("HX-Request") == "true" }

// checkKeys refuses server keys that are not 32 bytes each, and a
// previous session key pair given by half.
func checkKeys(keys serverkeys.Keys) error {
	for name, k := range map[string][]byte{"session hash": keys.SessionHash, "session block": keys.SessionBlock,
		"csrf": keys.CSRF, "binding": keys.Binding, "counter": keys.Counter} {
		if len(k) != 32 {
			return fmt.Errorf("handlers: the %s key must be 32 bytes", name)
		}
	}
	for name, k := range map[string][]byte{"previous session hash": keys.PreviousSessionHash,
		"previous session block": keys.PreviousSessionBlock, "previous csrf": keys.PreviousCSRF} {
		if k != nil && len(k) != 32 {
			return fmt.Errorf("handlers: the %s key must be 32 bytes", name)
		}
	}
	if (keys.PreviousSessionHash == nil) != (keys.PreviousSessionBlock == nil) {
		return errors.New("handlers: the previous session hash and block keys come together")
	}
	return nil
}

// newCookieStore is the codecs and options of admit's own cookies.
func newCookieStore(opts Options) *sessions.CookieStore {
	// rule: a cookie signed with the previous session keys is still read
	// during a rotation (docs/DEPLOY.md, "Rotating a key").
	cs := sessions.NewCookieStore(opts.Keys.SessionKeyPairs()...)
	// The cookie state's plaintext is JSON, not securecookie's default gob,
	// whose decoder compiles the type description every cookie carries
	// (docs/PERFORMANCE.md#cookies-in-json).
	for _, c := range cs.Codecs {
		if sc, ok := c.(*securecookie.SecureCookie); ok {
			sc.SetSerializer(securecookie.JSONEncoder{})
		}
	}
	cs.Options = &sessions.Options{
		Path:     "/",
		MaxAge:   int((7 * 24 * time.Hour).Seconds()),
		HttpOnly: true,
		Secure:   opts.PublicURL.Scheme == "https",
		SameSite: http.SameSiteLaxMode,
	}
	return cs
}
