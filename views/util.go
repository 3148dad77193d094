package views

import (
	"strconv"
	"strings"
	"time"
)

func statusText(status int) string { return strconv.Itoa(status) }

func openText(open, retired bool) string {
	switch {
	case retired:
		return "retired"
	case open:
		return "open"
	}
	return "closed"
}

func onText(on bool) string {
	if on {
		return "enabled"
	}
	return "off"
}

// RetryWhen says when a limit that resets at the next UTC hour can be tried
// again: "after 11:00 UTC (in about 23 minutes)".
func RetryWhen(now time.Time, wait time.Duration) string {
	at := now.UTC().Add(wait)
	mins := int((wait + time.Minute - 1) / time.Minute)
	in := "in about " + plural(mins, "minute")
	if mins <= 1 {
		in = "in less than a minute"
	}
	return "after " + at.Format("15:04") + " UTC (" + in + ")"
}

// LocalHasCapitals reports whether an address has capital letters before
// its @ (the part admit keeps as typed).
func LocalHasCapitals(email string) bool {
	at := strings.LastIndexByte(email, '@')
	return at > 0 && strings.ToLower(email[:at]) != email[:at]
}

// domainOf is the part of an address after its last @ ("" for none).
func domainOf(email string) string {
	return email[strings.LastIndexByte(email, '@')+1:]
}

// fromNow says how long from now t is, for a date shown to the public:
// " (in 30 days)", " (in 5 hours)"; "" when now is unknown or t has passed.
func fromNow(now, t time.Time) string {
	d := t.Sub(now)
	switch {
	case now.IsZero() || d <= 0:
		return ""
	case d >= 36*time.Hour:
		return " (in " + plural(int((d+12*time.Hour)/(24*time.Hour)), "day") + ")"
	case d >= time.Hour:
		return " (in about " + plural(int((d+30*time.Minute)/time.Hour), "hour") + ")"
	}
	return " (in less than an hour)"
}
