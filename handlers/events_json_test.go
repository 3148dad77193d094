package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"admit/store"
)

// TestEventsJSON_DetailsAreTheStoredObjectByteForByte: for every event
// type, the details object GET …/events and GET …/entries/{entryId} answer
// with is exactly the JSON history stores (store's
// TestAudit_DetailsJSONIsPinnedPerEventType pins what each type stores),
// and a row of an older shape, with a key no current type has, is shown as
// it was stored.
func TestEventsJSON_DetailsAreTheStoredObjectByteForByte(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	ada := mustInsertEntry(t, app.DB, app.Demo, "ada@example.com", "selected")
	const inv, grant = "0190f2a8-7c1e-7b3a-9f00-00000000abcd", "0190f2a8-7c1e-7b3a-9f00-00000000beef"
	rows := []storedEvent{
		{"program_created", `{}`},
		{"notice_published", `{"version":2}`},
		{"program_changed", `{"accessEnabled":false,"hourlyCap":10,"queueCap":100,"renamed":true,"seatCap":5,"signupOpen":true}`},
		{"program_changed", `{"accessEnabled":true,"hourlyCap":10,"queueCap":100,"seatCap":5,"signupOpen":true}`},
		{"content_updated", `{"revision":3}`},
		{"asset_uploaded", `{"bytes":2048}`},
		{"signup", `{"noticeVersion":1}`},
		{"selected", `{"batch":true,"from":"waiting","reason":"meets_policy"}`},
		{"declined", `{"from":"selected","reason":"capacity"}`},
		{"invite_issued", `{"invitationId":"` + inv + `"}`},
		{"delivery_recorded", `{"channel":"in_person","invitationId":"` + inv + `"}`},
		{"invite_expired", `{"invitationId":"` + inv + `"}`},
		{"invite_revoked", `{"invitationId":"` + inv + `"}`},
		{"invite_revoked", `{"cause":"withdrawn"}`},
		{"redeemed", `{"grantId":"` + grant + `","invitationId":"` + inv + `"}`},
		{"grant_revoked", `{"grantId":"` + grant + `"}`},
		{"grant_revoked", `{"cause":"withdrawn"}`},
		{"withdrawn", `{"from":"invited","via":"removal_link"}`},
		{"erased", `{"reason":"retention"}`},
		{"queue_exported", `{"note":"kept by an older version","rows":40}`},
		{"program_retired", `{"entries":12,"grantsRevoked":0,"invitationsRevoked":1}`},
	}
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.typ] = true
	}
	for _, typ := range store.EventTypes {
		if !seen[typ] {
			t.Errorf("no stored row for %s", typ)
		}
	}
	want := mustStoreEvents(t, app, ada, rows)

	for _, path := range []string{
		"/api/owner/programs/" + app.Demo.ID + "/events?limit=100&entry=" + ada,
		"/api/owner/programs/" + app.Demo.ID + "/entries/" + ada,
	} {
		r := owner.Get(t, path)
		owWantStatus(t, path, r, http.StatusOK)
		var body struct {
			Events []struct {
				ID      int64           `json:"id"`
				Details json.RawMessage `json:"details"`
			} `json:"events"`
		}
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		found := 0
		for _, ev := range body.Events {
			stored, ok := want[ev.ID]
			if !ok {
				continue
			}
			found++
			if string(ev.Details) != stored {
				t.Errorf("%s: event %d details %s, stored %s", path, ev.ID, ev.Details, stored)
			}
		}
		if found != len(want) {
			t.Errorf("%s: %d of the %d stored events answered", path, found, len(want))
		}
	}
}

// storedEvent is an audit row's type and details as history holds them.
type storedEvent struct{ typ, details string }

// mustStoreEvents inserts audit rows of the demo program's entry as they
// are stored, and returns each row's ID with its details.
func mustStoreEvents(tb testing.TB, app *testApp, entryID string, rows []storedEvent) map[int64]string {
	tb.Helper()
	ctx := context.Background()
	out := map[int64]string{}
	for _, r := range rows {
		err := app.DB.Update(ctx, func(tx *store.Tx) error {
			res, err := tx.ExecContext(ctx, `INSERT INTO audit_events (program_id, entry_id, actor_kind, event_type, event_at, details)
				VALUES (?, ?, 'system', ?, ?, ?)`, app.Demo.ID, entryID, r.typ, store.Millis(tx.Now), r.details)
			if err != nil {
				return err
			}
			id, err := res.LastInsertId()
			out[id] = r.details
			return err
		})
		if err != nil {
			tb.Fatalf("insert %s %s: %v", r.typ, r.details, err)
		}
	}
	return out
}
