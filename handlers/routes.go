package handlers

import (
	"net/http"
	"strings"

	"admit/internal/identity"
)

// routes is the index of admit's HTTP API (docs/API.md documents each
// route): every route is registered here, grouped by who may call it —
// anyone; anyone signed in; a recipient (a session and a verified email,
// never a staff row); an owner (a session and a current owner membership,
// checked on every request). The guards are in access.go
// (docs/ARCHITECTURE.md#a-request-start-to-finish). Each route's body bound
// is named where it is registered: maxBody unless it names another.
// Anything else is a generic 404, or 405 naming the methods a known path
// takes.
func (s *Server) routes() http.Handler {
	mux := routeMux{ServeMux: http.NewServeMux(), s: s}
	s.mux = mux.ServeMux
	s.publicRoutes(mux)
	s.recipientRoutes(mux)
	s.ownerPageRoutes(mux)
	s.ownerAPIRoutes(mux)

	// Deny by default: no fall-through between groups. A known path asked
	// with another method is 405 and names the methods it takes.
	mux.Handle("/", s.h(func(w http.ResponseWriter, r *http.Request) error {
		if allow := allowedMethods(mux.ServeMux, r); allow != "" {
			w.Header().Set("Allow", allow)
			return errMethod
		}
		return errNotFound
	}))

	return s.withRequestLog(mux.ServeMux, s.withSecurity(s.withCookieState(s.withOrigin(mux))))
}

// publicRoutes need no identity, except the sign-out and the CSRF token,
// which need a session.
func (s *Server) publicRoutes(mux routeMux) {
	mux.Handle("GET /{$}", s.h(s.handleHome))
	mux.Handle("GET /healthz", http.HandlerFunc(s.handleHealthz))
	mux.Handle("GET /readyz", http.HandlerFunc(s.handleReadyz))
	mux.Handle("GET /assets/", s.h(s.handleAsset))
	mux.Handle("GET /favicon.ico", http.HandlerFunc(handleFavicon))
	mux.Handle("GET /privacy", s.h(s.handlePrivacy))

	// Signup. rule: the body is read under a deadline of its own before
	// the signup may take an in-progress place (admission.Intake), and the
	// answer leaves on a fixed schedule counted from then, so its timing
	// does not tell a listed address from a new one (docs/signup.md).
	mux.Handle("GET /waitlist/{slug}", s.h(s.handleWaitlist))
	mux.Handle("POST /waitlist/{slug}", s.intake.Wrap(s.answers.OnSchedule(s.h(s.handleWaitlistPost))))
	mux.Handle("GET /waitlist/{slug}/received", s.h(s.handleReceived))
	mux.Handle("GET /api/public/programs/{slug}", s.h(s.handlePublicProgramAPI))
	mux.Handle("POST /api/public/programs/{slug}/signups", s.intake.Wrap(s.answers.OnSchedule(s.h(s.handleSignupAPI))))

	// Removal by the token a signup showed once.
	mux.Handle("GET /manage/{$}", s.h(s.handleManage))
	mux.Handle("POST /manage/remove", s.h(s.handleRemovePost))
	mux.Handle("POST /api/public/removals", s.h(s.handleRemovalAPI))

	// Sign-in and out.
	mux.Handle("GET /sign-in", s.h(s.handleSignIn))
	mux.Handle("POST /sign-out", s.h(s.handleSignOut))
	if _, ok := s.id.(identity.FormSignIn); ok {
		mux.Handle("GET /dev/sign-in", s.h(s.handleDevSignInLink))
		mux.Handle("POST /dev/sign-in", s.h(s.handleDevSignIn))
	}
	if _, ok := s.id.(identity.RedirectSignIn); ok {
		// OpenID Connect: a GET link to the provider and its way back.
		mux.Handle("GET /auth/start", s.h(s.handleOIDCStart))
		mux.Handle("GET /auth/callback", s.h(s.handleOIDCCallback))
	}

	// Signed in, no email needed.
	mux.Handle("GET /api/csrf", s.authed(s.handleCSRF))
	mux.Handle("GET /me/account", s.authed(s.handleAccount))
	mux.Handle("POST /me/account/sign-out-everywhere", s.authed(s.handleSignOutEverywhere))
}

// recipientRoutes are a signed-in person's own entry, redemption, private
// content and self-service (docs/API.md#recipient-routes). Every route but
// the token-free redeem page goes through s.recipient: a current session,
// the CSRF token on writes, and the verified emails fetched fresh from the
// identity provider — never a staff row. The program is always resolved
// from the slug on the server.
func (s *Server) recipientRoutes(mux routeMux) {
	rc := s.recipient

	mux.Handle("GET /me", rc(s.handleMe))
	mux.Handle("GET /api/me/waitlist/{slug}", rc(s.handleMyEntryAPI))

	// Redemption: the page is public (it holds no code and no private
	// data); submitting needs a session.
	mux.Handle("GET /redeem", s.h(s.handleRedeem))
	mux.Handle("POST /redeem", s.recipientOr(s.handleRedeemPost, s.handleRedeemUnavailable))
	mux.Handle("POST /api/me/invitations/redeem", rc(s.handleRedeemAPI))

	// Private content of one program, behind store's access gate.
	mux.Handle("GET /early-access/{slug}", rc(s.handlePrivatePage))
	mux.Handle("GET /early-access/{slug}/assets/{name}", rc(s.handlePrivateAsset))
	mux.Handle("GET /api/me/early-access/{slug}", rc(s.handlePrivateAPI))

	// Self-service withdrawal of one's own entry: a confirmation page, then
	// the CSRF-protected write.
	mux.Handle("GET /me/waitlist/{slug}/withdraw", rc(s.handleWithdrawConfirm))
	mux.Handle("POST /me/waitlist/{slug}/withdraw", rc(s.handleWithdrawPost))
	mux.Handle("POST /api/me/waitlist/{slug}/withdraw", rc(s.handleWithdrawAPI))
}

// ownerPageRoutes are the owner console in HTML. Every owner route is
// wrapped by s.owner: a session and a current owner membership, read on
// every request; the program, entry, invitation or grant must belong to a
// workspace the caller owns now (the store checks it in the same
// transaction), and absent and foreign give the same 404. Writes need the
// session-bound CSRF token. Mutations are POSTs to verb paths, so each works
// as a plain form; they answer 303 (PRG) — the issue form too, to the code
// page that shows the new code once (docs/console.md#invitation-codes).
func (s *Server) ownerPageRoutes(mux routeMux) {
	o := s.owner

	mux.Handle("GET /owner", o(s.handleOwnerHome))
	mux.Handle("GET /owner/workspaces/{id}", o(s.handleWorkspacePage))
	mux.Handle("POST /owner/workspaces/{id}", o(s.handleWorkspaceSettings))
	mux.Handle("GET /owner/workspaces/{id}/team", o(s.handleTeamPage))
	mux.Handle("POST /owner/workspaces/{id}/team", o(s.handleTeamAdd))
	mux.Handle("GET /owner/workspaces/{id}/team/{memberId}/remove", o(s.handleTeamRemoveConfirm))
	mux.Handle("POST /owner/workspaces/{id}/team/{memberId}/remove", o(s.handleTeamRemove))
	mux.Handle("POST /owner/programs", o(s.handleCreateProgram))
	mux.Handle("GET /owner/programs/{id}", o(s.handleProgramPage))
	mux.Handle("GET /owner/programs/{id}/settings", o(s.handleProgramSection))
	mux.Handle("GET /owner/programs/{id}/content", o(s.handleProgramSection))
	mux.Handle("GET /owner/programs/{id}/invitations", o(s.handleInvitationsPage))
	mux.Handle("POST /owner/programs/{id}/settings", o(s.handleProgramSettings))
	mux.Handle("POST /owner/programs/{id}/notices", o(s.handlePublishNotice))
	mux.Handle("POST /owner/programs/{id}/content", o(s.handleContent))
	mux.Handle("POST /owner/programs/{id}/assets", s.multipartCSRF(o(s.handleUploadAsset)), maxUploadBody)
	mux.Handle("POST /owner/programs/{id}/retire", o(s.handleRetire))
	mux.Handle("GET /owner/programs/{id}/events", o(s.handleEventsPage))
	mux.Handle("POST /owner/programs/{id}/events", o(s.handleEventsFilter))
	mux.Handle("GET /owner/programs/{id}/export.csv", o(s.handleExportCSV))

	mux.Handle("GET /owner/programs/{id}/entries", o(s.handleQueuePage))
	mux.Handle("POST /owner/programs/{id}/entries/select", o(s.handleBulk(bulkSelectAction)))
	mux.Handle("POST /owner/programs/{id}/entries/decline", o(s.handleBulk(bulkDeclineAction)))
	mux.Handle("POST /owner/programs/{id}/invitations", o(s.handleBulkIssue), maxBulkBody)
	mux.Handle("POST /owner/programs/{id}/invitations/sheet", o(s.handleCodeSheet), maxSheetBody)
	mux.Handle("POST /owner/programs/{id}/delivery-records", o(s.handleBulkDelivery), maxBulkBody)
	mux.Handle("GET /owner/programs/{id}/entries/{entryId}", o(s.handleEntryPage))
	mux.Handle("POST /owner/programs/{id}/entries/{entryId}/select", o(s.handleEntryAction(selectAction)))
	mux.Handle("POST /owner/programs/{id}/entries/{entryId}/decline", o(s.handleEntryAction(declineAction)))
	mux.Handle("POST /owner/programs/{id}/entries/{entryId}/withdraw", o(s.handleEntryAction(withdrawAction)))
	mux.Handle("POST /owner/programs/{id}/entries/{entryId}/invitations", o(s.handleIssueInvitation))
	mux.Handle("GET /owner/programs/{id}/entries/{entryId}/invitations/{invitationId}", o(s.handleCodePage))
	mux.Handle("POST /owner/programs/{id}/entries/{entryId}/invitations/{invitationId}/delivery-record", o(s.handleRecordDelivery))
	mux.Handle("POST /owner/programs/{id}/entries/{entryId}/invitations/{invitationId}/revoke", o(s.handleRevokeInvitation))
	mux.Handle("POST /owner/programs/{id}/entries/{entryId}/grants/{grantId}/revoke", o(s.handleRevokeGrant))

	// Dangerous actions ask first: each GET is the confirmation page (or,
	// with JavaScript, the dialog's body) for the POST of the same path.
	mux.Handle("GET /owner/programs/{id}/entries/{entryId}/decline", o(s.handleEntryDeclineConfirm))
	mux.Handle("GET /owner/programs/{id}/entries/{entryId}/withdraw", o(s.handleEntryWithdrawConfirm))
	mux.Handle("GET /owner/programs/{id}/entries/{entryId}/invitations/{invitationId}/revoke", o(s.handleRevokeInvitationConfirm))
	mux.Handle("GET /owner/programs/{id}/entries/{entryId}/grants/{grantId}/revoke", o(s.handleRevokeGrantConfirm))
	mux.Handle("GET /owner/programs/{id}/retire", o(s.handleRetireConfirm))
}

// ownerAPIRoutes are the owner JSON API, under the same guard as the
// console (docs/API.md#owner-routes documents each body and answer).
func (s *Server) ownerAPIRoutes(mux routeMux) {
	o := s.owner

	mux.Handle("GET /api/owner/workspaces", o(s.handleOwnerWorkspacesAPI))
	mux.Handle("PATCH /api/owner/workspaces/{id}", o(s.handlePatchWorkspaceAPI))
	mux.Handle("GET /api/owner/programs", o(s.handleOwnerProgramsAPI))
	mux.Handle("POST /api/owner/programs", o(s.handleCreateProgramAPI))
	mux.Handle("GET /api/owner/programs/{id}", o(s.handleProgramAPI))
	mux.Handle("PATCH /api/owner/programs/{id}", o(s.handlePatchProgramAPI))
	mux.Handle("GET /api/owner/programs/{id}/stats", o(s.handleStatsAPI))
	mux.Handle("POST /api/owner/programs/{id}/notices", o(s.handlePublishNoticeAPI))
	mux.Handle("GET /api/owner/programs/{id}/content", o(s.handleContentAPI))
	mux.Handle("PUT /api/owner/programs/{id}/content", o(s.handlePutContentAPI))
	mux.Handle("GET /api/owner/programs/{id}/assets", o(s.handleAssetsAPI))
	mux.Handle("POST /api/owner/programs/{id}/assets", s.multipartCSRF(o(s.handleUploadAssetAPI)), maxUploadBody)
	mux.Handle("POST /api/owner/programs/{id}/retire", o(s.handleRetireAPI))
	mux.Handle("GET /api/owner/programs/{id}/events", o(s.handleEventsAPI))
	mux.Handle("GET /api/owner/programs/{id}/export.csv", o(s.handleExportCSV))

	mux.Handle("GET /api/owner/programs/{id}/entries", o(s.handleQueueAPI))
	mux.Handle("POST /api/owner/programs/{id}/entries/select", o(s.handleBulkAPI(bulkSelectAction)))
	mux.Handle("POST /api/owner/programs/{id}/entries/decline", o(s.handleBulkAPI(bulkDeclineAction)))
	mux.Handle("GET /api/owner/programs/{id}/entries/{entryId}", o(s.handleEntryAPI))
	mux.Handle("POST /api/owner/programs/{id}/entries/{entryId}/select", o(s.handleEntryActionAPI(selectAction)))
	mux.Handle("POST /api/owner/programs/{id}/entries/{entryId}/decline", o(s.handleEntryActionAPI(declineAction)))
	mux.Handle("POST /api/owner/programs/{id}/entries/{entryId}/withdraw", o(s.handleEntryActionAPI(withdrawAction)))
	mux.Handle("POST /api/owner/programs/{id}/entries/{entryId}/invitations", o(s.handleIssueInvitationAPI))
	mux.Handle("POST /api/owner/programs/{id}/invitations", o(s.handleBulkIssueAPI), maxBulkBody)
	mux.Handle("POST /api/owner/programs/{id}/delivery-records", o(s.handleBulkDeliveryAPI), maxBulkBody)
	mux.Handle("POST /api/owner/invitations/{id}/delivery-record", o(s.handleRecordDeliveryAPI))
	mux.Handle("POST /api/owner/invitations/{id}/revoke", o(s.handleRevokeInvitationAPI))
	mux.Handle("POST /api/owner/grants/{id}/revoke", o(s.handleRevokeGrantAPI))
}

const (
	// maxBody bounds every request body but an upload, in bytes
	// (docs/API.md#conventions: 32 KiB).
	maxBody = 32 << 10
	// maxBulkBody bounds a bulk invitation request: room for
	// store.MaxBulkInvitations IDs.
	maxBulkBody = 64 << 10
	// maxSheetBody bounds a codes page's request for its CSV sheet: room
	// for store.MaxBulkInvitations invitation IDs with their codes.
	maxSheetBody = 192 << 10
	// maxUploadBody bounds an owner's private asset upload (multipart).
	maxUploadBody = 3 << 20
)

// routeMux registers each route with its body bound.
type routeMux struct {
	*http.ServeMux
	s *Server
}

// Handle registers h for pattern behind its body bound: maxBody, or the
// one limit given. A declared length over the bound is 413 before h runs;
// a longer stream fails its read, which h reports as 413.
func (m routeMux) Handle(pattern string, h http.Handler, limit ...int64) {
	n := int64(maxBody)
	if len(limit) > 0 {
		n = limit[0]
	}
	m.s.patterns[pattern] = true
	m.ServeMux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > n {
			m.s.writeError(w, r, errTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, n)
		h.ServeHTTP(w, r)
	}))
}

// routeMethods are the methods admit's routes use; HEAD comes with GET.
var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowedMethods lists, for the Allow header, the methods some route other
// than the catch-all takes for r's path; "" when no route has the path.
func allowedMethods(mux *http.ServeMux, r *http.Request) string {
	var allow []string
	for _, m := range routeMethods {
		probe := *r
		probe.Method = m
		if _, pattern := mux.Handler(&probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	return strings.Join(allow, ", ")
}
