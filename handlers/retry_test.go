package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestRetryAfter_IsTheSecondsToTheNextUTCHour(t *testing.T) {
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		now  time.Time
		want int
	}{
		{base, 3600},
		{base.Add(37*time.Minute + 20*time.Second), 1360},
		{base.Add(59*time.Minute + 59*time.Second + 500*time.Millisecond), 1},
		{base.Add(time.Nanosecond), 3600},
		// Another zone's clock is read in UTC.
		{base.Add(30 * time.Minute).In(time.FixedZone("x", 5*3600+45*60)), 1800},
	} {
		if got := retryAfterSeconds(retryAfter(tc.now)); got != tc.want {
			t.Errorf("at %s: Retry-After %d, want %d", tc.now.Format(time.RFC3339Nano), got, tc.want)
		}
	}
}

func TestSignup_429SaysWhenToTryAgainWithRetryAfter(t *testing.T) {
	app := MustStartApp(t, withNetworkLimit(1))
	app.Clock.Set(time.Date(2026, 11, 29, 10, 37, 20, 0, time.UTC))
	c := app.NewClient(t)
	if r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "first@example.com", 1, true)); r.StatusCode != http.StatusAccepted {
		t.Fatalf("first signup: %d", r.StatusCode)
	}
	r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "second@example.com", 1, true))
	if r.StatusCode != http.StatusTooManyRequests || r.Body != "{\"error\":\"rate_limited\"}\n" {
		t.Fatalf("JSON: %d %q, want 429 rate_limited", r.StatusCode, r.Body)
	}
	if got, want := r.Header.Get("Retry-After"), "1360"; got != want {
		t.Fatalf("JSON Retry-After %q, want %q", got, want)
	}

	app.Clock.Set(time.Date(2026, 11, 29, 10, 50, 0, 0, time.UTC))
	for _, accept := range []string{"", browserAccept} {
		r = c.PostForm(t, signupPath, signupFormValues(uuid.NewString(), "third@example.com", 1, true), "Accept", accept)
		if r.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("form (Accept %q): %d, want 429", accept, r.StatusCode)
		}
		if got, want := r.Header.Get("Retry-After"), "600"; got != want {
			t.Fatalf("form Retry-After %q, want %q", got, want)
		}
		summary := between(t, r.Body, `data-testid="error-summary"`, `</div>`)
		if want := "after 11:00 UTC (in about 10 minutes)"; !strings.Contains(summary, want) {
			t.Fatalf("the form's summary does not say %q:\n%s", want, summary)
		}
	}
}

func TestErrorPage_429FromTheAdapterSaysWhenAndSendsRetryAfter(t *testing.T) {
	app := MustStartApp(t)
	k := newAccessKit(app)
	const email = "limited@example.com"
	k.Entry(t, app.Demo, email)
	app.Clock.Set(time.Date(2026, 11, 29, 10, 15, 0, 0, time.UTC))
	c := app.NewClient(t)
	c.SignIn(t, email)
	tok := c.CSRF(t)
	for i := range RedeemAccountHourlyLimit {
		if r := c.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(unknownCode(t))); r.StatusCode != http.StatusNotFound {
			t.Fatalf("attempt %d: %d, want 404", i+1, r.StatusCode)
		}
	}
	r := c.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(unknownCode(t)))
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "2700" {
		t.Fatalf("JSON redeem over the limit: %d Retry-After %q, want 429 2700", r.StatusCode, r.Header.Get("Retry-After"))
	}
	r = c.PostForm(t, "/redeem", url.Values{"csrf": {tok}, "code": {unknownCode(t)}})
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "2700" {
		t.Fatalf("form redeem over the limit: %d Retry-After %q, want 429 2700", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if want := "after 11:00 UTC (in about 45 minutes)"; !strings.Contains(r.Body, want) {
		t.Fatalf("the redeem page does not say %q", want)
	}
}

func TestPrivacy_StatesTheNetworkLimitTheServerRunsWith(t *testing.T) {
	for _, n := range []int{7, 250} {
		app := MustStartApp(t, withNetworkLimit(n))
		body := app.NewClient(t).Get(t, "/privacy").Body
		want := fmt.Sprintf("<strong>%d signup attempts per UTC hour</strong>", n)
		if !strings.Contains(body, want) {
			t.Fatalf("limit %d: the privacy page lacks %s", n, want)
		}
		if !strings.Contains(body, fmt.Sprintf("%d per account and %d per network", RedeemAccountHourlyLimit, RedeemNetworkHourlyLimit)) {
			t.Fatal("the privacy page lacks the redemption limits")
		}
	}
}

func TestForms_ErrorsComeWithASummaryLinkedToTheFieldsAndOneStyle(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	for _, tc := range []struct {
		name        string
		form        url.Values
		path        string
		field, link string
	}{
		{"bad email", signupFormValues(uuid.NewString(), "jane@@example.com", 1, true), signupPath, "email-error", `href="#email"`},
		{"unticked choice", signupFormValues(uuid.NewString(), "jane@example.com", 1, false), signupPath, "permission-error", `href="#permission"`},
		{"malformed token", url.Values{"token": {"nope"}}, "/manage/remove", "token-error", `href="#token"`},
		{"bad sign-in address", url.Values{"email": {"nope"}}, "/dev/sign-in", "email-error", `href="#email"`},
	} {
		r := c.PostForm(t, tc.path, tc.form)
		if r.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: %d, want 400", tc.name, r.StatusCode)
		}
		summary := between(t, r.Body, `<div id="error-summary"`, `</div>`)
		for _, want := range []string{`role="alert"`, `tabindex="-1"`, `autofocus`, tc.link} {
			if !strings.Contains(summary, want) {
				t.Errorf("%s: the summary lacks %s:\n%s", tc.name, want, summary)
			}
		}
		if i, j := strings.Index(r.Body, `id="error-summary"`), strings.Index(r.Body, "<h1"); i > j {
			t.Errorf("%s: the summary is not at the top", tc.name)
		}
		// Every field's message is the same element in the same style.
		if want := `<small id="` + tc.field + `" class="field-error" data-testid="` + tc.field + `">`; !strings.Contains(r.Body, want) {
			t.Errorf("%s: the field's message is not %s", tc.name, want)
		}
	}
}

// between returns body from the first from to the next to after it.
func between(tb testing.TB, body, from, to string) string {
	tb.Helper()
	i := strings.Index(body, from)
	if i < 0 {
		tb.Fatalf("no %s in the page", from)
	}
	j := strings.Index(body[i:], to)
	if j < 0 {
		return body[i:]
	}
	return body[i : i+j+len(to)]
}
