package browsertest

import (
	"admit/handlers/handlerstest"
	"admit/internal/apptest"
)

// The browser tests run admit through the exported harness, apptest,
// bound to the handlers package's server (handlerstest). The names below
// are the harness's, under the names these tests had in the handlers
// package.

func init() { handlerstest.Bind() }

// withServerOptions changes the server's options before it is built.
var withServerOptions = handlerstest.WithServerOptions

type (
	testApp   = apptest.App
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
