package views

import (
	"strconv"
	"time"
)

// BulkIssueConfirmView asks before issuing codes to the queue's chosen
// entries: who gets one, the seats left, and one expiry for all of them.
type BulkIssueConfirmView struct {
	Program ProgramSummary
	Entries []QueueRow
	// Issue holds the request key, expiry day and time (IssueForm).
	Issue IssueForm
	// SeatsLeft is how many codes can be issued now.
	SeatsLeft int
	// Next is the queue page to return to.
	Next string
	// Error says why the last confirmation was refused.
	Error string
}

// BulkIssuedRow is one new code: who it is for and the code, shown once.
type BulkIssuedRow struct {
	InvitationID string
	Email        string
	Code         string
	ExpiresAt    time.Time
}

// BulkIssuedView is the one answer that shows a bulk issue's codes. On a
// replay of the same request its rows carry no codes.
type BulkIssuedView struct {
	Program   ProgramSummary
	Rows      []BulkIssuedRow
	RedeemURL string
	Delivery  BulkDeliveryForm
}

// Shown reports whether this answer shows the codes (the first one does;
// a replay does not).
func (v BulkIssuedView) Shown() bool { return len(v.Rows) > 0 && v.Rows[0].Code != "" }

// BulkDeliveryForm records one send for several invitations.
type BulkDeliveryForm struct {
	ProgramID     string
	InvitationIDs []string
	RequestKey    string
	Channel       string
	Reference     string
	// Error is about the form as a whole; ChannelError and ReferenceError
	// are shown beside their fields.
	Error          string
	ChannelError   string
	ReferenceError string
}

// Errors lists the form's errors for its summary.
func (f BulkDeliveryForm) Errors() []FieldError {
	return fieldErrors(FieldError{Field: "bulk-channel", Message: f.Error},
		FieldError{Field: "bulk-channel", Message: f.ChannelError}, FieldError{Field: "bulk-reference", Message: f.ReferenceError})
}

// BulkDeliveryView is the delivery form on a page of its own: a refused
// record without JavaScript (the codes are not shown again).
type BulkDeliveryView struct {
	Program  ProgramSummary
	Delivery BulkDeliveryForm
}

// countNoun is "1 code" or "3 codes".
func countNoun(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// theseCodes is "this code" or "these codes".
func theseCodes(n int) string {
	if n == 1 {
		return "this code"
	}
	return "these codes"
}

// InvitationsView is a program's Invitations section: its invitations,
// newest first, with their state, and one record of the send for several.
type InvitationsView struct {
	Program ProgramSummary
	Rows    []InvitationListRow
	// Delivery is the record form; its InvitationIDs are the rows chosen.
	Delivery BulkDeliveryForm
	Flash    string
	// Capped is set when older invitations are not listed.
	Capped bool
}

// InvitationListRow is one invitation and its entry.
type InvitationListRow struct {
	InvitationRow
	EntryID string
	Email   string
	// Recordable is a live invitation whose send is not recorded yet.
	Recordable bool
	Chosen     bool
}

// AnyRecordable reports whether a send can be recorded for some row.
func (v InvitationsView) AnyRecordable() bool {
	for _, r := range v.Rows {
		if r.Recordable {
			return true
		}
	}
	return false
}
