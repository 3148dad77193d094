package handlers

import (
	"net/http"
	"strings"
	"testing"
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
