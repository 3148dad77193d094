package handlers

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"admit/store"
	"admit/views"

	"github.com/google/uuid"
)

// newIssueForm is the issue form for a program at instant now: a fresh
// request key and an expiry defaulting to the program's maximum, at the
// current minute's time of day.
func newIssueForm(p *store.Program, now time.Time) views.IssueForm {
	now = now.UTC().Truncate(time.Minute)
	max := now.Add(time.Duration(p.MaxInvitationDays) * 24 * time.Hour)
	return views.IssueForm{RequestKey: uuid.NewString(), ExpiresOn: max.Format(time.DateOnly),
		Time: now.Format("15:04"), MinDate: now.Add(24 * time.Hour).Format(time.DateOnly), MaxDate: max.Format(time.DateOnly)}
}

// readIssueForm reads the issue form: a request key, and the expiry as a
// date and a time of day.
func readIssueForm(r *http.Request) (views.IssueForm, store.NewInvitation, error) {
	f, err := readForm(r)
	if err != nil {
		return views.IssueForm{}, store.NewInvitation{}, err
	}
	form := views.IssueForm{RequestKey: strings.TrimSpace(f.get("requestKey")), ExpiresOn: f.get("expiresOn"), Time: f.get("time")}
	in := store.NewInvitation{RequestKey: form.RequestKey}
	if f.err != nil {
		return form, in, f.err
	}
	in.ExpiresAt, err = store.ExpiryFromForm(form.ExpiresOn, form.Time)
	return form, in, err
}

// handleIssueInvitation is the issue form. The new code is kept in the
// encrypted state cookie, never in a URL, and the answer is 303 to the
// invitation's code page, which shows it once and forgets it; Back and
// reload then never offer to send the form again
// (docs/console.md#invitation-codes).
func (s *Server) handleIssueInvitation(w http.ResponseWriter, r *http.Request) error {
	form, in, err := readIssueForm(r)
	failed := func(err error) error {
		return s.rerenderEntry(w, r, err, func(v *views.EntryPageView, msg string) {
			v.Issue.Error, v.Issue.ExpiresOn = msg, form.ExpiresOn
			if _, perr := time.Parse("15:04", form.Time); perr == nil {
				v.Issue.Time = form.Time
			}
			// Nothing was stored for a 400: the same key may be sent again.
			// A 409 may be a key bound elsewhere, so the form gets a new one.
			if store.ErrorCode(err) == store.EINVALID {
				if u, perr := uuid.Parse(form.RequestKey); perr == nil && u.String() == form.RequestKey {
					v.Issue.RequestKey = form.RequestKey
				}
			}
		})
	}
	if err != nil {
		return failed(err)
	}
	res, err := s.db.IssueInvitation(r.Context(), ownerActor(r), r.PathValue("id"), r.PathValue("entryId"), in)
	if err != nil {
		return failed(err)
	}
	if res.Code != "" {
		// The code waits in the encrypted cookie state for the one page that
		// shows it.
		s.cookieState(r).Code = heldCode{InvitationID: res.Invitation.ID, Code: res.Code}
	}
	return redirect(w, r, entryPath(r)+"/invitations/"+res.Invitation.ID)
}

// handleCodePage shows an invitation's code the first time it is loaded
// after issuing; every later load says it was shown and offers to revoke
// it and issue another. It is never stored by a browser or a proxy.
func (s *Server) handleCodePage(w http.ResponseWriter, r *http.Request) error {
	noStore(w)
	ctx, a := r.Context(), ownerActor(r)
	p, err := s.db.ProgramByID(ctx, a, r.PathValue("id"))
	if err != nil {
		return err
	}
	d, err := s.db.EntryDetail(ctx, a, p.ID, r.PathValue("entryId"))
	if err != nil {
		return err
	}
	invID := r.PathValue("invitationId")
	i := slices.IndexFunc(d.Invitations, func(inv store.Invitation) bool { return inv.ID == invID })
	if i < 0 {
		return errNotFound
	}
	inv := &d.Invitations[i]
	v := views.IssuedView{Program: programSummary(p), EntryID: d.Entry.ID, EntryEmail: d.Entry.Email,
		Invitation: invitationRow(inv, s.db.Now()), Code: s.cookieState(r).takeCode(inv.ID), RedeemURL: s.opts.PublicURL.JoinPath("redeem").String(),
		Delivery: views.DeliveryForm{InvitationID: inv.ID, RequestKey: uuid.NewString()}}
	c := s.chrome(r, "Invitation · "+p.Name)
	return s.render(w, r, http.StatusOK, c, views.IssuedPage(c, v))
}

// issueJSON is POST …/entries/{entryId}/invitations: the store's input,
// with the expiry as the RFC 3339 text it is sent as (this field shadows
// the embedded one), parsed with the store's message.
type issueJSON struct {
	store.NewInvitation
	ExpiresAt string `json:"expiresAt"`
}

// handleIssueInvitationAPI issues a code: 201 {invitation, code} the first
// time; 200 {invitation} with no code on a same-key replay.
func (s *Server) handleIssueInvitationAPI(w http.ResponseWriter, r *http.Request) error {
	var body issueJSON
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	in := body.NewInvitation
	var err error
	if in.ExpiresAt, err = store.ExpiryInstant(body.ExpiresAt); err != nil {
		return err
	}
	res, err := s.db.IssueInvitation(r.Context(), ownerActor(r), r.PathValue("id"), r.PathValue("entryId"), in)
	if err != nil {
		return err
	}
	noStore(w)
	status := http.StatusCreated
	if res.Replay {
		status = http.StatusOK
	}
	writeJSON(w, status, issuedJSON{Invitation: toInvitationJSON(res.Invitation, s.db.Now()), Code: res.Code})
	return nil
}

// entryHolds checks that the entry in the path (which the owner owns) holds
// the invitation or grant in the path, so an HTML action URL is always
// consistent. Anything else is the generic 404.
func (s *Server) entryHolds(r *http.Request, invitationID, grantID string) error {
	d, err := s.db.EntryDetail(r.Context(), ownerActor(r), r.PathValue("id"), r.PathValue("entryId"))
	if err != nil {
		return err
	}
	if grantID != "" {
		if d.Grant != nil && d.Grant.ID == grantID {
			return nil
		}
		return errNotFound
	}
	for _, inv := range d.Invitations {
		if inv.ID == invitationID {
			return nil
		}
	}
	return errNotFound
}

// entryPath is the entry page of the request's path.
func entryPath(r *http.Request) string {
	return views.OwnerURL("programs", r.PathValue("id"), "entries", r.PathValue("entryId"))
}

// readDeliveryForm reads the record-a-send form for invitation invID. Each
// field's rule is checked here too, so its message shows beside it; the
// store applies the same rules again.
func readDeliveryForm(r *http.Request, invID string) (views.DeliveryForm, store.DeliveryRecord, error) {
	f, err := readForm(r)
	if err != nil {
		return views.DeliveryForm{InvitationID: invID}, store.DeliveryRecord{}, err
	}
	form := views.DeliveryForm{InvitationID: invID, RequestKey: strings.TrimSpace(f.get("requestKey")),
		Channel: strings.TrimSpace(f.get("channel")), Reference: f.get("reference")}
	in := store.DeliveryRecord{RequestKey: form.RequestKey, Channel: form.Channel, Reference: form.Reference}
	if f.err != nil {
		return form, in, f.err
	}
	cerr := store.CheckDeliveryChannel(form.Channel)
	rerr := store.CheckDeliveryReference(strings.TrimSpace(form.Reference))
	form.ChannelError, form.ReferenceError = fieldMessage(cerr), fieldMessage(rerr)
	return form, in, errors.Join(cerr, rerr)
}

// handleRecordDelivery is the record-a-send form: 303 back to the entry.
// The invitation must be the entry's before anything of the body is read.
func (s *Server) handleRecordDelivery(w http.ResponseWriter, r *http.Request) error {
	invID := r.PathValue("invitationId")
	if err := s.entryHolds(r, invID, ""); err != nil {
		return err
	}
	form, in, err := readDeliveryForm(r, invID)
	failed := func(err error) error {
		return s.rerenderEntry(w, r, err, func(v *views.EntryPageView, msg string) {
			if v.Delivery == nil {
				v.ActionError = msg
				return
			}
			if form.ChannelError == "" && form.ReferenceError == "" {
				form.Error = msg
			}
			if store.ErrorCode(err) != store.EINVALID {
				form.RequestKey = v.Delivery.RequestKey
			}
			v.Delivery = &form
		})
	}
	if err != nil {
		return failed(err)
	}
	if _, err := s.db.RecordDelivery(r.Context(), ownerActor(r), invID, in); err != nil {
		return failed(err)
	}
	s.cookieState(r).Flash = "Send recorded. The code can now be redeemed until it expires."
	return redirect(w, r, entryPath(r))
}

// fieldMessage is the message of a field's validation error, "" for none.
func fieldMessage(err error) string {
	if err == nil {
		return ""
	}
	return store.ErrorMessage(err)
}

// handleRevokeInvitation is the revoke-invitation form: 303 back to the entry.
func (s *Server) handleRevokeInvitation(w http.ResponseWriter, r *http.Request) error {
	invID := r.PathValue("invitationId")
	if err := s.entryHolds(r, invID, ""); err != nil {
		return err
	}
	if _, err := s.db.RevokeInvitation(r.Context(), ownerActor(r), invID); err != nil {
		return s.rerenderEntry(w, r, err, func(v *views.EntryPageView, msg string) {
			v.ActionError, v.ActionField = msg, "invitations-title"
		})
	}
	s.cookieState(r).Flash = "Invitation revoked. The entry is selected again and its seat is free."
	return redirect(w, r, entryPath(r))
}

// handleRevokeGrant is the revoke-access form: 303 back to the entry.
func (s *Server) handleRevokeGrant(w http.ResponseWriter, r *http.Request) error {
	grantID := r.PathValue("grantId")
	if err := s.entryHolds(r, "", grantID); err != nil {
		return err
	}
	if _, err := s.db.RevokeGrant(r.Context(), ownerActor(r), grantID); err != nil {
		return s.rerenderEntry(w, r, err, func(v *views.EntryPageView, msg string) {
			v.ActionError, v.ActionField = msg, "access-title"
		})
	}
	s.cookieState(r).Flash = "Access revoked."
	return redirect(w, r, entryPath(r))
}

// handleRecordDeliveryAPI records the owner's claim of a send
// (POST /api/owner/invitations/{id}/delivery-record): 200 Invitation.
func (s *Server) handleRecordDeliveryAPI(w http.ResponseWriter, r *http.Request) error {
	var rec store.DeliveryRecord
	if err := decodeJSON(r, &rec); err != nil {
		return err
	}
	inv, err := s.db.RecordDelivery(r.Context(), ownerActor(r), r.PathValue("id"), rec)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toInvitationJSON(inv, s.db.Now()))
	return nil
}

// handleRevokeInvitationAPI revokes an issued invitation: 200 Invitation.
func (s *Server) handleRevokeInvitationAPI(w http.ResponseWriter, r *http.Request) error {
	if err := decodeEmptyJSON(r); err != nil {
		return err
	}
	inv, err := s.db.RevokeInvitation(r.Context(), ownerActor(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toInvitationJSON(inv, s.db.Now()))
	return nil
}

// handleRevokeGrantAPI ends a recipient's access: 200 {id, active:false, revokedAt}.
func (s *Server) handleRevokeGrantAPI(w http.ResponseWriter, r *http.Request) error {
	if err := decodeEmptyJSON(r); err != nil {
		return err
	}
	g, err := s.db.RevokeGrant(r.Context(), ownerActor(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, grantRevokedJSON{ID: g.ID, Active: g.Active, RevokedAt: rfc3339Ptr(g.RevokedAt)})
	return nil
}
