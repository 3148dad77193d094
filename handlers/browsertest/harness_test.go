package browsertest

import (
	"net/http"

	"admit/handlers"
	"admit/handlers/admission"
	"admit/internal/apptest"
)

// The browser tests run admit through the exported harness, apptest, bound
// here to the handlers package's server. The names below are the
// harness's, under the names these tests had in the handlers package.

func init() { apptest.Bind(harnessServer) }

// harnessServer builds the handlers package's Server for the harness.
var harnessServer = apptest.Server{
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

// withServerOptions changes the server's options before it is built.
func withServerOptions(f func(*handlers.Options)) appOption {
	return func(c *apptest.Config) { c.Options = func(o any) { f(o.(*handlers.Options)) } }
}

type (
	testApp   = apptest.App
	appOption = apptest.Option
	accessKit = apptest.AccessKit
)

const (
	signupPath = apptest.SignupPath
	signupAPI  = apptest.SignupAPI
)

var (
	MustStartApp     = apptest.Start
	mustOIDCApp      = apptest.StartOIDC
	withClerk        = apptest.WithClerk
	withDataDir      = apptest.WithDataDir
	oidcSub          = apptest.OIDCSub
	mustInsertEntry  = apptest.InsertEntry
	ownerActorOf     = apptest.OwnerActor
	owCount          = apptest.Count
	appCount         = apptest.Count
	owAuditCount     = apptest.AuditCount
	mustOwnerProgram = apptest.OwnerProgram
	owEntryState     = apptest.EntryState
	owIssue          = apptest.Issue
	owGrant          = apptest.Grant
	newAccessKit     = apptest.NewAccessKit
	signupJSONBody   = apptest.SignupJSONBody
	mustSetDemo      = apptest.SetDemo
	sessionCount     = apptest.SessionCount
	mustURL          = apptest.ParseURL
	dlSelectedEntry  = apptest.SelectedEntry
	mustRetireDemo   = apptest.RetireDemo
	mustHoldWriter   = apptest.HoldWriter
	eventually       = apptest.Eventually
	fullDemo         = apptest.FillDemo
	staffIDOf        = apptest.StaffID
)
