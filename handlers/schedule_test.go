package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
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

// The last stretch before a release yields in a loop only when the answer
// is the only one in progress; beside others it sleeps to the release, and
// neither leaves early. What is checked is the choice the writer makes and
// that it never releases early, not how many turns the loop took: on a busy
// machine the sleep may wake after the release, with no turn left to take.
func TestHeldWriter_YieldsBeforeTheReleaseOnlyWhenAlone(t *testing.T) {
	for _, tc := range []struct {
		name       string
		inProgress int64
		spin       time.Duration
	}{
		{"alone", 1, releaseSpin},
		{"beside another", 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sch := &answerSchedule{delay: 5 * time.Millisecond}
			sch.inProgress.Store(tc.inProgress)
			w := &heldWriter{ResponseWriter: httptest.NewRecorder(), ctx: context.Background(),
				release: time.Now().Add(sch.delay), sch: sch}
			w.WriteHeader(http.StatusAccepted)
			if now := time.Now(); now.Before(w.release) {
				t.Fatalf("released %v early", w.release.Sub(now))
			}
			if got, want := w.spin, tc.spin; got != want {
				t.Errorf("yields through the last %v before the release, want %v", got, want)
			}
			// A timer never fires early, so a writer that slept to the
			// release has no turn of the loop left.
			if tc.spin == 0 && w.yields != 0 {
				t.Errorf("yielded %d times beside another signup, want a sleep only", w.yields)
			}
		})
	}
}
