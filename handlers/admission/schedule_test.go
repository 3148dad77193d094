package admission

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

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
			sch := &Schedule{delay: 5 * time.Millisecond}
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

// The schedule's release is its delay after the request reached it,
// exactly: not a later moment (TestSignup_DuplicateAnswersAreNotHeldLater-
// ThanNewOnes compares the two paths; this pins the release itself, with
// no wall-clock bound a busy machine could break).
func TestAnswerSchedule_ReleasesAtItsDelayAfterArrival(t *testing.T) {
	const delay = 150 * time.Millisecond
	sch := &Schedule{delay: delay}
	var entered time.Time
	var release time.Time
	h := sch.OnSchedule(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered = time.Now()
		release = w.(*heldWriter).release
		w.WriteHeader(http.StatusAccepted)
	}))
	before := time.Now()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", nil))
	if release.Before(before.Add(delay)) || release.After(entered.Add(delay)) {
		t.Fatalf("release %v after the request arrived, want exactly the delay %v (between %v and %v)",
			release.Sub(before), delay, delay, entered.Add(delay).Sub(before))
	}
}
