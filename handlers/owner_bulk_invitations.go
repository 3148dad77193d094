package handlers

import (
	"net/http"

	"admit/store"
)

// bulkIssueJSON is POST …/invitations: the store's input, with the expiry
// as the RFC 3339 text it is sent as (this field shadows the embedded one).
type bulkIssueJSON struct {
	store.NewInvitations
	ExpiresAt string `json:"expiresAt"`
}

// issuedItemJSON is one invitation of a bulk issue's answer: the
// Invitation and, only in the first answer, its code.
type issuedItemJSON struct {
	invitationJSON
	Code string `json:"code,omitempty"`
}

// handleBulkIssueAPI issues codes to several selected entries, all or none
// (docs/API.md#bulk-invitations): 201 {invitations} with a code each the
// first time; 200 {invitations} without codes on a same-key replay.
func (s *Server) handleBulkIssueAPI(w http.ResponseWriter, r *http.Request) error {
	var body bulkIssueJSON
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	in := body.NewInvitations
	var err error
	if in.ExpiresAt, err = store.ExpiryInstant(body.ExpiresAt); err != nil {
		return err
	}
	res, err := s.db.IssueInvitations(r.Context(), ownerActor(r), r.PathValue("id"), in)
	if err != nil {
		return err
	}
	noStore(w)
	now := s.db.Now()
	out := make([]issuedItemJSON, 0, len(res.Issued))
	for _, is := range res.Issued {
		out = append(out, issuedItemJSON{invitationJSON: toInvitationJSON(is.Invitation, now), Code: is.Code})
	}
	status := http.StatusCreated
	if res.Replay {
		status = http.StatusOK
	}
	writeJSON(w, status, map[string]any{"invitations": out})
	return nil
}

// handleBulkDeliveryAPI records the owner's claim of sending several codes
// through one channel, all or none: 200 {invitations}.
func (s *Server) handleBulkDeliveryAPI(w http.ResponseWriter, r *http.Request) error {
	var rec store.DeliveryRecords
	if err := decodeJSON(r, &rec); err != nil {
		return err
	}
	invs, err := s.db.RecordDeliveries(r.Context(), ownerActor(r), r.PathValue("id"), rec)
	if err != nil {
		return err
	}
	now := s.db.Now()
	out := make([]invitationJSON, 0, len(invs))
	for i := range invs {
		out = append(out, toInvitationJSON(&invs[i], now))
	}
	writeJSON(w, http.StatusOK, map[string]any{"invitations": out})
	return nil
}
