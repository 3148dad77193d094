package handlers

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"admit/store"
	"admit/views"
)

// dlRows is every row of the tables a delivery record touches.
func dlRows(tb testing.TB, app *testApp) []string {
	tb.Helper()
	var out []string
	err := app.DB.View(context.Background(), func(tx *store.Tx) error {
		for _, table := range []string{"invitations", "audit_events", "owner_action_receipts"} {
			rows, err := tx.Query(`SELECT * FROM ` + table + ` ORDER BY 1, 2, 3`)
			if err != nil {
				return err
			}
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]any, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					rows.Close()
					return err
				}
				out = append(out, table+fmt.Sprintf("%#v", vals))
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("read rows: %v", err)
	}
	return out
}

func TestDeliveryRecordAPI_TakesAChannelCodeAndNoPersonalData(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	entry := dlSelectedEntry(t, app, "dl-api@example.com")
	res := owIssue(t, app, app.Demo.ID, entry)
	path := "/api/owner/invitations/" + res.Invitation.ID + "/delivery-record"
	body := func(channel, reference string) string {
		return fmt.Sprintf(`{"requestKey":%q,"channel":%q,"reference":%q}`, owKey(), channel, reference)
	}
	for name, b := range map[string]string{
		"free-text channel":        body("email from my work account", ""),
		"unknown channel":          body("phone", ""),
		"capitalised code":         body("Email", ""),
		"reference with address":   body(store.ChannelEmail, "sent to dl-api@example.com"),
		"reference with a handle":  body(store.ChannelChat, "@dl on the forum"),
		"reference with a phone":   body(store.ChannelSMS, "+1 (555) 010-9999"),
		"reference with the code":  body(store.ChannelChat, res.Code),
		"reference holds the code": body(store.ChannelChat, "code="+res.Code),
	} {
		before := dlRows(t, app)
		r := owner.PostJSON(t, "POST", path, b)
		owWantStatus(t, name, r, http.StatusBadRequest)
		if got := strings.TrimSpace(r.Body); got != `{"error":"invalid"}` {
			t.Errorf("%s: body %s", name, got)
		}
		if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
			t.Errorf("%s: Cache-Control %q", name, got)
		}
		if after := dlRows(t, app); !reflect.DeepEqual(before, after) {
			t.Fatalf("%s: a refused record changed the database", name)
		}
	}

	r := owner.PostJSON(t, "POST", path, body(store.ChannelInPerson, "desk 4"))
	owWantStatus(t, "record", r, http.StatusOK)
	got := owDecode(t, r.Body)
	if got["deliveryChannel"] != "in_person" || got["deliveryReference"] != "desk 4" || got["deliveryRecordedAt"] == nil {
		t.Fatalf("recorded %v", got)
	}
}

func TestOwnerConsole_DeliveryFormOffersChannelCodesAndKeepsRefusedInput(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	entry := dlSelectedEntry(t, app, "dl-form@example.com")
	res := owIssue(t, app, app.Demo.ID, entry)
	entryPath := "/owner/programs/" + app.Demo.ID + "/entries/" + entry
	formPath := entryPath + "/invitations/" + res.Invitation.ID + "/delivery-record"

	page := owner.Get(t, entryPath)
	owWantStatus(t, "entry page", page, http.StatusOK)
	if !strings.Contains(page.Body, `<select id="channel" name="channel" required>`) {
		t.Fatalf("no channel select on the entry page: %.2000s", page.Body)
	}
	for _, code := range store.DeliveryChannels {
		if want := fmt.Sprintf(`<option value="%s">%s</option>`, code, views.ChannelLabel(code)); !strings.Contains(page.Body, want) {
			t.Errorf("entry page lacks %s", want)
		}
	}

	for _, tc := range []struct {
		name, channel, reference string
		// errorID is the field whose message must show; otherID's must not.
		errorID, otherID, message string
	}{
		{"address in the reference", "chat", "dl-form@example.com", "reference-error", "channel-error", "@"},
		{"phone in the reference", "sms", "call 0170 1234567", "reference-error", "channel-error", "phone number"},
		{"code in the reference", "email", res.Code, "reference-error", "channel-error", "invitation code"},
		{"free-text channel", "carrier pigeon", "batch 3", "channel-error", "reference-error", "Choose how you sent the code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dlRows(t, app)
			key := owKey()
			r := owner.PostOwnerForm(t, formPath, url.Values{"requestKey": {key}, "channel": {tc.channel}, "reference": {tc.reference}})
			owWantStatus(t, tc.name, r, http.StatusBadRequest)
			msg := dlText(t, r.Body, tc.errorID)
			field := strings.TrimSuffix(tc.errorID, "-error")
			if !strings.Contains(msg, tc.message) {
				t.Errorf("message beside the field %q, want it to mention %q", msg, tc.message)
			}
			if strings.Contains(r.Body, `data-testid="`+tc.otherID+`"`) {
				t.Errorf("the other field shows an error too")
			}
			if strings.Contains(r.Body, `data-testid="form-message"`) || !strings.Contains(r.Body, `href="#`+field+`"`) {
				t.Errorf("the error summary does not link the message to its field")
			}
			if !regexp.MustCompile(`<(input|select) id="` + field + `"[^>]*aria-invalid="true"[^>]*aria-describedby="` + tc.errorID).MatchString(r.Body) {
				t.Errorf("%s is not marked invalid and described by its message", field)
			}
			// Everything typed is kept, including the same request key.
			if !strings.Contains(r.Body, `value="`+html.EscapeString(tc.reference)+`"`) || !strings.Contains(r.Body, `value="`+key+`"`) {
				t.Errorf("the reference or the request key was not kept")
			}
			if slices.Contains(store.DeliveryChannels, tc.channel) && !strings.Contains(r.Body, `<option value="`+tc.channel+`" selected>`) {
				t.Errorf("the chosen channel was not kept")
			}
			if after := dlRows(t, app); !reflect.DeepEqual(before, after) {
				t.Fatal("a refused form changed the database")
			}
		})
	}

	r := owner.PostOwnerForm(t, formPath, url.Values{"requestKey": {owKey()}, "channel": {"chat"}, "reference": {"batch 3"}})
	owWantStatus(t, "record", r, http.StatusSeeOther)
	page = owner.Get(t, entryPath)
	if !strings.Contains(page.Body, "via Chat or messaging app") || !strings.Contains(page.Body, "batch 3") {
		t.Fatalf("the entry page does not show the recorded send: %.3000s", page.Body)
	}
}

func TestPrivacyPage_ListsTheDeliveryRecord(t *testing.T) {
	app := MustStartApp(t)
	r := app.NewClient(t).Get(t, "/privacy")
	owWantStatus(t, "privacy", r, http.StatusOK)
	item := dlText(t, r.Body, "delivery-record")
	for _, want := range []string{"reference", "email address", "phone number", "code", "erased with it"} {
		if !strings.Contains(item, want) {
			t.Errorf("the delivery record item does not say %q: %s", want, item)
		}
	}
	for _, code := range store.DeliveryChannels {
		if !strings.Contains(item, views.ChannelLabel(code)) {
			t.Errorf("the delivery record item does not name the channel %q", views.ChannelLabel(code))
		}
	}
}

// dlText is the text inside the element with the given data-testid, tags
// and surrounding space removed.
func dlText(tb testing.TB, body, testID string) string {
	tb.Helper()
	m := regexp.MustCompile(`(?s)data-testid="` + regexp.QuoteMeta(testID) + `"[^>]*>(.*?)</(small|li|p)>`).FindStringSubmatch(body)
	if m == nil {
		tb.Fatalf("no %s element in %.2000s", testID, body)
	}
	text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(m[1], "")
	return strings.Join(strings.Fields(html.UnescapeString(text)), " ")
}
