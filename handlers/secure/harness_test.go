package secure_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"admit/handlers/handlerstest"
	"admit/internal/apptest"
	"admit/internal/testutil"
	"admit/store"
)

// The tests of this file's package that run the whole app do so through
// the exported harness, apptest, bound to the handlers package's server
// (handlerstest): the checks as every write route meets them. The names
// below are the harness's, under the names the handlers package's tests
// use.

func init() { handlerstest.Bind() }

type (
	testApp    = apptest.App
	testClient = apptest.Client
)

const signupAPI = apptest.SignupAPI

var (
	MustStartApp    = apptest.Start
	mustInsertEntry = apptest.InsertEntry
	appCount        = apptest.Count
	signupJSONBody  = apptest.SignupJSONBody
)

// dbFingerprint digests every row of every table: equal fingerprints
// prove that a request stored, removed and changed nothing.
func dbFingerprint(tb testing.TB, db *store.DB) testutil.Fingerprint {
	tb.Helper()
	return testutil.MustFingerprint(tb, db.View)
}

// sameRows reports whether two fingerprints are equal.
func sameRows(a, b testutil.Fingerprint) bool { return maps.Equal(a, b) }

// wantNoChange fails the test if any row of any table changed.
func wantNoChange(tb testing.TB, what string, app *testApp, before testutil.Fingerprint) {
	tb.Helper()
	if after := dbFingerprint(tb, app.DB); !sameRows(before, after) {
		tb.Fatalf("%s changed the database:%s", what, testutil.Describe(before, after))
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// mustJoinDemo signs email up for the demo program through the JSON API and
// returns its removal token.
func mustJoinDemo(tb testing.TB, c *testClient, email string) string {
	tb.Helper()
	r := c.PostJSON(tb, "POST", signupAPI, signupJSONBody(uuid.NewString(), email, 1, true))
	if r.StatusCode != http.StatusAccepted {
		tb.Fatalf("join %s: status %d %s", email, r.StatusCode, r.Body)
	}
	var v struct {
		RemovalToken string `json:"removalToken"`
	}
	if err := json.Unmarshal([]byte(r.Body), &v); err != nil || len(v.RemovalToken) != 64 {
		tb.Fatalf("join body %q: %v", r.Body, err)
	}
	return v.RemovalToken
}
