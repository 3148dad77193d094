package handlers

import (
	"net/http"
	"time"

	"admit/store"
	"admit/views"

	"github.com/google/uuid"
)

// entryPageView loads an entry's detail page with its forms.
func (s *Server) entryPageView(r *http.Request, programID, entryID string) (*views.EntryPageView, error) {
	ctx, a := r.Context(), ownerActor(r)
	p, err := s.db.ProgramByID(ctx, a, programID)
	if err != nil {
		return nil, err
	}
	d, err := s.db.EntryDetail(ctx, a, p.ID, entryID)
	if err != nil {
		return nil, err
	}
	now := s.db.Now().UTC()
	e := d.Entry
	v := &views.EntryPageView{Program: programSummary(p),
		Entry: views.EntryRow{ID: e.ID, Email: e.Email, State: e.State, NoticeVersion: e.NoticeVersion,
			PermissionAt: e.PermissionAt, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, EraseAfter: e.EraseAfter},
		Notice: views.NoticeView{Version: d.Notice.Version, Purpose: d.Notice.Purpose, ContactText: d.Notice.ContactText,
			RetentionText: d.Notice.RetentionText, PublishedAt: d.Notice.PublishedAt},
		Events:        eventRows(d.Events),
		SelectReasons: store.SelectReasons, DeclineReasons: store.DeclineReasons,
		Issue: newIssueForm(p, now)}
	for _, t := range d.CaseTwins {
		v.CaseTwins = append(v.CaseTwins, views.CaseTwinRow{ID: t.ID, Email: t.Email, State: t.State})
	}
	issued, lapsed := false, false
	for i := range d.Invitations {
		inv := &d.Invitations[i]
		row := invitationRow(inv, now)
		v.Invitations = append(v.Invitations, row)
		if inv.State == store.InviteIssued {
			issued = true
			lapsed = row.State == store.InviteExpired
			if !lapsed && inv.DeliveryRecordedAt == nil && p.RetiredAt == nil {
				v.Delivery = &views.DeliveryForm{InvitationID: inv.ID, RequestKey: uuid.NewString()}
			}
		}
	}
	if g := d.Grant; g != nil {
		v.Grant = &views.GrantRow{ID: g.ID, Active: g.Active, GrantedAt: g.GrantedAt, RevokedAt: g.RevokedAt}
	}
	// What the state allows, as the store will judge it: on a retired
	// program, only a withdrawal.
	retired := p.RetiredAt != nil
	v.CanSelect = e.State == store.StateWaiting && !retired
	v.CanDecline = (e.State == store.StateWaiting || e.State == store.StateSelected) && !issued && d.Grant == nil && !retired
	v.CanWithdraw = e.State != store.StateWithdrawn
	v.CanIssue = d.Grant == nil && p.RetiredAt == nil &&
		(e.State == store.StateSelected || (e.State == store.StateInvited && issued && lapsed))
	if v.CanIssue {
		if v.Seats, err = s.db.ProgramSeats(ctx, a, p.ID); err != nil {
			return nil, err
		}
	}
	if v.PrevURL, v.NextURL, err = s.entryNeighbours(r, p.ID, &e); err != nil {
		return nil, err
	}
	return v, nil
}

// entryNeighbours are the entry pages just before and after e in the
// queue's join order ("" at either end), so that an owner can work
// through the queue one entry at a time.
func (s *Server) entryNeighbours(r *http.Request, programID string, e *store.Entry) (prev, next string, err error) {
	ctx, a := r.Context(), ownerActor(r)
	at := store.EntryCursor(e)
	before, err := s.db.Queue(ctx, a, programID, store.QueueFilter{Before: at, Limit: 1})
	if err != nil {
		return "", "", err
	}
	after, err := s.db.Queue(ctx, a, programID, store.QueueFilter{Cursor: at, Limit: 1})
	if err != nil {
		return "", "", err
	}
	if len(before.Entries) > 0 {
		prev = views.OwnerURL("programs", programID, "entries", before.Entries[0].ID)
	}
	if len(after.Entries) > 0 {
		next = views.OwnerURL("programs", programID, "entries", after.Entries[0].ID)
	}
	return prev, next, nil
}

// invitationRow is an invitation for the HTML views, in the state an owner
// should see (a lapsed one reads expired).
func invitationRow(inv *store.Invitation, now time.Time) views.InvitationRow {
	return views.InvitationRow{ID: inv.ID, State: inv.StateAt(now), IssuedAt: inv.IssuedAt,
		ExpiresAt: inv.ExpiresAt, DeliveryRecordedAt: inv.DeliveryRecordedAt, Channel: inv.DeliveryChannel,
		Reference: inv.DeliveryReference}
}

// renderEntry writes the entry page, or only its block for htmx.
func (s *Server) renderEntry(w http.ResponseWriter, r *http.Request, status int, v *views.EntryPageView) error {
	c := s.chrome(r, "Entry · "+v.Program.Name)
	if wantsBlock(r) {
		return s.render(w, r, status, c, views.EntryBlock(c, *v))
	}
	return s.render(w, r, status, c, views.EntryPage(c, *v))
}

// rerenderEntry shows the entry page again after a failed form, letting
// edit change the form that failed. A non-form error goes to the adapter.
func (s *Server) rerenderEntry(w http.ResponseWriter, r *http.Request, err error, edit func(v *views.EntryPageView, msg string)) error {
	status, msg, ok := formFailure(err)
	if !ok {
		return err
	}
	v, lerr := s.entryPageView(r, r.PathValue("id"), r.PathValue("entryId"))
	if lerr != nil {
		return lerr
	}
	edit(v, msg)
	return s.renderEntry(w, r, status, v)
}

// handleEntryPage is an entry's detail.
func (s *Server) handleEntryPage(w http.ResponseWriter, r *http.Request) error {
	v, err := s.entryPageView(r, r.PathValue("id"), r.PathValue("entryId"))
	if err != nil {
		return err
	}
	v.Flash = s.cookieState(r).takeFlash()
	return s.renderEntry(w, r, http.StatusOK, v)
}

// handleEntryAPI is GET …/entries/{entryId}.
func (s *Server) handleEntryAPI(w http.ResponseWriter, r *http.Request) error {
	d, err := s.db.EntryDetail(r.Context(), ownerActor(r), r.PathValue("id"), r.PathValue("entryId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toEntryDetailJSON(d, s.db.Now()))
	return nil
}

// entryAction is one of the owner's decisions on an entry: the store
// operation, the confirmation a form shows after it and, for a decision
// asked first, the confirmation page its form is on.
type entryAction struct {
	do   func(db *store.DB, r *http.Request, d store.Decision) (*store.Entry, error)
	done string
	ask  func(s *Server, r *http.Request) (views.ConfirmView, error)
}

// The owner's three decisions, each taking a reason code. Routes name them
// as values, so a misspelt action does not compile.
var (
	selectAction = entryAction{func(db *store.DB, r *http.Request, d store.Decision) (*store.Entry, error) {
		return db.SelectEntry(r.Context(), ownerActor(r), r.PathValue("id"), r.PathValue("entryId"), d)
	}, "Entry selected. You can now issue an invitation.", nil}
	declineAction = entryAction{func(db *store.DB, r *http.Request, d store.Decision) (*store.Entry, error) {
		return db.DeclineEntry(r.Context(), ownerActor(r), r.PathValue("id"), r.PathValue("entryId"), d)
	}, "Entry declined.", (*Server).declineConfirmView}
	withdrawAction = entryAction{func(db *store.DB, r *http.Request, d store.Decision) (*store.Entry, error) {
		return db.WithdrawEntry(r.Context(), ownerActor(r), r.PathValue("id"), r.PathValue("entryId"), d)
	}, "Entry withdrawn; any invitation and access it had are revoked.", (*Server).withdrawConfirmView}
)

// readDecisionForm reads a decision's form: its reason code.
func readDecisionForm(r *http.Request) (store.Decision, error) {
	f, err := readForm(r)
	if err != nil {
		return store.Decision{}, err
	}
	return store.Decision{Reason: f.get("reason")}, f.err
}

// handleEntryAction is the form for one decision: 303 back to the entry.
func (s *Server) handleEntryAction(act entryAction) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		in, err := readDecisionForm(r)
		failed := func(err error) error {
			// A decision asked first is refused on its confirmation,
			// the reason kept, while the entry still allows it.
			if status, msg, ok := formFailure(err); ok && act.ask != nil {
				if v, cerr := act.ask(s, r); cerr == nil {
					v.Error, v.ErrorField, v.Reason = msg, store.ErrorField(err), in.Reason
					return s.renderConfirmStatus(w, r, status, v)
				}
			}
			return s.rerenderEntry(w, r, err, func(v *views.EntryPageView, msg string) {
				v.ActionError, v.Reason = msg, in.Reason
				if act.ask == nil && store.ErrorField(err) == "reason" {
					v.ActionField = "select-reason"
				}
			})
		}
		if err != nil {
			return failed(err)
		}
		if _, err := act.do(s.db, r, in); err != nil {
			return failed(err)
		}
		s.cookieState(r).Flash = act.done
		return redirect(w, r, views.OwnerURL("programs", r.PathValue("id"), "entries", r.PathValue("entryId")))
	}
}

// handleEntryActionAPI is one decision, its body the store's Decision:
// 200 entry.
func (s *Server) handleEntryActionAPI(act entryAction) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var d store.Decision
		if err := decodeJSON(r, &d); err != nil {
			return err
		}
		e, err := act.do(s.db, r, d)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, toEntryJSON(e))
		return nil
	}
}
