package handlers

import (
	"net/http"

	"admit/store"
	"admit/views"
)

// statsJSON is GET /api/owner/programs/{id}/stats (docs/API.md#program-stats).
type statsJSON struct {
	Counts statCountsJSON `json:"counts"`
	Seats  seatsJSON      `json:"seats"`
	Daily  []dayJSON      `json:"daily"`
}

// statCountsJSON is the number of entries in each state the API names.
type statCountsJSON struct {
	Waiting   int `json:"waiting"`
	Selected  int `json:"selected"`
	Invited   int `json:"invited"`
	Active    int `json:"active"`
	Declined  int `json:"declined"`
	Withdrawn int `json:"withdrawn"`
}

type seatsJSON struct {
	Cap      int `json:"cap"`
	Used     int `json:"used"`
	Reserved int `json:"reserved"`
	Left     int `json:"left"`
}

// dayJSON is one UTC day's new entries.
type dayJSON struct {
	Day     string `json:"day"`
	Signups int    `json:"signups"`
}

func toStatsJSON(st *store.ProgramStats) statsJSON {
	c := st.Counts
	out := statsJSON{
		Counts: statCountsJSON{Waiting: c[store.StateWaiting], Selected: c[store.StateSelected], Invited: c[store.StateInvited],
			Active: c[store.StateActive], Declined: c[store.StateDeclined], Withdrawn: c[store.StateWithdrawn]},
		Seats: seatsJSON{Cap: st.Seats.Cap, Used: st.Seats.Used, Reserved: st.Seats.Reserved, Left: st.Seats.Left},
		Daily: make([]dayJSON, 0, len(st.Daily)),
	}
	for _, d := range st.Daily {
		out.Daily = append(out.Daily, dayJSON{Day: d.Day.UTC().Format("2006-01-02"), Signups: d.Signups})
	}
	return out
}

// handleStatsAPI is a program at a glance: counts by state, seats and
// signups per day for the last 30 UTC days, oldest first.
func (s *Server) handleStatsAPI(w http.ResponseWriter, r *http.Request) error {
	st, err := s.db.ProgramStats(r.Context(), ownerActor(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toStatsJSON(st))
	return nil
}

// glanceView is the program page's at-a-glance section.
func glanceView(st *store.ProgramStats) views.GlanceView {
	var g views.GlanceView
	for _, s := range store.EntryStates {
		// Revoked access is rare: it shows only once some entry has it.
		if s == store.StateRevoked && st.Counts[s] == 0 {
			continue
		}
		g.Counts = append(g.Counts, views.StateCount{State: s, N: st.Counts[s]})
	}
	g.Seats = views.SeatsView{Cap: st.Seats.Cap, Used: st.Seats.Used, Reserved: st.Seats.Reserved, Left: st.Seats.Left}
	for _, d := range st.Daily {
		g.Days = append(g.Days, views.DayView{Day: d.Day, Signups: d.Signups})
	}
	f := st.Funnel
	// The funnel counts entries that ever reached a step; its labels say
	// so, so that they do not read as the counts by state above them.
	g.Funnel = []views.FunnelStep{{Label: "Joined", N: f.Joined}, {Label: "Ever selected", N: f.Selected},
		{Label: "Ever invited", N: f.Invited}, {Label: "Redeemed", N: f.Redeemed}}
	return g
}
