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

// parseQueueFilter reads the queue's query: state, the search q, cursor
// (or before, for the page before a position), limit, and the join-time
// window from (inclusive) and to. Each bound is RFC 3339 (to is then
// exclusive) or a UTC date YYYY-MM-DD (to then includes that day).
func parseQueueFilter(rawQuery string) (store.QueueFilter, views.QueueFilterView, error) {
	q, err := singleQuery(rawQuery)
	if err != nil {
		return store.QueueFilter{}, views.QueueFilterView{}, err
	}
	fv := views.QueueFilterView{State: q.Get("state"), Q: strings.Trim(q.Get("q"), " "), From: q.Get("from"), To: q.Get("to"), Limit: q.Get("limit")}
	if fv.Limit == strconv.Itoa(store.DefaultPageSize) {
		fv.Limit = ""
	}
	f := store.QueueFilter{State: fv.State, Query: fv.Q, Cursor: q.Get("cursor"), Before: q.Get("before")}
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

// queuePosition is a page's place in the queue: after a cursor, before
// one, or (both "") the first page.
type queuePosition struct{ cursor, before string }

// queueURL is the queue page with the given filter and position. rule: it
// carries only the filters that are set, so a URL says exactly what it
// shows and can be shared or bookmarked as is.
func queueURL(programID string, fv views.QueueFilterView, pos queuePosition, extra ...[2]string) string {
	q := url.Values{}
	pairs := [][2]string{{"state", fv.State}, {"q", fv.Q}, {"from", fv.From}, {"to", fv.To}, {"limit", fv.Limit},
		{"cursor", pos.cursor}, {"before", pos.before}}
	for _, kv := range append(pairs, extra...) {
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
	searchError := ""
	if store.ErrorCode(err) == store.EINVALID && store.ErrorField(err) == "q" {
		// rule: a refused search keeps the queue page and says why beside
		// the box (docs/console.md#the-queue).
		searchError, page, err = store.ErrorMessage(err), &store.QueuePage{}, nil
	}
	if err != nil {
		return nil, err
	}
	counts, err := s.db.StateCounts(ctx, a, p.ID)
	if err != nil {
		return nil, err
	}
	here := queuePosition{cursor: f.Cursor, before: f.Before}
	v := &views.QueueView{Program: programSummary(p), Counts: stateCountsView(counts), Filter: fv,
		States: store.EntryStates, SelfURL: queueURL(p.ID, fv, here),
		ClearURL:      queueURL(p.ID, views.QueueFilterView{}, queuePosition{}),
		ChooseAllURL:  queueURL(p.ID, fv, here, [2]string{"choose", "all"}),
		SelectReasons: store.SelectReasons, DeclineReasons: store.DeclineReasons, SearchError: searchError}
	total := 0
	for _, n := range counts {
		total += n
	}
	// The tabs keep the search and the window, and start at the first page.
	tab := fv
	tab.State = ""
	v.Tabs = append(v.Tabs, views.QueueTab{Label: "All", N: total, URL: queueURL(p.ID, tab, queuePosition{}), Current: fv.State == ""})
	for _, st := range store.EntryStates {
		tab.State = st
		v.Tabs = append(v.Tabs, views.QueueTab{State: st, Label: st, N: counts[st], URL: queueURL(p.ID, tab, queuePosition{}),
			Current: fv.State == st})
	}
	if page.NextCursor != "" {
		v.NextURL = queueURL(p.ID, fv, queuePosition{cursor: page.NextCursor})
	}
	if page.PrevCursor != "" {
		v.PrevURL = queueURL(p.ID, fv, queuePosition{before: page.PrevCursor})
		v.FirstURL = queueURL(p.ID, fv, queuePosition{})
	}
	for _, e := range page.Entries {
		v.Entries = append(v.Entries, views.QueueRow{ID: e.ID, Email: e.Email, State: e.State, CreatedAt: e.CreatedAt,
			NoticeVersion: e.NoticeVersion, SendNotRecorded: page.SendNotRecorded[e.ID]})
	}
	if q, _ := url.ParseQuery(rawQuery); q.Get("choose") == "all" {
		v.Checked = map[string]bool{}
		for _, e := range v.Entries {
			v.Checked[e.ID] = e.Choosable()
		}
	}
	return v, nil
}

// canonicalQuery reports whether the query names only filters that are
// set (and the page size only when it is not the default).
func canonicalQuery(rawQuery string) bool {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return true // the filter's parser answers it
	}
	for k, vs := range q {
		for _, v := range vs {
			if v == "" || (k == "limit" && v == strconv.Itoa(store.DefaultPageSize)) {
				return false
			}
		}
	}
	return true
}

// renderQueue writes the queue page, or only its block for htmx.
func (s *Server) renderQueue(w http.ResponseWriter, r *http.Request, status int, v *views.QueueView) error {
	c := s.chrome(r, "Queue · "+v.Program.Name)
	if wantsBlock(r) {
		// The address bar shows the page's own URL, without empty filters.
		if r.Method == http.MethodGet {
			w.Header().Set("HX-Push-Url", v.SelfURL)
		}
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
	// The filter form sends its empty fields too; the address shows only
	// the ones that are set.
	if !wantsBlock(r) && !canonicalQuery(r.URL.RawQuery) {
		return redirect(w, r, v.SelfURL)
	}
	v.Flash = s.cookieState(r).takeFlash()
	if v.SearchError != "" {
		return s.renderQueue(w, r, http.StatusBadRequest, v)
	}
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
