package store

import (
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
)

// EventDetails are one audit event's details: a struct per event type
// (ProgramCreatedDetails … ErasedDetails), whose fields are the only keys
// that event can hold and whose values are IDs, states, counts, flags and
// reason codes only, never an email, token, code or free text (rule:
// docs/history.md#event-details-an-allowlist-per-event-type). Only the store's
// own details types implement it, and each names the one event type it is
// recorded under, so writing an event takes exactly its type's details.
type EventDetails interface {
	// EventType is the event type these details are recorded under.
	EventType() EventType
	// check refuses a value outside its field's rule: an ID that is not a
	// canonical UUID, a code that is not on its list, a negative count.
	check() error
}

// The JSON of each details struct is what history stores and the JSON API
// shows. Its fields are declared in the order of their JSON names, so the
// stored object's keys stay sorted, and a field is left out only where a
// writer leaves it out (omitempty).

// ProgramCreatedDetails are a program_created event's: none.
type ProgramCreatedDetails struct{}

// NoticePublishedDetails are a notice_published event's.
type NoticePublishedDetails struct {
	// Version is the published notice's version.
	Version int `json:"version"`
}

// SignupDetails are a signup event's.
type SignupDetails struct {
	// NoticeVersion is the notice version the applicant joined under.
	NoticeVersion int `json:"noticeVersion"`
}

// SelectedDetails are a selected event's.
type SelectedDetails struct {
	// Batch is set when the entry was one of a bulk selection.
	Batch bool `json:"batch,omitempty"`
	// From is the entry state it left (EntryStates).
	From   string       `json:"from"`
	Reason SelectReason `json:"reason"`
}

// DeclinedDetails are a declined event's.
type DeclinedDetails struct {
	// Batch is set when the entry was one of a bulk decline.
	Batch bool `json:"batch,omitempty"`
	// From is the entry state it left (EntryStates).
	From   string        `json:"from"`
	Reason DeclineReason `json:"reason"`
}

// InviteIssuedDetails are an invite_issued event's.
type InviteIssuedDetails struct {
	// Batch is set when the invitation was one of a bulk issue.
	Batch        bool   `json:"batch,omitempty"`
	InvitationID string `json:"invitationId"`
}

// DeliveryRecordedDetails are a delivery_recorded event's.
type DeliveryRecordedDetails struct {
	// Batch is set when the record was one of a bulk delivery record.
	Batch bool `json:"batch,omitempty"`
	// Channel is how the owner says they sent the code (DeliveryChannels).
	Channel      string `json:"channel"`
	InvitationID string `json:"invitationId"`
}

// InviteRevokedDetails are an invite_revoked event's: the invitation an
// owner revoked, or the cause when it ended with its entry.
type InviteRevokedDetails struct {
	Cause        EndCause `json:"cause,omitempty"`
	InvitationID string   `json:"invitationId,omitempty"`
}

// InviteExpiredDetails are an invite_expired event's.
type InviteExpiredDetails struct {
	InvitationID string `json:"invitationId"`
}

// RedeemedDetails are a redeemed event's.
type RedeemedDetails struct {
	GrantID      string `json:"grantId"`
	InvitationID string `json:"invitationId"`
}

// GrantRevokedDetails are a grant_revoked event's: the grant an owner
// revoked, or the cause when it ended with its entry.
type GrantRevokedDetails struct {
	Cause   EndCause `json:"cause,omitempty"`
	GrantID string   `json:"grantId,omitempty"`
}

// WithdrawnDetails are a withdrawn event's.
type WithdrawnDetails struct {
	// From is the entry state it left (EntryStates).
	From string        `json:"from"`
	Via  WithdrawalVia `json:"via"`
}

// ContentUpdatedDetails are a content_updated event's.
type ContentUpdatedDetails struct {
	Revision int64 `json:"revision"`
}

// AssetUploadedDetails are an asset_uploaded event's.
type AssetUploadedDetails struct {
	Bytes int `json:"bytes"`
}

// ProgramChangedDetails are a program_changed event's: the settings after
// the change.
type ProgramChangedDetails struct {
	AccessEnabled bool `json:"accessEnabled"`
	HourlyCap     int  `json:"hourlyCap"`
	QueueCap      int  `json:"queueCap"`
	// Renamed says whether the name changed: the name itself is free text,
	// which history never holds.
	Renamed    bool `json:"renamed"`
	SeatCap    int  `json:"seatCap"`
	SignupOpen bool `json:"signupOpen"`
}

// programChanged are the details of a program's change from before to
// after: its settings after the change, and whether it was renamed.
func programChanged(before, after *Program) ProgramChangedDetails {
	return ProgramChangedDetails{
		SignupOpen: after.SignupOpen, AccessEnabled: after.AccessEnabled,
		QueueCap: after.QueueCap, HourlyCap: after.HourlyCap, SeatCap: after.SeatCap,
		// The name itself is free text, which history never holds.
		Renamed: after.Name != before.Name,
	}
}

// ProgramRetiredDetails are a program_retired event's: what the
// retirement ends.
type ProgramRetiredDetails struct {
	Entries            int64 `json:"entries"`
	GrantsRevoked      int64 `json:"grantsRevoked"`
	InvitationsRevoked int64 `json:"invitationsRevoked"`
}

// QueueExportedDetails are a queue_exported event's.
type QueueExportedDetails struct {
	Rows int `json:"rows"`
}

// ErasedDetails are an erased event's.
type ErasedDetails struct {
	Reason ErasureReason `json:"reason"`
}

// WithdrawalVia says who asked for a withdrawal and how.
type WithdrawalVia string

// How a withdrawal came.
const (
	// ViaApplicant: the applicant, signed in.
	ViaApplicant WithdrawalVia = "applicant"
	// ViaRemovalLink: the private removal link.
	ViaRemovalLink WithdrawalVia = "removal_link"
	// ViaApplicantRequest: the owner, on the applicant's documented
	// request (WithdrawReasons).
	ViaApplicantRequest WithdrawalVia = "applicant_request"
)

// EndCause says why an invitation or grant ended without its own action.
type EndCause string

// CauseWithdrawn: the entry was withdrawn (or removed, or retired).
const CauseWithdrawn EndCause = "withdrawn"

// ErasureReason says which rule erased an entry's personal data.
type ErasureReason string

// Rules that erase an entry's address.
const (
	ErasedByRemovalLink ErasureReason = "removal_link"
	ErasedByRetention   ErasureReason = "retention"
)

// eventRegistry is every program event type with its details type, in the
// order a program's life usually meets them: the allowlist. A type is
// written only as its details struct and read back into it.
var eventRegistry = []detailsType{
	registered[ProgramCreatedDetails](), registered[NoticePublishedDetails](), registered[ProgramChangedDetails](),
	registered[ContentUpdatedDetails](), registered[AssetUploadedDetails](), registered[SignupDetails](),
	registered[SelectedDetails](), registered[DeclinedDetails](), registered[InviteIssuedDetails](),
	registered[DeliveryRecordedDetails](), registered[InviteExpiredDetails](), registered[InviteRevokedDetails](),
	registered[RedeemedDetails](), registered[GrantRevokedDetails](), registered[WithdrawnDetails](),
	registered[ErasedDetails](), registered[QueueExportedDetails](), registered[ProgramRetiredDetails](),
}

// detailsType is one event type's entry in the registry.
type detailsType struct {
	zero   EventDetails
	decode func(stored []byte) (EventDetails, error)
}

// registered is the registry entry of details type D.
func registered[D EventDetails]() detailsType {
	var zero D
	return detailsType{zero: zero, decode: func(stored []byte) (EventDetails, error) {
		var d D
		err := json.Unmarshal(stored, &d)
		return d, err
	}}
}

// detailsByType finds a registry entry by its event type.
var detailsByType = func() map[string]detailsType {
	m := make(map[string]detailsType, len(eventRegistry))
	for _, dt := range eventRegistry {
		m[string(dt.zero.EventType())] = dt
	}
	return m
}()

// EventTypes lists every program event type, in the order a program's
// life usually meets them.
var EventTypes = func() []string {
	out := make([]string, 0, len(eventRegistry))
	for _, dt := range eventRegistry {
		out = append(out, string(dt.zero.EventType()))
	}
	return out
}()

// DecodeEventDetails reads an event's stored details into its type's
// struct. A key the struct does not have (one an older version wrote) is
// ignored, and a key an older row lacks reads as its zero value, so every
// stored row still reads; a value of the wrong JSON type is an error.
func DecodeEventDetails(eventType string, stored []byte) (EventDetails, error) {
	dt, ok := detailsByType[eventType]
	if !ok {
		return nil, fmt.Errorf("audit event type %q is not registered", eventType)
	}
	d, err := dt.decode(stored)
	if err != nil {
		return nil, fmt.Errorf("decode %s details: %w", eventType, err)
	}
	return d, nil
}

// checkDetails applies the registry's rules to an event before it is
// stored: its type must be registered and each value must keep its rule.
func checkDetails(d EventDetails) error {
	if d == nil {
		return fmt.Errorf("audit event without details")
	}
	if _, ok := detailsByType[string(d.EventType())]; !ok {
		return fmt.Errorf("audit event type %q is not registered", d.EventType())
	}
	return d.check()
}

// rule is one detail key and whether its value keeps the key's rule.
type rule struct {
	key  string
	kept bool
}

// brokenRule is the error for the first rule a value breaks, or nil.
func brokenRule(t EventType, rules ...rule) error {
	for _, r := range rules {
		if !r.kept {
			return fmt.Errorf("audit detail %q on %s events holds a value outside its rule", r.key, t)
		}
	}
	return nil
}

// anID is a canonical lowercase UUID: a row's ID.
func anID(s string) bool {
	u, err := uuid.Parse(s)
	return err == nil && u.String() == s
}

// noneOrID is an ID a writer may leave out.
func noneOrID(s string) bool { return s == "" || anID(s) }

// aCount is a non-negative integer.
func aCount[N int | int64](n N) bool { return n >= 0 }

// aState is an entry state.
func aState(s string) bool { return oneOf(s, EntryStates) }

// EventType is program_created.
func (ProgramCreatedDetails) EventType() EventType { return EventProgramCreated }

// EventType is notice_published.
func (NoticePublishedDetails) EventType() EventType { return EventNoticePublished }

// EventType is signup.
func (SignupDetails) EventType() EventType { return EventSignup }

// EventType is selected.
func (SelectedDetails) EventType() EventType { return EventSelected }

// EventType is declined.
func (DeclinedDetails) EventType() EventType { return EventDeclined }

// EventType is invite_issued.
func (InviteIssuedDetails) EventType() EventType { return EventInviteIssued }

// EventType is delivery_recorded.
func (DeliveryRecordedDetails) EventType() EventType { return EventDeliveryRecorded }

// EventType is invite_revoked.
func (InviteRevokedDetails) EventType() EventType { return EventInviteRevoked }

// EventType is invite_expired.
func (InviteExpiredDetails) EventType() EventType { return EventInviteExpired }

// EventType is redeemed.
func (RedeemedDetails) EventType() EventType { return EventRedeemed }

// EventType is grant_revoked.
func (GrantRevokedDetails) EventType() EventType { return EventGrantRevoked }

// EventType is withdrawn.
func (WithdrawnDetails) EventType() EventType { return EventWithdrawn }

// EventType is content_updated.
func (ContentUpdatedDetails) EventType() EventType { return EventContentUpdated }

// EventType is asset_uploaded.
func (AssetUploadedDetails) EventType() EventType { return EventAssetUploaded }

// EventType is program_changed.
func (ProgramChangedDetails) EventType() EventType { return EventProgramChanged }

// EventType is program_retired.
func (ProgramRetiredDetails) EventType() EventType { return EventProgramRetired }

// EventType is queue_exported.
func (QueueExportedDetails) EventType() EventType { return EventQueueExported }

// EventType is erased.
func (ErasedDetails) EventType() EventType { return EventErased }

func (ProgramCreatedDetails) check() error { return nil }

func (d NoticePublishedDetails) check() error {
	return brokenRule(EventNoticePublished, rule{"version", aCount(d.Version)})
}

func (d SignupDetails) check() error {
	return brokenRule(EventSignup, rule{"noticeVersion", aCount(d.NoticeVersion)})
}

func (d SelectedDetails) check() error {
	return brokenRule(EventSelected, rule{"reason", oneOf(string(d.Reason), SelectReasons)}, rule{"from", aState(d.From)})
}

func (d DeclinedDetails) check() error {
	return brokenRule(EventDeclined, rule{"reason", oneOf(string(d.Reason), DeclineReasons)}, rule{"from", aState(d.From)})
}

func (d InviteIssuedDetails) check() error {
	return brokenRule(EventInviteIssued, rule{"invitationId", anID(d.InvitationID)})
}

func (d DeliveryRecordedDetails) check() error {
	return brokenRule(EventDeliveryRecorded, rule{"invitationId", anID(d.InvitationID)},
		rule{"channel", oneOf(d.Channel, DeliveryChannels)})
}

func (d InviteRevokedDetails) check() error {
	return brokenRule(EventInviteRevoked, rule{"invitationId", noneOrID(d.InvitationID)},
		rule{"cause", d.Cause == "" || d.Cause == CauseWithdrawn})
}

func (d InviteExpiredDetails) check() error {
	return brokenRule(EventInviteExpired, rule{"invitationId", anID(d.InvitationID)})
}

func (d RedeemedDetails) check() error {
	return brokenRule(EventRedeemed, rule{"invitationId", anID(d.InvitationID)}, rule{"grantId", anID(d.GrantID)})
}

func (d GrantRevokedDetails) check() error {
	return brokenRule(EventGrantRevoked, rule{"grantId", noneOrID(d.GrantID)},
		rule{"cause", d.Cause == "" || d.Cause == CauseWithdrawn})
}

func (d WithdrawnDetails) check() error {
	via := d.Via == ViaApplicant || d.Via == ViaRemovalLink || d.Via == ViaApplicantRequest
	return brokenRule(EventWithdrawn, rule{"from", aState(d.From)}, rule{"via", via})
}

func (d ContentUpdatedDetails) check() error {
	return brokenRule(EventContentUpdated, rule{"revision", aCount(d.Revision)})
}

func (d AssetUploadedDetails) check() error {
	return brokenRule(EventAssetUploaded, rule{"bytes", aCount(d.Bytes)})
}

func (d ProgramChangedDetails) check() error {
	return brokenRule(EventProgramChanged, rule{"queueCap", aCount(d.QueueCap)},
		rule{"hourlyCap", aCount(d.HourlyCap)}, rule{"seatCap", aCount(d.SeatCap)})
}

func (d ProgramRetiredDetails) check() error {
	return brokenRule(EventProgramRetired, rule{"entries", aCount(d.Entries)},
		rule{"invitationsRevoked", aCount(d.InvitationsRevoked)}, rule{"grantsRevoked", aCount(d.GrantsRevoked)})
}

func (d QueueExportedDetails) check() error {
	return brokenRule(EventQueueExported, rule{"rows", aCount(d.Rows)})
}

func (d ErasedDetails) check() error {
	return brokenRule(EventErased, rule{"reason", d.Reason == ErasedByRemovalLink || d.Reason == ErasedByRetention})
}
