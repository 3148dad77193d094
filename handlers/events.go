package handlers

import (
	"admit/store"
	"admit/views"
	"net/http"
	"net/url"
	"strconv"
)

// eventRows converts audit events for the HTML views.
func eventRows(evs []store.Event) []views.EventRow {
	out := make([]views.EventRow, 0, len(evs))
	for _, ev := range evs {
		out = append(out, views.EventRow{ID: ev.ID, Type: ev.Type, ActorKind: string(ev.ActorKind), EntryID: ev.EntryID,
			At: ev.At, Details: sortedDetails(ev.Details)})
	}
	return out
}

// eventsQuery reads ?cursor= and ?limit= of the audit log.
func eventsQuery(r *http.Request) (cursor string, limit int, err error) {
	q, err := singleQuery(r.URL.RawQuery)
	if err != nil {
		return "", 0, err
	}
	if limit, err = pageLimit(q.Get("limit")); err != nil {
		return "", 0, err
	}
	return q.Get("cursor"), limit, nil
}

// handleEventsPage is a page of the program's audit log.
func (s *Server) handleEventsPage(w http.ResponseWriter, r *http.Request) error {
	cursor, limit, err := eventsQuery(r)
	if err != nil {
		return err
	}
	a, id := ownerActor(r), r.PathValue("id")
	p, err := s.db.ProgramByID(r.Context(), a, id)
	if err != nil {
		return err
	}
	page, err := s.db.ProgramEvents(r.Context(), a, id, cursor, limit)
	if err != nil {
		return err
	}
	v := views.EventsView{Program: programSummary(p), Events: eventRows(page.Events)}
	link := func(cursor string) string {
		q := url.Values{}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		if limit != 0 {
			q.Set("limit", strconv.Itoa(limit))
		}
		if len(q) == 0 {
			return views.OwnerURL("programs", p.ID, "events")
		}
		return views.OwnerURL("programs", p.ID, "events") + "?" + q.Encode()
	}
	if page.NextCursor != "" {
		v.NextURL = link(page.NextCursor)
	}
	if cursor != "" {
		v.FirstURL = link("")
	}
	c := s.chrome(w, r, "Audit log · "+p.Slug)
	return s.render(w, r, http.StatusOK, c, views.EventsPage(c, v))
}

// handleEventsAPI is a page of the program's audit log, newest first.
func (s *Server) handleEventsAPI(w http.ResponseWriter, r *http.Request) error {
	cursor, limit, err := eventsQuery(r)
	if err != nil {
		return err
	}
	page, err := s.db.ProgramEvents(r.Context(), ownerActor(r), r.PathValue("id"), cursor, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, eventPageJSON{Events: toEventsJSON(page.Events), NextCursor: nonEmpty(page.NextCursor)})
	return nil
}
