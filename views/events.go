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
	d := e.Details
	var out []string
	add := func(s string) { out = append(out, s) }
	str := func(k string) string { s, _ := d[k].(string); return s }
	num := func(k string) (int, bool) {
		f, ok := d[k].(float64)
		return int(f), ok
	}
	switch store.EventType(e.Type) {
	case store.EventSignup:
		if n, ok := num("noticeVersion"); ok {
			add("under notice version " + strconv.Itoa(n))
		}
	case store.EventSelected, store.EventDeclined:
		if r := str("reason"); r != "" {
			add(reasonLabel(r))
		}
		if f := str("from"); f != "" && f != store.StateWaiting {
			add("was " + strings.ToLower(stateLabel(f)))
		}
		if b, _ := d["batch"].(bool); b {
			add("in a batch")
		}
	case store.EventWithdrawn:
		switch str("via") {
		case "applicant":
			add("by the applicant, signed in")
		case "removal_link":
			add("with the private removal link")
		case "applicant_request":
			add("by the owner, at the applicant's request")
		}
		if f := str("from"); f != "" {
			add("was " + strings.ToLower(stateLabel(f)))
		}
	case store.EventInviteIssued, store.EventInviteExpired, store.EventRedeemed:
		if id := str("invitationId"); id != "" {
			add("invitation " + EntrySuffix(id))
		}
	case store.EventDeliveryRecorded:
		if c := str("channel"); c != "" {
			add("by " + strings.ToLower(ChannelLabel(c)))
		}
	case store.EventInviteRevoked, store.EventGrantRevoked:
		if str("cause") == "withdrawn" {
			add("because the entry was withdrawn")
		}
	case store.EventNoticePublished:
		if n, ok := num("version"); ok {
			add("version " + strconv.Itoa(n))
		}
	case store.EventContentUpdated:
		if n, ok := num("revision"); ok {
			add("revision " + strconv.Itoa(n))
		}
	case store.EventAssetUploaded:
		if n, ok := num("bytes"); ok {
			add(Bytes(n))
		}
	case store.EventProgramChanged:
		if b, ok := d["renamed"].(bool); ok && b {
			add("renamed")
		}
		if b, ok := d["signupOpen"].(bool); ok {
			add("signup " + map[bool]string{true: "open", false: "closed"}[b])
		}
		if b, ok := d["accessEnabled"].(bool); ok {
			add("access " + map[bool]string{true: "enabled", false: "off"}[b])
		}
		if n, ok := num("queueCap"); ok {
			add("queue cap " + strconv.Itoa(n))
		}
		if n, ok := num("hourlyCap"); ok {
			add(strconv.Itoa(n) + " signups an hour")
		}
		if n, ok := num("seatCap"); ok {
			add(strconv.Itoa(n) + " seats")
		}
	case store.EventProgramRetired:
		if n, ok := num("entries"); ok {
			add(strconv.Itoa(n) + " entries scheduled for erasure")
		}
		if n, ok := num("invitationsRevoked"); ok {
			add(strconv.Itoa(n) + " invitations revoked")
		}
		if n, ok := num("grantsRevoked"); ok {
			add(strconv.Itoa(n) + " accesses revoked")
		}
	case store.EventQueueExported:
		if n, ok := num("rows"); ok {
			add(strconv.Itoa(n) + " rows")
		}
	case store.EventErased:
		switch str("reason") {
		case "removal_link":
			add("removed with the private link")
		case "retention":
			add("its retention period ended")
		}
	}
	return out
}
