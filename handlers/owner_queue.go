package handlers

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"admit/store"
	"admit/views"
)

// parseQueueFilter reads the queue's query: state, cursor, limit, and the
// join-time window from (inclusive) and to. Each bound is RFC 3339 (to is
// then exclusive) or a UTC date YYYY-MM-DD (to then includes that day).
func parseQueueFilter(rawQuery string) (store.QueueFilter, views.QueueFilterView, error) {
	q, err := singleQuery(rawQuery)
	if err != nil {
		return store.QueueFilter{}, views.QueueFilterView{}, err
	}
	fv := views.QueueFilterView{State: q.Get("state"), From: q.Get("from"), To: q.Get("to"), Limit: q.Get("limit")}
	f := store.QueueFilter{State: fv.State, Cursor: q.Get("cursor")}
	if f.Limit, err = pageLimit(fv.Limit); err != nil {
		return f, fv, err
	}
	if f.From, err = parseBound(fv.From, false); err != nil {
		return f, fv, err
	}
	if f.To, err = parseBound(fv.To, true); err != nil {
		return f, fv, err
	}
	return f, fv, nil
}

// parseBound parses one end of the time window; "" is unbounded.
func parseBound(v string, end bool) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	return store.TimeBound(v, end)
}

// queueURL is the queue page with the given filter and position.
func queueURL(programID string, fv views.QueueFilterView, cursor string) string {
	q := url.Values{}
	for _, kv := range [][2]string{{"state", fv.State}, {"from", fv.From}, {"to", fv.To}, {"limit", fv.Limit}, {"cursor", cursor}} {
		if kv[1] != "" {
			q.Set(kv[0], kv[1])
		}
	}
	u := views.OwnerURL("programs", programID, "entries")
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// queueView loads a page of the queue for the HTML console.
func (s *Server) queueView(r *http.Request, programID string, rawQuery string) (*views.QueueView, error) {
	ctx, a := r.Context(), ownerActor(r)
	f, fv, err := parseQueueFilter(rawQuery)
	if err != nil {
		return nil, err
	}
	p, err := s.db.ProgramByID(ctx, a, programID)
	if err != nil {
		return nil, err
	}
	page, err := s.db.Queue(ctx, a, p.ID, f)
	if err != nil {
		return nil, err
	}
	counts, err := s.db.StateCounts(ctx, a, p.ID)
	if err != nil {
		return nil, err
	}
	v := &views.QueueView{Program: programSummary(p), Counts: stateCountsView(counts), Filter: fv,
		States: store.EntryStates, SelfURL: queueURL(p.ID, fv, f.Cursor), SelectReasons: store.SelectReasons}
	if v.Filter.Limit == "" {
		v.Filter.Limit = strconv.Itoa(store.DefaultPageSize)
	}
	if page.NextCursor != "" {
		v.NextURL = queueURL(p.ID, fv, page.NextCursor)
	}
	if f.Cursor != "" {
		v.FirstURL = queueURL(p.ID, fv, "")
	}
	for _, e := range page.Entries {
		v.Entries = append(v.Entries, views.QueueRow{ID: e.ID, Email: e.Email, State: e.State, CreatedAt: e.CreatedAt,
			NoticeVersion: e.NoticeVersion})
	}
	return v, nil
}

// renderQueue writes the queue page, or only its block for htmx.
func (s *Server) renderQueue(w http.ResponseWriter, r *http.Request, status int, v *views.QueueView) error {
	c := s.chrome(w, r, "Queue · "+v.Program.Slug)
	if wantsBlock(r) {
		return s.render(w, r, status, c, views.QueueBlock(c, *v))
	}
	return s.render(w, r, status, c, views.QueuePage(c, *v))
}

// handleQueuePage is the queue: a bounded page, filtered by state and join
// time, with keyset paging that works as plain links.
func (s *Server) handleQueuePage(w http.ResponseWriter, r *http.Request) error {
	v, err := s.queueView(r, r.PathValue("id"), r.URL.RawQuery)
	if err != nil {
		return err
	}
	v.Flash = s.takeFlash(w, r)
	return s.renderQueue(w, r, http.StatusOK, v)
}

// handleQueueAPI is GET …/entries: {entries, nextCursor}.
func (s *Server) handleQueueAPI(w http.ResponseWriter, r *http.Request) error {
	f, _, err := parseQueueFilter(r.URL.RawQuery)
	if err != nil {
		return err
	}
	page, err := s.db.Queue(r.Context(), ownerActor(r), r.PathValue("id"), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, queuePageJSON{Entries: toEntriesJSON(page.Entries), NextCursor: nonEmpty(page.NextCursor)})
	return nil
}

// queueReturn is where a queue form leads back to: its "next" field when it
// is this program's queue, the first page otherwise.
func queueReturn(programID, next string) string {
	base := views.OwnerURL("programs", programID, "entries")
	if safeRedirect(next) && (next == base || strings.HasPrefix(next, base+"?")) {
		return next
	}
	return base
}

// readBulkSelectForm reads the queue's select form: the chosen entries and
// the reason, and the queue page to return to.
func readBulkSelectForm(r *http.Request) (next string, in store.Selection, err error) {
	f, err := readForm(r)
	if err != nil {
		return "", store.Selection{}, err
	}
	in.Reason, next = f.get("reason"), queueReturn(r.PathValue("id"), f.get("next"))
	in.EntryIDs = r.PostForm["entryIds"]
	return next, in, f.err
}

// handleBulkSelect selects every chosen waiting entry in one transaction
// (all or none) and returns to the same queue page.
func (s *Server) handleBulkSelect(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	next, in, err := readBulkSelectForm(r)
	failed := func(err error) error {
		status, msg, ok := formFailure(err)
		if !ok {
			return err
		}
		u, _ := url.Parse(next)
		v, lerr := s.queueView(r, id, u.RawQuery)
		if lerr != nil {
			return lerr
		}
		v.Error, v.Reason, v.Checked = msg, in.Reason, map[string]bool{}
		for _, e := range in.EntryIDs {
			v.Checked[e] = true
		}
		return s.renderQueue(w, r, status, v)
	}
	if err != nil {
		return failed(err)
	}
	done, err := s.db.SelectEntries(r.Context(), ownerActor(r), id, in)
	if err != nil {
		return failed(err)
	}
	s.setFlash(w, r, selectedText(len(done)))
	return redirect(w, r, next)
}

func selectedText(n int) string {
	if n == 1 {
		return "Selected 1 entry."
	}
	return "Selected " + strconv.Itoa(n) + " entries."
}

// handleBulkSelectAPI selects several waiting entries at once, all or none
// (POST …/entries/select): 200 {entries}.
func (s *Server) handleBulkSelectAPI(w http.ResponseWriter, r *http.Request) error {
	var sel store.Selection
	if err := decodeJSON(r, &sel); err != nil {
		return err
	}
	es, err := s.db.SelectEntries(r.Context(), ownerActor(r), r.PathValue("id"), sel)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": toEntriesJSON(es)})
	return nil
}
