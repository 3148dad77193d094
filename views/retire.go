package views

import (
	"strconv"
	"time"
)

// RetirementView is how far a retired program's bookkeeping has gone: the
// retirement itself took effect at once; its steps date every entry for
// erasure in the background.
type RetirementView struct {
	Pending     bool
	Done, Total int64
	// ErasedBy is when every entry's address will have been erased.
	ErasedBy *time.Time
}

// Count writes n with a thousands separator: 340,000.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// entriesText is "1 entry" or "n entries", with n formatted.
func entriesText(n int64) string {
	if n == 1 {
		return "1 entry"
	}
	return Count(n) + " entries"
}

// retireProgressText is the pending retirement's one sentence.
func retireProgressText(r RetirementView) string {
	if r.Total == 0 {
		return "Finishing the retirement: the program has no entries to schedule for erasure."
	}
	return "Finishing the retirement: " + Count(r.Done) + " of " + entriesText(r.Total) + " scheduled for erasure."
}

// retireDoneText says the retirement is finished and when the addresses go.
func retireDoneText(r RetirementView) string {
	on := func(whose string) string {
		if r.ErasedBy == nil {
			return "."
		}
		return ", and " + whose + " will be erased on " + DayLong(*r.ErasedBy) + "."
	}
	switch r.Total {
	case 0:
		return "The retirement is finished. The program had no entries to erase."
	case 1:
		return "The retirement is finished: its 1 entry is scheduled for erasure" + on("its address")
	}
	return "The retirement is finished: all " + entriesText(r.Total) + " are scheduled for erasure" + on("their addresses")
}

// int64Text is n in decimal, for attributes.
func int64Text(n int64) string { return strconv.FormatInt(n, 10) }

// RetireProgressID is the id of the progress block htmx polls.
const RetireProgressID = "retire-progress"
