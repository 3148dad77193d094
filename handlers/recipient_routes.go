package handlers

import "net/http"

// recipientRoutes registers redemption, private content and self-service
// (docs/API.md#recipient-routes). Every route but the token-free redeem
// page goes through s.recipient: a current
// session, the CSRF token on writes, and the verified emails fetched fresh
// from the identity provider — never a staff row. The program is always
// resolved from the slug on the server.
func (s *Server) recipientRoutes(mux *http.ServeMux) {
	// Redemption: the page is public (it holds no code and no private
	// data); submitting needs a session.
	mux.Handle("GET /redeem", s.h(s.handleRedeem))
	mux.Handle("POST /redeem", s.recipient(s.handleRedeemPost))
	mux.Handle("POST /api/me/invitations/redeem", s.recipient(s.handleRedeemAPI))

	// Private content of one program, behind store's access gate.
	mux.Handle("GET /early-access/{slug}", s.recipient(s.handlePrivatePage))
	mux.Handle("GET /early-access/{slug}/assets/{name}", s.recipient(s.handlePrivateAsset))
	mux.Handle("GET /api/me/early-access/{slug}", s.recipient(s.handlePrivateAPI))

	// Self-service withdrawal of one's own entry: a confirmation page, then
	// the CSRF-protected write.
	mux.Handle("GET /me/waitlist/{slug}/withdraw", s.recipient(s.handleWithdrawConfirm))
	mux.Handle("POST /me/waitlist/{slug}/withdraw", s.recipient(s.handleWithdrawPost))
	mux.Handle("POST /api/me/waitlist/{slug}/withdraw", s.recipient(s.handleWithdrawAPI))
}
