package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"admit/store"
	"admit/views"
)

// retryAfter is how long until a limit that counts per UTC hour resets:
// the signup and redemption attempt counters and a program's hourly
// intake, so the next hour's start, by the store's clock. A full queue is
// not one of them (signupLimitMessage).
func retryAfter(now time.Time) time.Duration {
	now = now.UTC()
	return now.Truncate(time.Hour).Add(time.Hour).Sub(now)
}

// retryAfterSeconds is Retry-After's value: whole seconds, rounded up so a
// client that waits exactly that long finds the new hour.
func retryAfterSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// setRetryAfter sends Retry-After on a 429 and returns, for the page, when
// to try again in words.
func (s *Server) setRetryAfter(w http.ResponseWriter) string {
	now := s.db.Now()
	d := retryAfter(now)
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(d)))
	return views.RetryWhen(now, d)
}

// retryMessage adds when to try again to a limit's message.
func retryMessage(message, when string) string {
	return strings.TrimSuffix(strings.TrimSuffix(message, "."), " later") + " later: " + when + "."
}

// signupLimitMessage is a refused signup's 429 message, one per limit
// (docs/signup.md#order-of-admission). A full queue says so and names no
// time: no place frees on the hour, only when someone leaves or the
// owner raises the cap. The hour's intake and the
// network's attempts say when their hour ends. Every 429 carries
// Retry-After (docs/API.md); for a full queue it is only a hint. None
// depends on the address.
func (s *Server) signupLimitMessage(w http.ResponseWriter, err error) string {
	if errors.Is(err, store.ErrQueueFull) {
		s.setRetryAfter(w)
		return store.ErrorMessage(err)
	}
	return retryMessage(store.ErrorMessage(err), s.setRetryAfter(w))
}
