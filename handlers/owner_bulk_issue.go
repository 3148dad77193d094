package handlers

import (
	"encoding/csv"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"admit/store"
	"admit/views"

	"github.com/google/uuid"
)

// bulkIssueForm is the queue's "Issue invitations" as submitted: the
// chosen entries and, once confirmed, the request key and one expiry.
type bulkIssueForm struct {
	next      string
	confirmed bool
	entryIDs  []string
	form      views.IssueForm
	in        store.NewInvitations
}

// readBulkIssueForm reads the queue's issue form or its confirmation.
func readBulkIssueForm(r *http.Request) (bulkIssueForm, error) {
	f, err := readForm(r)
	if err != nil {
		return bulkIssueForm{}, err
	}
	b := bulkIssueForm{next: queueReturn(r.PathValue("id"), f.get("next")), confirmed: f.get("confirmed") == "yes",
		entryIDs: r.PostForm["entryIds"]}
	b.form = views.IssueForm{RequestKey: strings.TrimSpace(f.get("requestKey")), ExpiresOn: f.get("expiresOn"), Time: f.get("time")}
	if f.err != nil {
		return b, f.err
	}
	if len(b.entryIDs) == 0 {
		return b, store.Errorf(store.EINVALID, "Choose the selected entries to invite first.")
	}
	b.in = store.NewInvitations{RequestKey: b.form.RequestKey, EntryIDs: b.entryIDs}
	if b.confirmed {
		b.in.ExpiresAt, err = store.ExpiryFromForm(b.form.ExpiresOn, b.form.Time)
	}
	return b, err
}

// handleBulkIssue is the queue's "Issue invitations": first a confirmation
// naming the chosen entries with one expiry (nothing changes), then, once
// confirmed, every code at once on one private page that shows them once
// (docs/console.md#bulk-invitations). Like a single issue's code, the codes
// are in that answer only: never stored, in a URL or in a log.
func (s *Server) handleBulkIssue(w http.ResponseWriter, r *http.Request) error {
	ctx, a, id := r.Context(), ownerActor(r), r.PathValue("id")
	b, err := readBulkIssueForm(r)
	backToQueue := func(err error) error { return s.bulkIssueBackToQueue(w, r, id, b, err) }
	if err != nil && !b.confirmed {
		return backToQueue(err)
	}
	p, perr := s.db.ProgramByID(ctx, a, id)
	if perr != nil {
		return perr
	}
	entries, eerr := s.db.EntriesByID(ctx, a, p.ID, b.entryIDs)
	if eerr != nil {
		return backToQueue(eerr)
	}
	// rule: the confirmation is never offered for something that cannot be
	// sent: every chosen entry must be selected. (A confirmation sent
	// again is the store's to answer: its key replays the first answer.)
	for _, e := range entries {
		if !b.confirmed && e.State != store.StateSelected {
			return backToQueue(store.Errorf(store.ECONFLICT, "Only selected entries can be invited; %s is %s. Choose selected entries only.",
				views.EmailOrErased(e.Email), e.State))
		}
	}
	confirm := func(status int, msg string, form views.IssueForm) error {
		seats, err := s.db.ProgramSeats(ctx, a, p.ID)
		if err != nil {
			return err
		}
		v := views.BulkIssueConfirmView{Program: programSummary(p), Issue: form, SeatsLeft: seats.Left, Next: b.next, Error: msg}
		for _, e := range entries {
			v.Entries = append(v.Entries, views.QueueRow{ID: e.ID, Email: e.Email, State: e.State})
		}
		c := s.chrome(r, "Issue invitations · "+p.Name)
		if wantsBlock(r) {
			return s.render(w, r, status, c, views.BulkIssueConfirmBlock(c, v))
		}
		return s.render(w, r, status, c, views.BulkIssueConfirmPage(c, v))
	}
	fresh := newIssueForm(p, s.db.Now())
	if !b.confirmed {
		return confirm(http.StatusOK, "", fresh)
	}
	// A refused confirmation is asked again: with the same key for a 400
	// (nothing was stored), a new one for a 409 (the key may be bound).
	refused := func(err error) error {
		status, msg, ok := formFailure(err)
		if !ok {
			return err
		}
		form := fresh
		if _, perr := time.Parse("15:04", b.form.Time); perr == nil {
			form.Time = b.form.Time
		}
		form.ExpiresOn = b.form.ExpiresOn
		if store.ErrorCode(err) == store.EINVALID {
			if u, perr := uuid.Parse(b.form.RequestKey); perr == nil && u.String() == b.form.RequestKey {
				form.RequestKey = b.form.RequestKey
			}
		}
		return confirm(status, msg, form)
	}
	if err != nil {
		return refused(err)
	}
	res, err := s.db.IssueInvitations(ctx, a, p.ID, b.in)
	if err != nil {
		return refused(err)
	}
	return s.renderBulkIssued(w, r, p, entries, res)
}

// handleCodeSheet answers the codes page's "Download the codes as CSV": a
// mail-merge sheet made from the codes the page sends back, each checked
// against its invitation's digest. Nothing is stored or logged; the answer
// is never cached.
func (s *Server) handleCodeSheet(w http.ResponseWriter, r *http.Request) error {
	f, err := readForm(r)
	if err != nil {
		return err
	}
	ids, codes := r.PostForm["invitationIds"], r.PostForm["codes"]
	if f.err != nil || len(ids) != len(codes) {
		return store.Errorf(store.EINVALID, "Each invitation needs its code.")
	}
	pairs := make([]store.IssuedCode, len(ids))
	for i := range ids {
		pairs[i] = store.IssuedCode{InvitationID: ids[i], Code: codes[i]}
	}
	rows, err := s.db.CodeSheet(r.Context(), ownerActor(r), r.PathValue("id"), pairs)
	if err != nil {
		return err
	}
	noStore(w)
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="invitation-codes.csv"`)
	redeem := s.opts.PublicURL.JoinPath("redeem").String()
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"email", "code", "expires_at", "redeem_url"}); err != nil {
		return err
	}
	for _, row := range rows {
		// rule: every cell is formula-safe (csvCell), the address included.
		if err := cw.Write([]string{csvCell(row.Email), csvCell(row.Code), csvCell(rfc3339(row.ExpiresAt)), csvCell(redeem)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// readBulkDeliveryForm reads the codes page's "Record that you sent them".
// Each field's rule is checked here too, so its message shows beside it.
func readBulkDeliveryForm(r *http.Request) (views.BulkDeliveryForm, store.DeliveryRecords, error) {
	form := views.BulkDeliveryForm{ProgramID: r.PathValue("id")}
	f, err := readForm(r)
	if err != nil {
		return form, store.DeliveryRecords{}, err
	}
	f.get("from") // read by handleBulkDelivery: which page the form is on
	form.InvitationIDs = r.PostForm["invitationIds"]
	form.RequestKey, form.Channel, form.Reference = strings.TrimSpace(f.get("requestKey")), strings.TrimSpace(f.get("channel")), f.get("reference")
	in := store.DeliveryRecords{RequestKey: form.RequestKey, InvitationIDs: form.InvitationIDs, Channel: form.Channel, Reference: form.Reference}
	if f.err != nil {
		return form, in, f.err
	}
	cerr := store.CheckDeliveryChannel(form.Channel)
	rerr := store.CheckDeliveryReference(strings.TrimSpace(form.Reference))
	form.ChannelError, form.ReferenceError = fieldMessage(cerr), fieldMessage(rerr)
	return form, in, errors.Join(cerr, rerr)
}

// handleBulkDelivery records one send for every invitation of a bulk
// issue, all or none. A refusal with htmx replaces only the form, so the
// codes above it stay on screen; without JavaScript it answers the form on
// a page of its own, which the codes page warned of before its form.
func (s *Server) handleBulkDelivery(w http.ResponseWriter, r *http.Request) error {
	ctx, a, id := r.Context(), ownerActor(r), r.PathValue("id")
	form, in, err := readBulkDeliveryForm(r)
	fromList := r.PostForm.Get("from") == "invitations"
	if err == nil && len(in.InvitationIDs) == 0 {
		err = store.Errorf(store.EINVALID, "Choose the invitations whose codes you sent.")
	}
	if err == nil {
		_, err = s.db.RecordDeliveries(ctx, a, id, in)
	}
	if err == nil {
		s.cookieState(r).Flash = countText(len(in.InvitationIDs), "Recorded the send for")
		to := views.OwnerURL("programs", id, "entries")
		if fromList {
			to = views.OwnerURL("programs", id, "invitations")
		}
		if wantsBlock(r) {
			w.Header().Set("HX-Redirect", to)
			w.WriteHeader(http.StatusOK)
			return nil
		}
		return redirect(w, r, to)
	}
	status, msg, ok := formFailure(err)
	if !ok {
		return err
	}
	if form.ChannelError == "" && form.ReferenceError == "" {
		form.Error = msg
	}
	if store.ErrorCode(err) != store.EINVALID {
		form.RequestKey = uuid.NewString()
	}
	if fromList {
		// The Invitations section shows the form again with the choice.
		return s.renderInvitations(w, r, status, form)
	}
	p, perr := s.db.ProgramByID(ctx, a, id)
	if perr != nil {
		return perr
	}
	c := s.chrome(r, "Record the send · "+p.Name)
	if wantsBlock(r) {
		return s.render(w, r, status, c, views.BulkDeliveryFormBlock(c, form))
	}
	return s.render(w, r, status, c, views.BulkDeliveryPage(c, views.BulkDeliveryView{Program: programSummary(p), Delivery: form}))
}

// handleInvitationsPage is a program's Invitations section: its
// invitations with their state, and the form that records the send of
// the chosen ones (docs/console.md#sections).
func (s *Server) handleInvitationsPage(w http.ResponseWriter, r *http.Request) error {
	return s.renderInvitations(w, r, http.StatusOK, views.BulkDeliveryForm{ProgramID: r.PathValue("id"), RequestKey: uuid.NewString()})
}

// renderInvitations writes the Invitations section with the record form
// as given (after a refusal: what was typed and chosen, and why).
func (s *Server) renderInvitations(w http.ResponseWriter, r *http.Request, status int, form views.BulkDeliveryForm) error {
	ctx, a := r.Context(), ownerActor(r)
	p, err := s.db.ProgramByID(ctx, a, r.PathValue("id"))
	if err != nil {
		return err
	}
	invs, err := s.db.ProgramInvitations(ctx, a, p.ID)
	if err != nil {
		return err
	}
	now := s.db.Now()
	chosen := map[string]bool{}
	for _, id := range form.InvitationIDs {
		chosen[id] = true
	}
	v := views.InvitationsView{Program: programSummary(p), Delivery: form, Capped: len(invs) == store.MaxListedInvitations}
	if status == http.StatusOK {
		v.Flash = s.cookieState(r).takeFlash()
	}
	for i := range invs {
		inv := &invs[i]
		row := views.InvitationListRow{InvitationRow: invitationRow(&inv.Invitation, now), EntryID: inv.EntryID, Email: inv.Email,
			Chosen: chosen[inv.ID]}
		row.Recordable = row.State == store.InviteIssued && inv.DeliveryRecordedAt == nil && p.RetiredAt == nil
		v.Rows = append(v.Rows, row)
	}
	c := s.chrome(r, "Invitations · "+p.Name)
	return s.render(w, r, status, c, views.InvitationsPage(c, v))
}

// bulkIssueBackToQueue shows the queue again, the chosen entries still
// chosen, with the form's failure err; an error that is not the form's is
// returned.
func (s *Server) bulkIssueBackToQueue(w http.ResponseWriter, r *http.Request, id string, b bulkIssueForm, err error) error {
	status, msg, ok := formFailure(err)
	if !ok {
		return err
	}
	u, _ := url.Parse(b.next)
	v, lerr := s.queueView(r, id, u.RawQuery)
	if lerr != nil {
		return lerr
	}
	v.Error, v.Checked = msg, map[string]bool{}
	for _, e := range b.entryIDs {
		v.Checked[e] = true
	}
	return s.renderQueue(w, r, status, v)
}

// renderBulkIssued is the page of the codes just issued, shown once, with
// the form that records their send.
func (s *Server) renderBulkIssued(w http.ResponseWriter, r *http.Request, p *store.Program, entries []store.Entry, res *store.BulkIssueResult) error {
	noStore(w)
	emails := make(map[string]string, len(entries))
	for _, e := range entries {
		emails[e.ID] = e.Email
	}
	v := views.BulkIssuedView{Program: programSummary(p), RedeemURL: s.opts.PublicURL.JoinPath("redeem").String(),
		Delivery: views.BulkDeliveryForm{ProgramID: p.ID, RequestKey: uuid.NewString()}}
	for _, is := range res.Issued {
		v.Rows = append(v.Rows, views.BulkIssuedRow{InvitationID: is.Invitation.ID, Email: emails[is.Invitation.EntryID],
			Code: is.Code, ExpiresAt: is.Invitation.ExpiresAt})
		v.Delivery.InvitationIDs = append(v.Delivery.InvitationIDs, is.Invitation.ID)
	}
	c := s.chrome(r, "New invitation codes · "+p.Name)
	return s.render(w, r, http.StatusOK, c, views.BulkIssuedPage(c, v))
}
