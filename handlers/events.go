package handlers

import (
	"net/http"
	"net/url"
	"strconv"

	"admit/store"
	"admit/views"
)

// eventRows converts audit events for the HTML views.
func eventRows(evs []store.Event) []views.EventRow {
	out := make([]views.EventRow, 0, len(evs))
	for _, ev := range evs {
		out = append(out, views.EventRow{ID: ev.ID, Type: ev.Type, ActorKind: string(ev.ActorKind), EntryID: ev.EntryID,
			EntryEmail: ev.EntryEmail, At: ev.At, Details: ev.Details, ActorID: ev.ActorID, ActorName: ev.ActorName,
			ActorFormer: ev.ActorFormer})
	}
	return out
}

// eventsQuery reads the audit log's ?type=, ?entry= (an entry ID), ?cursor=
// and ?limit=. blank reports a filter (type or entry) given with no value:
// the page answers it with the same URL without it.
func eventsQuery(r *http.Request) (f store.EventFilter, blank bool, err error) {
	q, err := singleQuery(r.URL.RawQuery)
	if err != nil {
		return f, false, err
	}
	for _, k := range []string{"type", "entry"} {
		if vs, ok := q[k]; ok && vs[0] == "" {
			blank = true
		}
	}
	if f.Limit, err = pageLimit(q.Get("limit")); err != nil {
		return f, blank, err
	}
	f.Type, f.EntryID, f.Cursor = q.Get("type"), q.Get("entry"), q.Get("cursor")
	return f, blank, nil
}

// eventsURL is the audit log page with only the filters that are set.
func eventsURL(programID string, f store.EventFilter) string {
	q := url.Values{}
	for k, v := range map[string]string{"type": f.Type, "entry": f.EntryID, "cursor": f.Cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Limit != 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	u := views.OwnerURL("programs", programID, "events")
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// handleEventsPage is a page of the program's audit log, filtered by the
// query. A filter left empty is dropped from the URL by a redirect, so a
// plain GET form and a shared link read the same.
func (s *Server) handleEventsPage(w http.ResponseWriter, r *http.Request) error {
	f, blank, err := eventsQuery(r)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if blank {
		return redirect(w, r, eventsURL(id, f))
	}
	v, err := s.eventsView(r, f)
	if err != nil {
		return err
	}
	return s.renderEvents(w, r, http.StatusOK, v)
}

// eventsView loads one page of the filtered log.
func (s *Server) eventsView(r *http.Request, f store.EventFilter) (*views.EventsView, error) {
	a, id := ownerActor(r), r.PathValue("id")
	p, err := s.db.ProgramByID(r.Context(), a, id)
	if err != nil {
		return nil, err
	}
	page, err := s.db.FilteredEvents(r.Context(), a, id, f)
	if err != nil {
		return nil, err
	}
	v := &views.EventsView{Program: programSummary(p), Events: eventRows(page.Events), Type: f.Type, EntryID: f.EntryID}
	if page.NextCursor != "" {
		next := f
		next.Cursor = page.NextCursor
		v.NextURL = eventsURL(p.ID, next)
	}
	if f.Cursor != "" {
		first := f
		first.Cursor = ""
		v.FirstURL = eventsURL(p.ID, first)
	}
	if f.Type != "" || f.EntryID != "" {
		v.ClearURL = eventsURL(p.ID, store.EventFilter{Limit: f.Limit})
	}
	if f.EntryID != "" {
		v.EntryLabel = "entry " + views.EntrySuffix(f.EntryID)
		for _, ev := range page.Events {
			if ev.EntryEmail != "" {
				v.EntryLabel = ev.EntryEmail
				break
			}
		}
		v.FilterEntry = f.EntryID
	}
	return v, nil
}

func (s *Server) renderEvents(w http.ResponseWriter, r *http.Request, status int, v *views.EventsView) error {
	c := s.chrome(r, "Audit log · "+v.Program.Name)
	return s.render(w, r, status, c, views.EventsPage(c, *v))
}

// handleEventsFilter is the audit log's filter form. It finds the entry the
// owner named by address or ID, then answers 303 to the log with only the
// filters set, carrying the entry's ID, never an address.
func (s *Server) handleEventsFilter(w http.ResponseWriter, r *http.Request) error {
	fr, err := readForm(r)
	if err != nil {
		return err
	}
	typ, entry := fr.get("type"), fr.get("entry")
	if fr.err != nil {
		return fr.err
	}
	f := store.EventFilter{Type: typ}
	if entry != "" {
		f.EntryID, err = s.db.EntryIDFor(r.Context(), ownerActor(r), r.PathValue("id"), entry)
	}
	if err == nil && f.Type != "" && !oneOfTypes(f.Type) {
		err = store.Errorf(store.EINVALID, "Choose an event type from the list.")
	}
	if err != nil {
		status, msg, ok := formFailure(err)
		if !ok {
			return err
		}
		// A filter that could not be applied shows no events, never the
		// whole log as if it matched.
		p, lerr := s.db.ProgramByID(r.Context(), ownerActor(r), r.PathValue("id"))
		if lerr != nil {
			return lerr
		}
		v := &views.EventsView{Program: programSummary(p), Type: validTypeOrEmpty(typ), Error: msg, FilterEntry: entry,
			ClearURL: eventsURL(p.ID, store.EventFilter{})}
		return s.renderEvents(w, r, status, v)
	}
	return redirect(w, r, eventsURL(r.PathValue("id"), f))
}

func oneOfTypes(t string) bool {
	for _, x := range store.EventTypes {
		if x == t {
			return true
		}
	}
	return false
}

func validTypeOrEmpty(t string) string {
	if oneOfTypes(t) {
		return t
	}
	return ""
}

// handleEventsAPI is a page of the program's audit log, newest first,
// filtered by ?type= and ?entry= (an entry ID).
func (s *Server) handleEventsAPI(w http.ResponseWriter, r *http.Request) error {
	f, _, err := eventsQuery(r)
	if err != nil {
		return err
	}
	page, err := s.db.FilteredEvents(r.Context(), ownerActor(r), r.PathValue("id"), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, eventPageJSON{Events: toEventsJSON(page.Events), NextCursor: nonEmpty(page.NextCursor)})
	return nil
}
