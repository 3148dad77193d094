package handlers

import (
	"encoding/json"
	"maps"
	"net/http"
	"testing"

	"admit/handlers/admission"
	"admit/internal/apptest"
	"admit/internal/testutil"
	"admit/store"
)

// The handlers' tests run admit through the exported harness, apptest,
// bound here to this package's server: the same binding as handlerstest's,
// which these tests cannot import, as it imports handlers. The names below
// are the harness's, under the names these tests have always used.

func init() { apptest.Bind(harnessServer) }

// harnessServer builds this package's Server for the harness.
var harnessServer = apptest.Server{
	New: func(s apptest.Setup) (http.Handler, error) {
		opts := Options{PublicURL: s.PublicURL, NetworkHourlyLimit: s.NetworkHourlyLimit, ClientIPHeader: s.ClientIPHeader,
			ClerkPublishableKey: s.ClerkPublishableKey, Keys: s.Keys, SignupAnswerDelay: s.SignupAnswerDelay,
			SignupBodyTimeout: s.SignupBodyTimeout, DevSignInKey: s.DevSignInKey, Logger: s.Logger, Ready: s.Ready}
		if s.Options != nil {
			s.Options(&opts)
		}
		return New(opts, s.DB, s.Identity)
	},
	ConnContext:     admission.ConnContext,
	NewDevSignInKey: NewDevSignInKey,
	DevSignInLink:   DevSignInLink,
	DevKeyCookie:    DevKeyCookie,
}

type (
	testApp      = apptest.App
	testClient   = apptest.Client
	testResponse = apptest.Response
	appConfig    = apptest.Config
	appOption    = apptest.Option
	accessKit    = apptest.AccessKit
	issuedCode   = apptest.IssuedCode
)

const (
	signupPath = apptest.SignupPath
	signupAPI  = apptest.SignupAPI
)

var (
	MustStartApp          = apptest.Start
	mustOIDCApp           = apptest.StartOIDC
	withClerk             = apptest.WithClerk
	withOIDC              = apptest.WithOIDC
	withOIDCTrustEmail    = apptest.WithOIDCTrustEmail
	withoutOIDCDiscovery  = apptest.WithoutOIDCDiscovery
	withOIDCSettings      = apptest.WithOIDCSettings
	withNetworkLimit      = apptest.WithNetworkLimit
	withDataDir           = apptest.WithDataDir
	withRetention         = apptest.WithRetention
	withWriteQueues       = apptest.WithWriteQueues
	withRetireChunk       = apptest.WithRetireChunk
	withSignupDelay       = apptest.WithSignupDelay
	withSignupBodyTimeout = apptest.WithSignupBodyTimeout
	testKey               = apptest.Key
	oidcSub               = apptest.OIDCSub
	mustInsertEntry       = apptest.InsertEntry
	ownerActorOf          = apptest.OwnerActor
	owCount               = apptest.Count
	appCount              = apptest.Count
	owAuditCount          = apptest.AuditCount
	mustOwnerProgram      = apptest.OwnerProgram
	owEntryState          = apptest.EntryState
	owIssue               = apptest.Issue
	owGrant               = apptest.Grant
	owKey                 = apptest.RequestKey
	newAccessKit          = apptest.NewAccessKit
	signupJSONBody        = apptest.SignupJSONBody
	mustSetDemo           = apptest.SetDemo
	demoOwner             = apptest.DemoOwner
	sessionCount          = apptest.SessionCount
	mustURL               = apptest.ParseURL
	dlSelectedEntry       = apptest.SelectedEntry
	mustRetireDemo        = apptest.RetireDemo
	mustHoldWriter        = apptest.HoldWriter
	eventually            = apptest.Eventually
	fullDemo              = apptest.FillDemo
	staffIDOf             = apptest.StaffID
)

// srvOf is the app's server as this package's type.
func srvOf(app *testApp) *Server { return app.Srv.(*Server) }

// dbFingerprint digests every row of every table: equal fingerprints
// prove that a request stored, removed and changed nothing — a counter
// bumped or a state changed on an existing row included, which row counts
// would miss.
func dbFingerprint(tb testing.TB, db *store.DB) testutil.Fingerprint {
	tb.Helper()
	return testutil.MustFingerprint(tb, db.View)
}

// sameRows reports whether two fingerprints are equal.
func sameRows(a, b testutil.Fingerprint) bool { return maps.Equal(a, b) }

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
