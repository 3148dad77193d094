package handlers

import "net/http"

// ownerRoutes registers the owner console, HTML and JSON. Every route is
// wrapped by s.owner: a session and a current owner membership, read on
// every request; the program, entry, invitation or grant must belong to a
// workspace the caller owns now (the store checks it in the same
// transaction), and absent and foreign give the same 404. Writes need the
// session-bound CSRF token. Mutations are POSTs to verb paths, so each works
// as a plain form; HTML posts answer 303 (PRG), except the issue form, which
// shows the new code once.
//
// docs/API.md#owner-routes documents each route, including: POST …/retire
// ({expectedRevision, confirm: the slug} → Program with retiredAt), GET
// …/content ({body, revision}, for the revision a PUT names), POST
// …/entries/select (bulk select, {entryIds, reason} → {entries}), GET and
// POST …/assets (multipart field "file", optional "name"), GET
// …/export.csv, and the queue's optional from/to bounds (RFC 3339, or a UTC
// date whose "to" includes the day).
func (s *Server) ownerRoutes(mux *http.ServeMux) {
	o := s.owner

	// HTML console. GET /owner is registered with the owner group in routes.go.
	mux.Handle("POST /owner/programs", o(s.handleCreateProgram))
	mux.Handle("GET /owner/programs/{id}", o(s.handleProgramPage))
	mux.Handle("POST /owner/programs/{id}/settings", o(s.handleProgramSettings))
	mux.Handle("POST /owner/programs/{id}/notices", o(s.handlePublishNotice))
	mux.Handle("POST /owner/programs/{id}/content", o(s.handleContent))
	mux.Handle("POST /owner/programs/{id}/retire", o(s.handleRetire))
	mux.Handle("POST /owner/programs/{id}/assets", s.multipartCSRF(o(s.handleUploadAsset)))
	mux.Handle("GET /owner/programs/{id}/events", o(s.handleEventsPage))
	mux.Handle("GET /owner/programs/{id}/export.csv", o(s.handleExportCSV))
	mux.Handle("GET /owner/programs/{id}/entries", o(s.handleQueuePage))
	mux.Handle("POST /owner/programs/{id}/entries/select", o(s.handleBulkSelect))
	mux.Handle("GET /owner/programs/{id}/entries/{entryId}", o(s.handleEntryPage))
	mux.Handle("POST /owner/programs/{id}/entries/{entryId}/select", o(s.handleEntryAction("select")))
	mux.Handle("POST /owner/programs/{id}/entries/{entryId}/decline", o(s.handleEntryAction("decline")))
	mux.Handle("POST /owner/programs/{id}/entries/{entryId}/withdraw", o(s.handleEntryAction("withdraw")))
	mux.Handle("POST /owner/programs/{id}/entries/{entryId}/invitations", o(s.handleIssueInvitation))
	mux.Handle("POST /owner/programs/{id}/entries/{entryId}/invitations/{invitationId}/delivery-record", o(s.handleRecordDelivery))
	mux.Handle("POST /owner/programs/{id}/entries/{entryId}/invitations/{invitationId}/revoke", o(s.handleRevokeInvitation))
	mux.Handle("POST /owner/programs/{id}/entries/{entryId}/grants/{grantId}/revoke", o(s.handleRevokeGrant))

	// JSON API. GET /api/owner/workspaces and GET /api/owner/programs are in routes.go.
	mux.Handle("POST /api/owner/programs", o(s.handleCreateProgramAPI))
	mux.Handle("GET /api/owner/programs/{id}", o(s.handleProgramAPI))
	mux.Handle("PATCH /api/owner/programs/{id}", o(s.handlePatchProgramAPI))
	mux.Handle("POST /api/owner/programs/{id}/notices", o(s.handlePublishNoticeAPI))
	mux.Handle("POST /api/owner/programs/{id}/retire", o(s.handleRetireAPI))
	mux.Handle("GET /api/owner/programs/{id}/content", o(s.handleContentAPI))
	mux.Handle("PUT /api/owner/programs/{id}/content", o(s.handlePutContentAPI))
	mux.Handle("GET /api/owner/programs/{id}/assets", o(s.handleAssetsAPI))
	mux.Handle("POST /api/owner/programs/{id}/assets", s.multipartCSRF(o(s.handleUploadAssetAPI)))
	mux.Handle("GET /api/owner/programs/{id}/events", o(s.handleEventsAPI))
	mux.Handle("GET /api/owner/programs/{id}/export.csv", o(s.handleExportCSV))
	mux.Handle("GET /api/owner/programs/{id}/entries", o(s.handleQueueAPI))
	mux.Handle("POST /api/owner/programs/{id}/entries/select", o(s.handleBulkSelectAPI))
	mux.Handle("GET /api/owner/programs/{id}/entries/{entryId}", o(s.handleEntryAPI))
	mux.Handle("POST /api/owner/programs/{id}/entries/{entryId}/select", o(s.handleEntryActionAPI("select")))
	mux.Handle("POST /api/owner/programs/{id}/entries/{entryId}/decline", o(s.handleEntryActionAPI("decline")))
	mux.Handle("POST /api/owner/programs/{id}/entries/{entryId}/withdraw", o(s.handleEntryActionAPI("withdraw")))
	mux.Handle("POST /api/owner/programs/{id}/entries/{entryId}/invitations", o(s.handleIssueInvitationAPI))
	mux.Handle("POST /api/owner/invitations/{id}/delivery-record", o(s.handleRecordDeliveryAPI))
	mux.Handle("POST /api/owner/invitations/{id}/revoke", o(s.handleRevokeInvitationAPI))
	mux.Handle("POST /api/owner/grants/{id}/revoke", o(s.handleRevokeGrantAPI))
}
