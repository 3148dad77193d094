package handlers

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"admit/store"
)

// Two journeys that used to end in a wrong answer: a full waitlist told
// applicants to try again in an hour, and a code issued without a recorded
// send looked sent to its recipient and was refused without a reason.

func TestFullQueue_SignupIs429WithNoRetryTimeTheSameForListedAndUnlisted(t *testing.T) {
	app := MustStartApp(t)
	app.Clock.Set(time.Date(2026, 11, 29, 10, 37, 20, 0, time.UTC))
	fullDemo(t, app)
	c := app.NewClient(t)

	var pages []string
	for _, email := range []string{"listed@example.com", "unlisted@example.com"} {
		r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), email, 1, true))
		if r.StatusCode != http.StatusTooManyRequests || r.Body != "{\"error\":\"rate_limited\"}\n" {
			t.Fatalf("JSON %s: %d %q, want 429 rate_limited", email, r.StatusCode, r.Body)
		}
		// Every 429 carries Retry-After (docs/API.md), the next UTC hour.
		if got := r.Header.Get("Retry-After"); got != "1360" {
			t.Fatalf("JSON %s: Retry-After %q on a full queue, want 1360 (the next hour)", email, got)
		}
		for _, accept := range []string{"", browserAccept} {
			r = c.PostForm(t, signupPath, signupFormValues(uuid.NewString(), email, 1, true), "Accept", accept)
			if got, want := r.StatusCode, http.StatusTooManyRequests; got != want {
				t.Fatalf("form %s: status %d, want %d", email, got, want)
			}
			if got := r.Header.Get("Retry-After"); got != "1360" {
				t.Fatalf("form %s: Retry-After %q on a full queue, want 1360", email, got)
			}
			summary := between(t, r.Body, `data-testid="error-summary"`, `</div>`)
			if !strings.Contains(summary, "This waitlist is full.") {
				t.Fatalf("form %s: the summary does not say the waitlist is full:\n%s", email, summary)
			}
			for _, no := range []string{"try again", "after 11:00", "Too many"} {
				if strings.Contains(r.Body, no) {
					t.Fatalf("form %s: the full page says %q", email, no)
				}
			}
			if strings.Contains(r.Body, `id="signup-form"`) || !strings.Contains(r.Body, `data-testid="full"`) {
				t.Fatalf("form %s: the page offers the form again instead of saying it is full", email)
			}
			pages = append(pages, strings.ReplaceAll(r.Body, email, "EMAIL"))
		}
	}
	if pages[0] != pages[2] || pages[1] != pages[3] {
		t.Fatal("the full page differs between a listed and an unlisted address")
	}
	// The page itself says it in place of the form.
	r := c.Get(t, signupPath)
	if r.StatusCode != http.StatusOK || strings.Contains(r.Body, `id="signup-form"`) || !strings.Contains(r.Body, "This waitlist is full.") {
		t.Fatalf("GET %s: %d, form shown=%v", signupPath, r.StatusCode, strings.Contains(r.Body, `id="signup-form"`))
	}
	if r := c.Get(t, "/"); !strings.Contains(r.Body, `data-testid="program-full"`) {
		t.Fatal("the start page offers to join a full waitlist")
	}
}

func TestFullIntakeAndNetworkLimit_Each429SaysItsOwnLimitWithRetryAfter(t *testing.T) {
	// The first signup and the one refused for the hour's intake count
	// two attempts: the third is over the network's limit.
	app := MustStartApp(t, withNetworkLimit(2))
	app.Clock.Set(time.Date(2026, 11, 29, 10, 50, 0, 0, time.UTC))
	mustSetDemo(t, app, func(s *store.ProgramSettings) { s.HourlyCap = settingPtr(1) })
	c := app.NewClient(t)
	if r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "first@example.com", 1, true)); r.StatusCode != http.StatusAccepted {
		t.Fatalf("first signup: %d", r.StatusCode)
	}
	refused := func(what, email string) string {
		t.Helper()
		r := c.PostForm(t, signupPath, signupFormValues(uuid.NewString(), email, 1, true))
		if r.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("%s: %d, want 429", what, r.StatusCode)
		}
		if got, want := r.Header.Get("Retry-After"), "600"; got != want {
			t.Fatalf("%s: Retry-After %q, want %q", what, got, want)
		}
		if !strings.Contains(r.Body, `id="signup-form"`) {
			t.Fatalf("%s: the form is not offered again", what)
		}
		return between(t, r.Body, `data-testid="error-summary"`, `</div>`)
	}
	intake := refused("hourly intake", "second@example.com")
	if !strings.Contains(intake, "all the signups it accepts this hour") || !strings.Contains(intake, "after 11:00 UTC") {
		t.Fatalf("the hourly intake's 429 says:\n%s", intake)
	}
	network := refused("network limit", "third@example.com")
	if !strings.Contains(network, "from your network") || !strings.Contains(network, "after 11:00 UTC") {
		t.Fatalf("the network limit's 429 says:\n%s", network)
	}
	if strings.Contains(intake, "network") || strings.Contains(network, "accepts this hour") || strings.Contains(intake+network, "is full") {
		t.Fatal("the limits' messages are not distinct")
	}
}

func TestFullQueueAndUsedIntake_OwnerProgramPageAndHomeFlagThem(t *testing.T) {
	app := MustStartApp(t)
	app.Clock.Set(time.Date(2026, 11, 29, 10, 37, 0, 0, time.UTC))
	owner := mustOwnerClient(t, app)
	flags := func(what, wantTestID, wantText string) {
		t.Helper()
		for _, path := range []string{"/owner", "/owner/programs/" + app.Demo.ID} {
			body := owner.Get(t, path).Body
			for _, id := range []string{"queue-full", "intake-used-up"} {
				has := strings.Contains(body, `data-testid="`+id+`"`)
				if has != (id == wantTestID) {
					t.Errorf("%s: %s shows %s: %v", what, path, id, has)
				}
			}
			if wantText != "" && !strings.Contains(body, wantText) {
				t.Errorf("%s: %s lacks %q", what, path, wantText)
			}
		}
	}
	flags("room left", "", "")

	mustSetDemo(t, app, func(s *store.ProgramSettings) { s.HourlyCap = settingPtr(1) })
	newAccessKit(app).Entry(t, app.Demo, "first@example.com")
	flags("the hour's intake used", "intake-used-up", "This hour's intake is used up until 11:00 UTC")
	app.Clock.Add(time.Hour)
	flags("the next hour", "", "")

	mustSetDemo(t, app, func(s *store.ProgramSettings) { s.QueueCap = settingPtr(1) })
	flags("the queue full", "queue-full", "Full: signups are refused")
}

func TestUnsentCode_MeQueueAndEntrySayTheSendIsNotRecordedUntilItIs(t *testing.T) {
	app := MustStartApp(t)
	k := newAccessKit(app)
	const email = "pending@example.com"
	inv := k.Invite(t, app.Demo, email, false)
	me := app.NewClient(t)
	me.SignIn(t, email)
	owner := mustOwnerClient(t, app)
	entryPath := "/owner/programs/" + app.Demo.ID + "/entries/" + inv.EntryID
	queuePath := "/owner/programs/" + app.Demo.ID + "/entries"

	card := meRow(me.Get(t, "/me").Body, "demo")
	if strings.Contains(card, "Invitation sent") || strings.Contains(card, "has been sent") || !strings.Contains(card, "Invitation being prepared") {
		t.Fatalf("/me before the send is recorded:\n%s", card)
	}
	if strings.Contains(card, `data-testid="redeem-link"`) {
		t.Fatal("/me offers to redeem a code that cannot be redeemed yet")
	}
	for _, path := range []string{queuePath, entryPath} {
		if body := owner.Get(t, path).Body; !strings.Contains(body, "code issued — send not recorded") {
			t.Fatalf("%s does not flag the missing send", path)
		}
	}

	if _, err := app.DB.RecordDelivery(context.Background(), k.Owner, inv.ID, store.DeliveryRecord{RequestKey: uuid.NewString(), Channel: "email"}); err != nil {
		t.Fatal(err)
	}
	card = meRow(me.Get(t, "/me").Body, "demo")
	if !strings.Contains(card, "Invitation sent") || !strings.Contains(card, `data-testid="redeem-link"`) {
		t.Fatalf("/me after the send is recorded:\n%s", card)
	}
	for _, path := range []string{queuePath, entryPath} {
		if body := owner.Get(t, path).Body; strings.Contains(body, "send not recorded") {
			t.Fatalf("%s still flags a recorded send", path)
		}
	}
}

func TestUnsentCode_RedeemSaysNotActiveYetToItsHolderOnlyAndTheAPIStaysGeneric(t *testing.T) {
	app := MustStartApp(t)
	k := newAccessKit(app)
	const email = "early@example.com"
	inv := k.Invite(t, app.Demo, email, false)
	holder := app.NewClient(t)
	holder.SignIn(t, email)
	holder.CSRF(t)
	// Someone else with the code: the answer is decided by the code alone.
	other := app.NewClient(t)
	other.SignIn(t, "other@example.com")
	other.CSRF(t)

	for _, c := range []*testClient{holder, other} {
		r := c.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(inv.Code))
		if r.StatusCode != http.StatusNotFound || r.Body != deniedJSON {
			t.Fatalf("JSON: %d %q, want the generic 404", r.StatusCode, r.Body)
		}
		f := c.RedeemForm(t, inv.Code)
		if f.StatusCode != http.StatusNotFound || !strings.Contains(f.Body, redeemNotActiveMessage) || strings.Contains(f.Body, redeemDeniedMessage) {
			t.Fatalf("form: %d, not-active message shown=%v", f.StatusCode, strings.Contains(f.Body, redeemNotActiveMessage))
		}
		if strings.Contains(f.Body, inv.Code) || (c == other && strings.Contains(f.Body, email)) {
			t.Fatal("the page echoes the code or the entry's address")
		}
	}
	// A code nobody issued still reads as every other failure.
	if f := holder.RedeemForm(t, unknownCode(t)); f.StatusCode != http.StatusNotFound || !strings.Contains(f.Body, redeemDeniedMessage) ||
		strings.Contains(f.Body, redeemNotActiveMessage) {
		t.Fatalf("unknown code: %d, generic=%v", f.StatusCode, strings.Contains(f.Body, redeemDeniedMessage))
	}
	// Once the send is recorded, the same code works for its holder.
	if _, err := app.DB.RecordDelivery(context.Background(), k.Owner, inv.ID, store.DeliveryRecord{RequestKey: uuid.NewString(), Channel: "chat"}); err != nil {
		t.Fatal(err)
	}
	if f := holder.RedeemForm(t, inv.Code); f.StatusCode != http.StatusSeeOther {
		t.Fatalf("after the send: %d, want 303", f.StatusCode)
	}
}
