package views

import (
	"strconv"
	"strings"

	"admit/store"
)

// The audit log in words: what each event type, actor and detail means to
// the owner reading it. History stores only codes and IDs
// (docs/history.md); these functions are the one place they become words.

// eventLabels name each event type.
var eventLabels = map[string]string{
	string(store.EventProgramCreated):   "Program created",
	string(store.EventNoticePublished):  "Notice published",
	string(store.EventProgramChanged):   "Settings changed",
	string(store.EventContentUpdated):   "Private content updated",
	string(store.EventAssetUploaded):    "File uploaded",
	string(store.EventSignup):           "Joined",
	string(store.EventSelected):         "Selected",
	string(store.EventDeclined):         "Declined",
	string(store.EventInviteIssued):     "Invitation issued",
	string(store.EventDeliveryRecorded): "Invitation sent",
	string(store.EventInviteExpired):    "Invitation expired",
	string(store.EventInviteRevoked):    "Invitation revoked",
	string(store.EventRedeemed):         "Invitation redeemed",
	string(store.EventGrantRevoked):     "Access revoked",
	string(store.EventWithdrawn):        "Withdrawn",
	string(store.EventErased):           "Address erased",
	string(store.EventQueueExported):    "Queue exported",
	string(store.EventProgramRetired):   "Program retired",
}

// EventLabel names an event type for people.
func EventLabel(t string) string {
	if l, ok := eventLabels[t]; ok {
		return l
	}
	return t
}

// EventTypeOption is one choice of the audit log's type filter.
type EventTypeOption struct {
	Value, Label string
}

// EventTypeOptions lists every event type, in the order a program meets them.
func EventTypeOptions() []EventTypeOption {
	out := make([]EventTypeOption, 0, len(store.EventTypes))
	for _, t := range store.EventTypes {
		out = append(out, EventTypeOption{Value: t, Label: EventLabel(t)})
	}
	return out
}

// actorLabel says who caused an event.
func actorLabel(kind string) string {
	switch kind {
	case string(store.ActorOwner):
		return "Owner"
	case string(store.ActorRecipient):
		return "Applicant (signed in)"
	case string(store.ActorPublic):
		return "Applicant"
	case string(store.ActorSystem):
		return "admit"
	}
	return kind
}

// eventActor says who acted: an owner by the name the team knows them by
// now, "former owner" once removed (docs/console.md#team).
func eventActor(e EventRow) string {
	if e.ActorKind != string(store.ActorOwner) || e.ActorID == "" {
		return actorLabel(e.ActorKind)
	}
	name := e.ActorName
	if name == "" {
		// Unnamed owners differ by their membership ID's end.
		name = "Owner " + e.ActorID[len(e.ActorID)-4:]
	}
	if e.ActorFormer {
		return name + " (former owner)"
	}
	return name
}

// EntrySuffix tells entries apart without an address: time-ordered IDs
// share their first characters, so it is the ID's last 8.
func EntrySuffix(id string) string {
	if len(id) > 8 {
		return "…" + id[len(id)-8:]
	}
	return id
}

// entryLabel names an event's entry: its address while it has one, else
// "Entry …" and the end of its ID.
func entryLabel(e EventRow) string {
	if e.EntryEmail != "" {
		return e.EntryEmail
	}
	return "Entry " + EntrySuffix(e.EntryID)
}

// eventDetailText says an event's details in words, one phrase each.
func eventDetailText(e EventRow) []string {
	phrases, _ := detailPhrases(e.Details)
	return phrases
}

// detailPhrases says details in words with the function for their event
// type; ok is false for details of a type it has no words for.
func detailPhrases(d store.EventDetails) (phrases []string, ok bool) {
	switch d := d.(type) {
	case store.ProgramCreatedDetails:
		return nil, true
	case store.NoticePublishedDetails:
		return noticePublishedText(d), true
	case store.ProgramChangedDetails:
		return programChangedText(d), true
	case store.ContentUpdatedDetails:
		return contentUpdatedText(d), true
	case store.AssetUploadedDetails:
		return assetUploadedText(d), true
	case store.SignupDetails:
		return signupText(d), true
	case store.SelectedDetails:
		return decisionText(string(d.Reason), d.From, d.Batch), true
	case store.DeclinedDetails:
		return decisionText(string(d.Reason), d.From, d.Batch), true
	case store.InviteIssuedDetails:
		return invitationText(d.InvitationID), true
	case store.DeliveryRecordedDetails:
		return deliveryRecordedText(d), true
	case store.InviteExpiredDetails:
		return invitationText(d.InvitationID), true
	case store.InviteRevokedDetails:
		return endCauseText(d.Cause), true
	case store.RedeemedDetails:
		return invitationText(d.InvitationID), true
	case store.GrantRevokedDetails:
		return endCauseText(d.Cause), true
	case store.WithdrawnDetails:
		return withdrawnText(d), true
	case store.ErasedDetails:
		return erasedText(d), true
	case store.QueueExportedDetails:
		return queueExportedText(d), true
	case store.ProgramRetiredDetails:
		return programRetiredText(d), true
	}
	return nil, false
}

func noticePublishedText(d store.NoticePublishedDetails) []string {
	return []string{"version " + strconv.Itoa(d.Version)}
}

func programChangedText(d store.ProgramChangedDetails) []string {
	var out []string
	if d.Renamed {
		out = append(out, "renamed")
	}
	signup, access := "signup closed", "access off"
	if d.SignupOpen {
		signup = "signup open"
	}
	if d.AccessEnabled {
		access = "access enabled"
	}
	return append(out, signup, access, "queue cap "+strconv.Itoa(d.QueueCap),
		strconv.Itoa(d.HourlyCap)+" signups an hour", strconv.Itoa(d.SeatCap)+" seats")
}

func contentUpdatedText(d store.ContentUpdatedDetails) []string {
	return []string{"revision " + strconv.FormatInt(d.Revision, 10)}
}

func assetUploadedText(d store.AssetUploadedDetails) []string {
	return []string{Bytes(d.Bytes)}
}

func signupText(d store.SignupDetails) []string {
	return []string{"under notice version " + strconv.Itoa(d.NoticeVersion)}
}

// decisionText says a selection's or a decline's reason, the state the
// entry left when it was not waiting, and whether it was one of a batch.
func decisionText(reason, from string, batch bool) []string {
	var out []string
	if reason != "" {
		out = append(out, reasonLabel(reason))
	}
	if from != "" && from != store.StateWaiting {
		out = append(out, wasText(from))
	}
	if batch {
		out = append(out, "in a batch")
	}
	return out
}

// wasText says the state an entry left.
func wasText(state string) string {
	return "was " + strings.ToLower(stateLabel(state))
}

// invitationText names the invitation an event is about.
func invitationText(id string) []string {
	if id == "" {
		return nil
	}
	return []string{"invitation " + EntrySuffix(id)}
}

func deliveryRecordedText(d store.DeliveryRecordedDetails) []string {
	if d.Channel == "" {
		return nil
	}
	return []string{"by " + strings.ToLower(ChannelLabel(d.Channel))}
}

// endCauseText says why an invitation or grant ended, when it ended with
// its entry.
func endCauseText(c store.EndCause) []string {
	if c == store.CauseWithdrawn {
		return []string{"because the entry was withdrawn"}
	}
	return nil
}

// withdrawalVia says who withdrew an entry and how.
var withdrawalVia = map[store.WithdrawalVia]string{
	store.ViaApplicant:        "by the applicant, signed in",
	store.ViaRemovalLink:      "with the private removal link",
	store.ViaApplicantRequest: "by the owner, at the applicant's request",
}

func withdrawnText(d store.WithdrawnDetails) []string {
	var out []string
	if via, ok := withdrawalVia[d.Via]; ok {
		out = append(out, via)
	}
	if d.From != "" {
		out = append(out, wasText(d.From))
	}
	return out
}

// erasureReasons say which rule erased an address.
var erasureReasons = map[store.ErasureReason]string{
	store.ErasedByRemovalLink: "removed with the private link",
	store.ErasedByRetention:   "its retention period ended",
}

func erasedText(d store.ErasedDetails) []string {
	if r, ok := erasureReasons[d.Reason]; ok {
		return []string{r}
	}
	return nil
}

func queueExportedText(d store.QueueExportedDetails) []string {
	return []string{strconv.Itoa(d.Rows) + " rows"}
}

func programRetiredText(d store.ProgramRetiredDetails) []string {
	return []string{strconv.FormatInt(d.Entries, 10) + " entries scheduled for erasure",
		strconv.FormatInt(d.InvitationsRevoked, 10) + " invitations revoked",
		strconv.FormatInt(d.GrantsRevoked, 10) + " accesses revoked"}
}
