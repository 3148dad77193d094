package handlers

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"admit/store"

	"github.com/google/uuid"
)

// Every signup answer — a new address, a listed one, a replay, a refusal —
// leaves no earlier than the schedule's delay after the request arrived, on
// the JSON API and the form: the cheaper duplicate path cannot answer
// sooner. (How close the two paths' times are is measured by the timing
// benchmark, `just bench-timing`, not here.)
func TestSignup_EveryAnswerLeavesOnTheSchedule(t *testing.T) {
	const delay = 150 * time.Millisecond
	app := MustStartApp(t, withSignupDelay(delay))
	c := app.NewClient(t)
	listedKey := uuid.NewString()
	type attempt struct {
		name string
		send func() *testResponse
		want int
	}
	json := func(key, email string) func() *testResponse {
		return func() *testResponse { return c.PostJSON(t, "POST", signupAPI, signupJSONBody(key, email, 1, true)) }
	}
	form := func(key, email string) func() *testResponse {
		return func() *testResponse { return c.PostForm(t, signupPath, signupFormValues(key, email, 1, true)) }
	}
	for _, a := range []attempt{
		{"new address, JSON", json(listedKey, "listed@example.com"), http.StatusAccepted},
		{"listed address, JSON", json(uuid.NewString(), "listed@example.com"), http.StatusAccepted},
		{"new address, form", form(uuid.NewString(), "other@example.com"), http.StatusAccepted},
		{"listed address, form", form(uuid.NewString(), "listed@example.com"), http.StatusAccepted},
		{"replay", json(listedKey, "listed@example.com"), http.StatusAccepted},
		{"rebound key", json(listedKey, "third@example.com"), http.StatusConflict},
		{"invalid address", json(uuid.NewString(), "not-an-address"), http.StatusBadRequest},
	} {
		start := time.Now()
		r := a.send()
		if took := time.Since(start); took < delay {
			t.Errorf("%s: answered after %v, before the schedule's %v", a.name, took, delay)
		}
		if r.StatusCode != a.want {
			t.Errorf("%s: status %d, want %d", a.name, r.StatusCode, a.want)
		}
	}
	// A full hour: the refusal leaves on the schedule too.
	mustSetDemo(t, app, func(s *store.ProgramSettings) { s.HourlyCap = settingPtr(1) })
	start := time.Now()
	if r := json(uuid.NewString(), "late@example.com")(); r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("at the hour cap: status %d, want 429", r.StatusCode)
	}
	if took := time.Since(start); took < delay {
		t.Errorf("429 answered after %v, before the schedule's %v", took, delay)
	}
}

// A listed address's answer (the duplicate path) leaves on the same
// schedule as a new address's: not before the delay, and not measurably
// after the new address's either, which would tell the two apart as surely
// as an early answer; and both leave at the schedule's release, not later.
// The medians of alternating attempts are compared, so a busy machine
// slows both alike.
func TestSignup_DuplicateAnswersAreNotHeldLaterThanNewOnes(t *testing.T) {
	const delay = 150 * time.Millisecond
	app := MustStartApp(t, withSignupDelay(delay))
	c := app.NewClient(t)
	if r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "listed@example.com", 1, true)); r.StatusCode != http.StatusAccepted {
		t.Fatalf("first signup: status %d", r.StatusCode)
	}
	const rounds = 7
	var newTimes, listedTimes []time.Duration
	for i := range rounds {
		for _, listed := range []bool{false, true} {
			email := fmt.Sprintf("new%d@example.com", i)
			if listed {
				email = "listed@example.com"
			}
			start := time.Now()
			r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), email, 1, true))
			took := time.Since(start)
			if r.StatusCode != http.StatusAccepted {
				t.Fatalf("%s: status %d", email, r.StatusCode)
			}
			if took < delay {
				t.Errorf("%s answered after %v, before the schedule's %v", email, took, delay)
			}
			if listed {
				listedTimes = append(listedTimes, took)
			} else {
				newTimes = append(newTimes, took)
			}
		}
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	nm, lm := median(newTimes), median(listedTimes)
	// 25 ms is far above what the paths' own work differs by (both leave
	// at the schedule's release) and far below a hold that tells them apart.
	if lm > nm+25*time.Millisecond {
		t.Fatalf("listed addresses answered in a median %v, new ones in %v: the duplicate is held later", lm, nm)
	}
}
