package handlers

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"admit/internal/testutil"
	"admit/store"

	"github.com/google/uuid"
)

// A network at ADMIT_NETWORK_HOURLY_LIMIT still gets its accepted requests'
// 202s back on retry — on the JSON API and the form — and the retries
// count no attempt; a new key from it is 429.
func TestSignup_ReplayAtTheNetworkLimitIs202AndCountsNothing(t *testing.T) {
	app := MustStartApp(t, withNetworkLimit(2))
	c := app.NewClient(t)
	jsonKey, formKey := uuid.NewString(), uuid.NewString()
	if r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(jsonKey, "json@example.com", 1, true)); r.StatusCode != http.StatusAccepted {
		t.Fatalf("JSON signup: status %d", r.StatusCode)
	}
	if r := c.PostForm(t, signupPath, signupFormValues(formKey, "form@example.com", 1, true)); r.StatusCode != http.StatusAccepted {
		t.Fatalf("form signup: status %d", r.StatusCode)
	}
	if r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "third@example.com", 1, true)); r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a new key at the limit: status %d, want 429", r.StatusCode)
	}
	before, attempts := dbFingerprint(t, app.DB), networkAttempts(t, app)
	if attempts != 2 {
		t.Fatalf("network attempts=%d, want 2: the network is at its limit", attempts)
	}
	for range 3 {
		r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(jsonKey, "json@example.com", 1, true))
		if r.StatusCode != http.StatusAccepted || r.Body != "{\"status\":\"received\"}\n" {
			t.Fatalf("JSON replay at the limit: %d %q, want 202 received without a token", r.StatusCode, r.Body)
		}
		f := c.PostForm(t, signupPath, signupFormValues(formKey, "form@example.com", 1, true))
		if f.StatusCode != http.StatusAccepted || pageToken(t, f.Body) != "" {
			t.Fatalf("form replay at the limit: %d, want 202 without a removal link", f.StatusCode)
		}
	}
	wantNoChange(t, "replays at the network limit", app, before)
}

// A replay needs no write: with the disk full every new signup and owner
// action fails with 503 and nothing is acknowledged, while a retry of an
// acknowledged signup key (JSON and form) or owner action key answers as
// before.
func TestReplays_AnswerWhileTheDiskIsFull(t *testing.T) {
	dir, fill := testutil.MustFullDisk(t)
	app := MustStartApp(t, withDataDir(dir))
	c := app.NewClient(t)
	jsonKey, formKey := uuid.NewString(), uuid.NewString()
	if r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(jsonKey, "json@example.com", 1, true)); r.StatusCode != http.StatusAccepted {
		t.Fatalf("JSON signup: status %d", r.StatusCode)
	}
	if r := c.PostForm(t, signupPath, signupFormValues(formKey, "form@example.com", 1, true)); r.StatusCode != http.StatusAccepted {
		t.Fatalf("form signup: status %d", r.StatusCode)
	}
	owner := mustOwnerClient(t, app)
	var entryID string
	if err := app.DB.View(t.Context(), func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT id FROM entries WHERE email_key = 'json@example.com'`).Scan(&entryID)
	}); err != nil {
		t.Fatal(err)
	}
	entry := fmt.Sprintf("/api/owner/programs/%s/entries/%s", app.Demo.ID, entryID)
	owWantStatus(t, "select", owner.PostJSON(t, "POST", entry+"/select", `{"reason":"meets_policy"}`), http.StatusOK)
	issueKey := uuid.NewString()
	issueBody := fmt.Sprintf(`{"requestKey":%q,"expiresAt":%q}`, issueKey, app.Clock.Now().Add(48*time.Hour).Format(time.RFC3339))
	first := owner.PostJSON(t, "POST", entry+"/invitations", issueBody)
	owWantStatus(t, "issue", first, http.StatusCreated)
	invID := owStr(owPath(owDecode(t, first.Body), "invitation", "id"))

	fill()
	before := dbFingerprint(t, app.DB)
	// Precondition: writes fail now, and nothing is acknowledged.
	if r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "new@example.com", 1, true)); r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a new signup on a full disk: %d %q, want 503", r.StatusCode, r.Body)
	}
	deliveryBody := fmt.Sprintf(`{"requestKey":%q,"channel":"email"}`, uuid.NewString())
	owWantStatus(t, "a new delivery record on a full disk",
		owner.PostJSON(t, "POST", "/api/owner/invitations/"+invID+"/delivery-record", deliveryBody), http.StatusServiceUnavailable)

	r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(jsonKey, "json@example.com", 1, true))
	if r.StatusCode != http.StatusAccepted || r.Body != "{\"status\":\"received\"}\n" {
		t.Fatalf("JSON replay on a full disk: %d %q, want 202 received", r.StatusCode, r.Body)
	}
	f := c.PostForm(t, signupPath, signupFormValues(formKey, "form@example.com", 1, true))
	if f.StatusCode != http.StatusAccepted || !strings.Contains(f.Body, "received") {
		t.Fatalf("form replay on a full disk: %d, want the 202 page", f.StatusCode)
	}
	rep := owner.PostJSON(t, "POST", entry+"/invitations", issueBody)
	owWantStatus(t, "issue replay on a full disk", rep, http.StatusOK)
	if got := owStr(owPath(owDecode(t, rep.Body), "invitation", "id")); got != invID {
		t.Fatalf("issue replay answered invitation %s, want %s", got, invID)
	}
	if strings.Contains(rep.Body, `"code"`) {
		t.Fatal("an issue replay showed a code")
	}
	wantNoChange(t, "replays on a full disk", app, before)
}
