package handlers

import (
	"net/http"
	"slices"
	"strconv"

	"admit/store"
	"admit/views"
)

// The confirmation step of each dangerous action (docs/console.md#dangerous-actions):
// a GET page that names the person or program and says what follows, with
// the form that does it. Without JavaScript it is a page; with it, the
// console's script shows the same block in a modal dialog. Nothing changes
// until its form is posted.

// renderConfirm writes a confirmation page, or only its block for the
// console's dialog.
func (s *Server) renderConfirm(w http.ResponseWriter, r *http.Request, v views.ConfirmView) error {
	return s.renderConfirmStatus(w, r, http.StatusOK, v)
}

// renderConfirmStatus writes a confirmation with the given status: 200, or
// the refusal of its form, shown again with the error summary on top.
func (s *Server) renderConfirmStatus(w http.ResponseWriter, r *http.Request, status int, v views.ConfirmView) error {
	if v.Nav == "" {
		v.Nav = "queue"
	}
	c := s.chrome(r, v.Title)
	if wantsBlock(r) {
		return s.render(w, r, status, c, views.ConfirmBlock(c, v))
	}
	return s.render(w, r, status, c, views.ConfirmPage(c, v))
}

// entryConfirm loads what an entry's confirmation names: the program and
// the entry with its invitations and grant.
func (s *Server) entryConfirm(r *http.Request) (*store.Program, *store.EntryDetail, error) {
	ctx, a := r.Context(), ownerActor(r)
	p, err := s.db.ProgramByID(ctx, a, r.PathValue("id"))
	if err != nil {
		return nil, nil, err
	}
	d, err := s.db.EntryDetail(ctx, a, p.ID, r.PathValue("entryId"))
	if err != nil {
		return nil, nil, err
	}
	return p, d, nil
}

// queryReason is a reason the owner already chose on the entry page, kept
// when it is on the action's list; anything else is no choice.
func queryReason(r *http.Request, list []string) string {
	q, err := singleQuery(r.URL.RawQuery)
	if err != nil || !slices.Contains(list, q.Get("reason")) {
		return ""
	}
	return q.Get("reason")
}

// handleEntryDeclineConfirm asks before declining an entry.
func (s *Server) handleEntryDeclineConfirm(w http.ResponseWriter, r *http.Request) error {
	v, err := s.declineConfirmView(r)
	if err != nil {
		return err
	}
	return s.renderConfirm(w, r, v)
}

// declineConfirmView is the confirmation before declining the entry in
// r's path.
func (s *Server) declineConfirmView(r *http.Request) (views.ConfirmView, error) {
	p, d, err := s.entryConfirm(r)
	if err != nil {
		return views.ConfirmView{}, err
	}
	e := d.Entry
	if e.State != store.StateWaiting && e.State != store.StateSelected {
		return views.ConfirmView{}, store.Errorf(store.ECONFLICT, "This entry is %s; only a waiting or selected entry can be declined.", e.State)
	}
	who := views.EmailOrErased(e.Email)
	return views.ConfirmView{Program: programSummary(p), Kind: "decline",
		Title: "Decline " + who + "?",
		Consequences: []string{
			who + " stays on the list as declined and cannot be selected or invited from it again. This cannot be undone.",
			"Their address is erased after " + views.Duration(s.db.RetentionPolicy().Declined) + ".",
		},
		Action: entryPath(r) + "/decline", Button: "Decline " + who, Cancel: entryPath(r),
		Reasons: store.DeclineReasons, Reason: queryReason(r, store.DeclineReasons)}, nil
}

// handleEntryWithdrawConfirm asks before withdrawing an entry on the
// applicant's request.
func (s *Server) handleEntryWithdrawConfirm(w http.ResponseWriter, r *http.Request) error {
	v, err := s.withdrawConfirmView(r)
	if err != nil {
		return err
	}
	return s.renderConfirm(w, r, v)
}

// withdrawConfirmView is the confirmation before withdrawing the entry in
// r's path.
func (s *Server) withdrawConfirmView(r *http.Request) (views.ConfirmView, error) {
	p, d, err := s.entryConfirm(r)
	if err != nil {
		return views.ConfirmView{}, err
	}
	e := d.Entry
	if e.State == store.StateWithdrawn {
		return views.ConfirmView{}, store.Errorf(store.ECONFLICT, "This entry is already withdrawn.")
	}
	who := views.EmailOrErased(e.Email)
	return views.ConfirmView{Program: programSummary(p), Kind: "withdraw",
		Title: "Withdraw " + who + " from " + p.Name + "?",
		Consequences: []string{
			"Only when " + who + " asked to leave, in a way you can show. Any invitation code they hold stops working and any access they have ends at once. This cannot be undone.",
			"Their address is erased after " + views.Duration(s.db.RetentionPolicy().Withdrawn) + ".",
		},
		Action: entryPath(r) + "/withdraw", Button: "Withdraw " + who, Cancel: entryPath(r),
		Reasons: store.WithdrawReasons, Reason: queryReason(r, store.WithdrawReasons)}, nil
}

// handleRevokeInvitationConfirm asks before revoking an issued code.
func (s *Server) handleRevokeInvitationConfirm(w http.ResponseWriter, r *http.Request) error {
	p, d, err := s.entryConfirm(r)
	if err != nil {
		return err
	}
	invID := r.PathValue("invitationId")
	i := slices.IndexFunc(d.Invitations, func(inv store.Invitation) bool { return inv.ID == invID })
	if i < 0 {
		return errNotFound
	}
	if d.Invitations[i].State != store.InviteIssued {
		return store.Errorf(store.ECONFLICT, "This invitation is %s; only an issued one can be revoked.", d.Invitations[i].State)
	}
	who := views.EmailOrErased(d.Entry.Email)
	return s.renderConfirm(w, r, views.ConfirmView{Program: programSummary(p), Kind: "revoke-invitation",
		Title: "Revoke the invitation code for " + who + "?",
		Consequences: []string{
			"The code stops working at once: " + who + " cannot redeem it, even if you have already sent it. This cannot be undone.",
			"You can issue a new code afterwards, from this entry's page.",
		},
		Action: entryPath(r) + "/invitations/" + invID + "/revoke", Button: "Revoke the code", Cancel: entryPath(r)})
}

// handleRevokeGrantConfirm asks before ending a recipient's access.
func (s *Server) handleRevokeGrantConfirm(w http.ResponseWriter, r *http.Request) error {
	p, d, err := s.entryConfirm(r)
	if err != nil {
		return err
	}
	grantID := r.PathValue("grantId")
	if d.Grant == nil || d.Grant.ID != grantID {
		return errNotFound
	}
	if !d.Grant.Active {
		return store.Errorf(store.ECONFLICT, "This access is already revoked.")
	}
	who := views.EmailOrErased(d.Entry.Email)
	return s.renderConfirm(w, r, views.ConfirmView{Program: programSummary(p), Kind: "revoke-grant",
		Title: "Revoke " + who + "'s access to " + p.Name + "?",
		Consequences: []string{
			who + " can no longer read " + p.Name + "'s private content, from their next request. This cannot be undone: to let them back in, they need a new invitation.",
		},
		Action: entryPath(r) + "/grants/" + grantID + "/revoke", Button: "Revoke access", Cancel: entryPath(r)})
}

// handleRetireConfirm asks before retiring a program: it names the program,
// says what retiring does, and asks for the program's address to be typed.
func (s *Server) handleRetireConfirm(w http.ResponseWriter, r *http.Request) error {
	v, err := s.retireConfirmView(r)
	if err != nil {
		return err
	}
	return s.renderConfirm(w, r, v)
}

// retireConfirmView is the confirmation before retiring the program in r's
// path.
func (s *Server) retireConfirmView(r *http.Request) (views.ConfirmView, error) {
	p, err := s.db.ProgramByID(r.Context(), ownerActor(r), r.PathValue("id"))
	if err != nil {
		return views.ConfirmView{}, err
	}
	if p.RetiredAt != nil {
		return views.ConfirmView{}, store.Errorf(store.ECONFLICT, "This program is already retired.")
	}
	base := views.OwnerURL("programs", p.ID)
	name := p.Name
	if name == "" {
		name = p.Slug
	}
	return views.ConfirmView{Program: programSummary(p), Kind: "retire", Nav: "settings",
		Title: "Retire " + name + "?",
		Consequences: []string{
			"Signup closes, access ends, and every issued invitation and every recipient's access to " + name + " is revoked at once.",
			"Every entry's email address is erased within " + views.Duration(s.db.RetentionPolicy().RetiredProgram+store.SweepInterval) +
				". This cannot be undone: a new cycle needs a new program.",
		},
		Action: base + "/retire", Button: "Retire " + name, Cancel: base + "/settings",
		Confirm: p.Slug, ConfirmLabel: "To confirm, type the program's address:",
		Hidden: []views.HiddenField{{Name: "expectedRevision", Value: strconv.FormatInt(p.Revision, 10)}}}, nil
}
