package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"admit/views"
)

// retryAfter is how long until every limit a 429 stands for resets: the
// signup and redemption attempt counters and a program's hourly intake
// all count per UTC hour, so the next hour's start, by the store's clock.
// A full queue frees no place on the hour, but trying again sooner
// cannot help either.
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
