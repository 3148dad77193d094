package handlers

import (
	"net/http"
	"strings"
	"testing"

	"admit/internal/clerkfake"
	"admit/store"
)

func TestSignup_QuestionsBeforeJoiningStoreNothingUntilAnswered(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	for _, tc := range []struct {
		name, email, question string
	}{
		{"capitals", "Ada@example.com", `data-testid="case-question"`},
		{"mistyped domain", "ada@gmial.com", `data-testid="domain-question"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dbFingerprint(t, app.DB)
			form := signupFormValues(formRequestKey(t, c.Get(t, signupPath).Body), tc.email, 1, true)
			form.Del("case")
			r := c.PostForm(t, signupPath, form, "Accept", browserAccept)
			if r.StatusCode != http.StatusOK || !strings.Contains(r.Body, tc.question) {
				t.Fatalf("status %d, asks=%v", r.StatusCode, strings.Contains(r.Body, tc.question))
			}
			if !strings.Contains(r.Body, `name="requestKey" value="`+form.Get("requestKey")+`"`) {
				t.Error("the question page does not keep the request key")
			}
			after := dbFingerprint(t, app.DB)
			delete(before, "network_counters")
			delete(after, "network_counters")
			if !sameRows(before, after) {
				t.Fatalf("asking changed the database:\n%v\n%v", before, after)
			}
			if strings.Contains(app.Logs.String(), tc.email) {
				t.Fatal("the log holds the address")
			}
		})
	}

	// A filled honeypot is refused as before, never asked.
	form := signupFormValues(formRequestKey(t, c.Get(t, signupPath).Body), "Bot@example.com", 1, true)
	form.Del("case")
	form.Set("website", "https://spam.example")
	if r := c.PostForm(t, signupPath, form, "Accept", browserAccept); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("honeypot with capitals: %d, want 400", r.StatusCode)
	}

	// Answered: small letters, and the suggested domain.
	form = signupFormValues(formRequestKey(t, c.Get(t, signupPath).Body), "Ada@gmial.com", 1, true)
	form.Set("case", "lower")
	form.Set("domain", "suggested")
	if r := c.PostForm(t, signupPath, form, "Accept", browserAccept); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("answered: %d, want 303", r.StatusCode)
	}
	if n := owCount(t, app, `SELECT count(*) FROM entries WHERE email_key = 'ada@gmail.com'`); n != 1 {
		t.Fatalf("entries for ada@gmail.com=%d, want 1", n)
	}
}

func TestClerk_AnUnverifiedAddressIsShownToItsOwnSessionOnly(t *testing.T) {
	app := MustStartApp(t, withClerk())
	app.Clerk.SetUser("user_unverified", clerkfake.Email{Address: "pending@example.com"})
	c := app.NewClient(t)
	c.SetClerkSession(t, "user_unverified")
	for _, path := range []string{"/me", "/redeem", "/me/account"} {
		r := c.Get(t, path)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", path, r.StatusCode)
		}
		for _, want := range []string{`data-testid="signed-in-address"`, "pending@example.com",
			`data-testid="address-unverified"`, "Clerk has not verified this address", `data-testid="signed-in-unverified"`} {
			if !strings.Contains(r.Body, want) {
				t.Errorf("%s lacks %q", path, want)
			}
		}
	}
	// Verified, the same pages name it without the warning.
	app.Clerk.SetUser("user_verified", clerkfake.Email{Address: "done@example.com", Verified: true})
	v := app.NewClient(t)
	v.SetClerkSession(t, "user_verified")
	r := v.Get(t, "/redeem")
	if !strings.Contains(r.Body, "done@example.com") || strings.Contains(r.Body, `data-testid="address-unverified"`) {
		t.Fatal("a verified address is not named, or is called unverified")
	}
}

func TestWaitlistPage_ShowsTheSignedInApplicantsOwnEntryInEachState(t *testing.T) {
	app := MustStartApp(t)
	k := newAccessKit(app)
	ctx := t.Context()
	setUp := map[string]func(email string){
		"waiting": func(email string) { k.Entry(t, app.Demo, email) },
		"selected": func(email string) {
			id := k.Entry(t, app.Demo, email)
			if _, err := app.DB.SelectEntry(ctx, k.Owner, app.Demo.ID, id, store.Decision{Reason: "meets_policy"}); err != nil {
				t.Fatal(err)
			}
		},
		"invited": func(email string) { k.Invite(t, app.Demo, email, true) },
		"declined": func(email string) {
			id := k.Entry(t, app.Demo, email)
			if _, err := app.DB.DeclineEntry(ctx, k.Owner, app.Demo.ID, id, store.Decision{Reason: "not_eligible"}); err != nil {
				t.Fatal(err)
			}
		},
	}
	for _, state := range []string{"waiting", "selected", "invited", "declined"} {
		t.Run(state, func(t *testing.T) {
			email := state + "@example.com"
			setUp[state](email)
			c := app.NewClient(t)
			c.SignIn(t, email)
			page := c.Get(t, "/waitlist/demo")
			if !strings.Contains(page.Body, `data-testid="own-entry"`) || !strings.Contains(page.Body, `data-state="`+state+`"`) ||
				!strings.Contains(page.Body, `href="/me"`) {
				t.Fatalf("the page does not show the %s entry with the way to /me", state)
			}
			if strings.Contains(page.Body, `data-testid="signup-form"`) {
				t.Fatal("the form is offered to an applicant already on the list")
			}
			if got := page.Header.Get("Cache-Control"); got != "private, no-store" {
				t.Errorf("Cache-Control=%q", got)
			}
			anon := app.NewClient(t).Get(t, "/waitlist/demo")
			if strings.Contains(anon.Body, `data-testid="own-entry"`) || !strings.Contains(anon.Body, `data-testid="signup-form"`) {
				t.Fatal("an anonymous visitor does not see the page as before")
			}
		})
	}
}
