package handlers

import (
	"net/http"
	"time"

	"admit/internal/identity"
	"admit/store"
	"admit/views"
)

// privacyView computes the privacy page from the retention policy, the
// sweep interval, the counter lifetime and the backup retention this server
// runs with ("count the copies": live database, then backups).
func (s *Server) privacyView() views.PrivacyView {
	r := s.db.RetentionPolicy()
	backup := s.opts.BackupRetention
	everywhere := func(kept time.Duration) string {
		return views.Duration(kept + store.SweepInterval + backup)
	}
	untilRetired := "until you withdraw or remove it, or the program is retired; then up to " + views.Duration(r.RetiredProgram)
	v := views.PrivacyView{
		Rows: []views.RetentionRow{
			{ID: "active", State: "waiting, selected, invited or active", Kept: untilRetired,
				Everywhere: "retirement + " + everywhere(r.RetiredProgram)},
			{ID: "withdrawn", State: "withdrawn (signed in, or by the owner on your request)", Kept: views.Duration(r.Withdrawn), Everywhere: everywhere(r.Withdrawn)},
			{ID: "removed", State: "removed with your private link", Kept: "erased at once", Everywhere: everywhere(0)},
			{ID: "declined", State: "declined", Kept: views.Duration(r.Declined), Everywhere: everywhere(r.Declined)},
			{ID: "revoked", State: "access revoked", Kept: views.Duration(r.Revoked), Everywhere: everywhere(r.Revoked)},
		},
		RetiredProgram:    views.Duration(r.RetiredProgram + store.SweepInterval),
		CounterLifetime:   views.Duration(store.NetworkCounterLifetime + store.SweepInterval),
		SweepInterval:     views.Duration(store.SweepInterval),
		BackupConfigured:  backup > 0,
		PostgreSQL:        s.db.Engine() == store.PostgreSQL,
		BackupRetention:   views.Duration(backup),
		RemovalEverywhere: everywhere(0),
		ReceiptKept:       views.Duration(store.ReceiptLifetime),
		ReceiptEverywhere: everywhere(store.ReceiptLifetime),
		IdentityProvider:  "Clerk",

		NetworkHourlyLimit:       s.opts.NetworkHourlyLimit,
		RedeemAccountHourlyLimit: RedeemAccountHourlyLimit,
		RedeemNetworkHourlyLimit: RedeemNetworkHourlyLimit,
	}
	sessionGone := views.Duration(store.SweepInterval + backup)
	switch s.id.Mode() {
	case identity.ModeDev:
		v.IdentityProvider = "a development sign-in form that does not verify addresses (this server is in development mode)"
		v.ServerSessions, v.SessionKeeps = true, "the address you signed in with"
	case identity.ModeOIDC:
		v.IdentityProvider = "your identity provider, " + s.providerName() + ", through OpenID Connect"
		v.ServerSessions, v.SessionKeeps = true, "the tokens your identity provider gave for this sign-in and when "+
			s.providerName()+" last confirmed it (once "+views.Duration(identity.OIDCRecheckEvery)+
			" have passed, your next visit asks again, and ends the session if you may no longer sign in there)"
	}
	v.SessionLife, v.SessionGone = views.Duration(identity.SessionTTL), sessionGone
	v.OwnerInviteLife = views.Duration(store.OwnerInviteLifetime)
	return v
}

// handlePrivacy renders the privacy page.
func (s *Server) handlePrivacy(w http.ResponseWriter, r *http.Request) error {
	contacts, err := s.db.PrivacyContacts(r.Context())
	if err != nil {
		return err
	}
	v := s.privacyView()
	for _, pc := range contacts {
		v.Contacts = append(v.Contacts, views.PrivacyContact{Workspace: pc.WorkspaceName, Contact: pc.Contact, Programs: pc.Programs})
	}
	c := s.chrome(r, "Privacy")
	return s.render(w, r, http.StatusOK, c, views.Privacy(c, v))
}
