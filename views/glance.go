package views

import (
	"strconv"
	"time"
)

// GlanceView is a program at a glance: its entries by state, its seats,
// its signups per day and its funnel.
type GlanceView struct {
	// Counts holds every state in lifecycle order, zero ones included
	// (revoked only when some entry is).
	Counts []StateCount
	Seats  SeatsView
	Days   []DayView
	Funnel []FunnelStep
}

// SeatsView is how the seat cap is taken.
type SeatsView struct {
	Cap, Used, Reserved, Left int
}

// DayView is one UTC day's new entries.
type DayView struct {
	Day     time.Time
	Signups int
}

// FunnelStep is how many entries ever reached a step.
type FunnelStep struct {
	Label string
	N     int
}

// The signup chart's drawing box, in SVG user units; the SVG scales to its
// container's width.
const (
	chartW, chartH   = 600, 180
	chartTop         = 12
	chartBarGapRatio = 0.25
)

// ChartBar is one day's bar, placed in the chart's drawing box.
type ChartBar struct {
	X, Y, W, H string
	Label      string
}

// chartMax is the chart's top value: the busiest day, at least 1.
func chartMax(days []DayView) int {
	m := 1
	for _, d := range days {
		m = max(m, d.Signups)
	}
	return m
}

// chartTopLabel is the number written at the top of the chart's axis: the
// busiest day's signups, 0 when there were none (the bars are drawn against
// chartMax, which is at least 1).
func chartTopLabel(days []DayView) int {
	m := 0
	for _, d := range days {
		m = max(m, d.Signups)
	}
	return m
}

// totalCount adds up counts by state.
func totalCount(counts []StateCount) int64 {
	var n int64
	for _, sc := range counts {
		n += int64(sc.N)
	}
	return n
}

// chartBars lays the days out left to right, oldest first.
func chartBars(days []DayView) []ChartBar {
	if len(days) == 0 {
		return nil
	}
	plot := float64(chartH - chartTop)
	slot := float64(chartW) / float64(len(days))
	w := slot * (1 - chartBarGapRatio)
	top := float64(chartMax(days))
	out := make([]ChartBar, 0, len(days))
	for i, d := range days {
		h := plot * float64(d.Signups) / top
		if d.Signups > 0 && h < 2 {
			h = 2 // a day with signups is always visible
		}
		out = append(out, ChartBar{X: num(float64(i)*slot + (slot-w)/2), Y: num(float64(chartH) - h),
			W: num(w), H: num(h), Label: dayText(d.Day) + ": " + signupsText(d.Signups)})
	}
	return out
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// dayText names a UTC day, e.g. "1 Dec".
func dayText(t time.Time) string { return t.UTC().Format("2 Jan") }

// DayLong names a UTC day with its year in the one date format admit shows
// everywhere, e.g. "1 Dec 2026".
func DayLong(t time.Time) string { return t.UTC().Format("2 Jan 2006") }

func signupsText(n int) string {
	if n == 1 {
		return "1 signup"
	}
	return strconv.Itoa(n) + " signups"
}

// chartSummary is the chart's text alternative in one sentence.
func chartSummary(days []DayView) string {
	if len(days) == 0 {
		return "No days to show."
	}
	total, best := 0, days[0]
	for _, d := range days {
		total += d.Signups
		if d.Signups > best.Signups {
			best = d
		}
	}
	s := signupsText(total) + " from " + dayText(days[0].Day) + " to " + dayText(days[len(days)-1].Day) + " (UTC)"
	if total == 0 {
		return s + "."
	}
	return s + "; the busiest day was " + dayText(best.Day) + " with " + signupsText(best.Signups) + "."
}

// percentOf is n as a whole percentage of of ("—" when of is 0).
func percentOf(n, of int) string {
	if of == 0 {
		return "—"
	}
	return strconv.Itoa(n*100/of) + "%"
}

// stateLabel names an entry state for people.
func stateLabel(s string) string {
	switch s {
	case "waiting":
		return "Waiting"
	case "selected":
		return "Selected"
	case "invited":
		return "Invited"
	case "active":
		return "Active"
	case "declined":
		return "Declined"
	case "withdrawn":
		return "Withdrawn"
	case "revoked":
		return "Access revoked"
	}
	return s
}

// retiredOn says when a program was retired.
func retiredOn(p ProgramSummary) string {
	if p.RetiredAt == nil {
		return "Retired"
	}
	return "Retired on " + DayLong(*p.RetiredAt)
}

// erasedOn completes retiredOn with the day every entry's address is gone.
func erasedOn(p ProgramSummary) string {
	if p.EntriesErasedBy == nil {
		return "."
	}
	return ", entries erased on " + DayLong(*p.EntriesErasedBy) + "."
}
