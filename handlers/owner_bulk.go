package handlers

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"admit/store"
	"admit/views"
)

// bulkAction is one of the queue's actions on several entries at once: the
// store operation, the form field holding its reason, and what the flash
// says after it.
type bulkAction struct {
	do          func(db *store.DB, r *http.Request, sel store.Selection) ([]store.Entry, error)
	reasonField string
	done        func(n int) string
	// confirm is true for an action that asks first (docs/console.md#dangerous-actions).
	confirm bool
}

var (
	bulkSelectAction = bulkAction{func(db *store.DB, r *http.Request, sel store.Selection) ([]store.Entry, error) {
		return db.SelectEntries(r.Context(), ownerActor(r), r.PathValue("id"), sel)
	}, "reason", func(n int) string { return countText(n, "Selected") }, false}
	bulkDeclineAction = bulkAction{func(db *store.DB, r *http.Request, sel store.Selection) ([]store.Entry, error) {
		return db.DeclineEntries(r.Context(), ownerActor(r), r.PathValue("id"), sel)
	}, "declineReason", func(n int) string { return countText(n, "Declined") }, true}
)

// bulkForm is the queue's form as submitted: the chosen entries, the
// reasons, the page to return to, and whether the owner has confirmed.
type bulkForm struct {
	next          string
	in            store.Selection
	reason        string
	declineReason string
	confirmed     bool
}

// readBulkForm reads the queue's form for act.
func readBulkForm(r *http.Request, act bulkAction) (bulkForm, error) {
	f, err := readForm(r)
	if err != nil {
		return bulkForm{}, err
	}
	b := bulkForm{next: queueReturn(r.PathValue("id"), f.get("next")), reason: f.get("reason"),
		declineReason: f.get("declineReason"), confirmed: f.get("confirmed") == "yes"}
	b.in = store.Selection{EntryIDs: r.PostForm["entryIds"], Reason: f.get(act.reasonField)}
	return b, f.err
}

// handleBulk is the queue's form for one bulk action: all chosen entries
// or none, then back to the same queue page. A dangerous action first
// answers a confirmation page naming the entries (nothing changes), whose
// form sends the same fields again with confirmed=yes.
func (s *Server) handleBulk(act bulkAction) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id := r.PathValue("id")
		b, err := readBulkForm(r, act)
		failed := func(err error) error {
			status, msg, ok := formFailure(err)
			if !ok {
				return err
			}
			u, _ := url.Parse(b.next)
			v, lerr := s.queueView(r, id, u.RawQuery)
			if lerr != nil {
				return lerr
			}
			v.Error, v.Reason, v.DeclineReason, v.Checked = msg, b.reason, b.declineReason, map[string]bool{}
			if store.ErrorField(err) == "reason" {
				v.ErrorField = "bulk-reason"
				if act.reasonField == "declineReason" {
					v.ErrorField = "bulk-decline-reason"
				}
			}
			for _, e := range b.in.EntryIDs {
				v.Checked[e] = true
			}
			return s.renderQueue(w, r, status, v)
		}
		if err != nil {
			return failed(err)
		}
		// rule: the reason for declining is asked in the confirmation, as
		// for one entry (docs/console.md#dangerous-actions): the first step
		// needs only the chosen entries, and a confirmation without a
		// reason is asked again.
		if act.confirm && !b.confirmed {
			return s.confirmBulkDecline(w, r, b, "", failed)
		}
		if act.confirm && !slices.Contains(store.DeclineReasons, b.in.Reason) {
			return s.confirmBulkDecline(w, r, b, "Choose a reason for declining.", failed)
		}
		done, err := act.do(s.db, r, b.in)
		if err != nil {
			return failed(err)
		}
		s.cookieState(r).Flash = act.done(len(done))
		return redirect(w, r, b.next)
	}
}

// countText is a flash for a bulk action: "Selected 1 entry.",
// "Declined 3 entries."
func countText(n int, verb string) string {
	if n == 1 {
		return verb + " 1 entry."
	}
	return verb + " " + strconv.Itoa(n) + " entries."
}

// confirmBulkDecline answers the queue's decline with the confirmation
// page: the chosen entries, what declining does and the reason to choose.
// The choice is checked first, so the page never asks to confirm something
// that cannot be sent. refused, when set, is why the last confirmation was
// not applied (400).
func (s *Server) confirmBulkDecline(w http.ResponseWriter, r *http.Request, b bulkForm, refused string, failed func(error) error) error {
	ctx, a := r.Context(), ownerActor(r)
	entries, err := s.db.EntriesByID(ctx, a, r.PathValue("id"), b.in.EntryIDs)
	if err != nil {
		return failed(err)
	}
	p, err := s.db.ProgramByID(ctx, a, r.PathValue("id"))
	if err != nil {
		return err
	}
	v := views.BulkDeclineConfirmView{Program: programSummary(p), Reason: validDeclineReason(b.in.Reason), Next: b.next,
		Action: views.OwnerURL("programs", p.ID, "entries", "decline"), Retention: views.Duration(s.db.RetentionPolicy().Declined),
		Reasons: store.DeclineReasons, Error: refused}
	for _, e := range entries {
		v.Entries = append(v.Entries, views.QueueRow{ID: e.ID, Email: e.Email, State: e.State, CreatedAt: e.CreatedAt,
			NoticeVersion: e.NoticeVersion})
	}
	status := http.StatusOK
	if refused != "" {
		status = http.StatusBadRequest
	}
	c := s.chrome(r, "Decline entries · "+p.Name)
	if wantsBlock(r) {
		return s.render(w, r, status, c, views.BulkDeclineConfirmBlock(c, v))
	}
	return s.render(w, r, status, c, views.BulkDeclineConfirmPage(c, v))
}

// validDeclineReason is reason when it is one of the decline reasons, else "".
func validDeclineReason(reason string) string {
	if slices.Contains(store.DeclineReasons, reason) {
		return reason
	}
	return ""
}

// handleBulkAPI is the JSON form of a bulk action, all or none: 200
// {entries}; 409 when any chosen entry cannot take it.
func (s *Server) handleBulkAPI(act bulkAction) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var sel store.Selection
		if err := decodeJSON(r, &sel); err != nil {
			return err
		}
		es, err := act.do(s.db, r, sel)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"entries": toEntriesJSON(es)})
		return nil
	}
}
