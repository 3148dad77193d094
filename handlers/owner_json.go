package handlers

import (
	"encoding/json"
	"time"

	"admit/store"
)

// This file holds the owner JSON API's response shapes (docs/API.md#shapes). Every
// instant is RFC 3339 UTC; an absent instant or text is null.

// rfc3339 formats an instant as the API does everywhere.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// rfc3339Ptr formats an optional instant; nil stays null.
func rfc3339Ptr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := rfc3339(*t)
	return &s
}

// nonEmpty returns nil for "" so an absent text is null.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// entryJSON is the API's Entry. Email is null once the address is erased.
type entryJSON struct {
	ID            string  `json:"id"`
	Email         *string `json:"email"`
	State         string  `json:"state"`
	CreatedAt     string  `json:"createdAt"`
	UpdatedAt     string  `json:"updatedAt"`
	NoticeVersion int     `json:"noticeVersion"`
	PermissionAt  string  `json:"permissionAt"`
}

func toEntryJSON(e *store.Entry) entryJSON {
	return entryJSON{ID: e.ID, Email: nonEmpty(e.Email), State: e.State, CreatedAt: rfc3339(e.CreatedAt),
		UpdatedAt: rfc3339(e.UpdatedAt), NoticeVersion: e.NoticeVersion, PermissionAt: rfc3339(e.PermissionAt)}
}

func toEntriesJSON(es []store.Entry) []entryJSON {
	out := make([]entryJSON, 0, len(es))
	for i := range es {
		out = append(out, toEntryJSON(&es[i]))
	}
	return out
}

// invitationJSON is the API's Invitation. The code is never part of it.
type invitationJSON struct {
	ID                 string  `json:"id"`
	EntryID            string  `json:"entryId"`
	State              string  `json:"state"`
	IssuedAt           string  `json:"issuedAt"`
	ExpiresAt          string  `json:"expiresAt"`
	DeliveryRecordedAt *string `json:"deliveryRecordedAt"`
	DeliveryChannel    *string `json:"deliveryChannel"`
	DeliveryReference  *string `json:"deliveryReference"`
}

// toInvitationJSON is an invitation as an owner sees it at now (see
// store.Invitation.StateAt).
func toInvitationJSON(inv *store.Invitation, now time.Time) invitationJSON {
	return invitationJSON{ID: inv.ID, EntryID: inv.EntryID, State: inv.StateAt(now),
		IssuedAt: rfc3339(inv.IssuedAt), ExpiresAt: rfc3339(inv.ExpiresAt),
		DeliveryRecordedAt: rfc3339Ptr(inv.DeliveryRecordedAt), DeliveryChannel: nonEmpty(inv.DeliveryChannel),
		DeliveryReference: nonEmpty(inv.DeliveryReference)}
}

// issuedJSON is the answer to an invitation issue: the code only the first
// time, never on a same-key replay.
type issuedJSON struct {
	Invitation invitationJSON `json:"invitation"`
	Code       string         `json:"code,omitempty"`
}

// grantJSON is a recipient's access as the owner sees it. The recipient's
// identity-provider user ID is not part of it.
type grantJSON struct {
	ID           string  `json:"id"`
	InvitationID string  `json:"invitationId"`
	Active       bool    `json:"active"`
	GrantedAt    string  `json:"grantedAt"`
	RevokedAt    *string `json:"revokedAt"`
}

func toGrantJSON(g *store.Grant) *grantJSON {
	if g == nil {
		return nil
	}
	return &grantJSON{ID: g.ID, InvitationID: g.InvitationID, Active: g.Active, GrantedAt: rfc3339(g.GrantedAt),
		RevokedAt: rfc3339Ptr(g.RevokedAt)}
}

// grantRevokedJSON is the answer to a grant revoke.
type grantRevokedJSON struct {
	ID        string  `json:"id"`
	Active    bool    `json:"active"`
	RevokedAt *string `json:"revokedAt"`
}

// eventJSON is one audit event. Details hold IDs, states and reason codes only.
type eventJSON struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	ActorKind string `json:"actorKind"`
	// ActorID is an owner event's acting owner as a team membership ID;
	// null for other actors. Never the identity provider's user ID.
	ActorID *string `json:"actorId"`
	At      string  `json:"at"`
	EntryID *string `json:"entryId"`
	// Details are the details object as history stores it (its keys per
	// event type are store's …Details structs).
	Details json.RawMessage `json:"details"`
}

func toEventsJSON(evs []store.Event) []eventJSON {
	out := make([]eventJSON, 0, len(evs))
	for _, ev := range evs {
		d := ev.StoredDetails
		if len(d) == 0 {
			d = json.RawMessage(`{}`)
		}
		out = append(out, eventJSON{ID: ev.ID, Type: ev.Type, ActorKind: string(ev.ActorKind), ActorID: nonEmpty(ev.ActorID), At: rfc3339(ev.At),
			EntryID: nonEmpty(ev.EntryID), Details: d})
	}
	return out
}

// entryDetailJSON is GET …/entries/{entryId}: the entry, the exact notice it
// joined under, its invitations (newest first), grant and audit history.
type entryDetailJSON struct {
	Entry       entryJSON        `json:"entry"`
	Notice      noticeJSON       `json:"notice"`
	Invitations []invitationJSON `json:"invitations"`
	Grant       *grantJSON       `json:"grant"`
	Events      []eventJSON      `json:"events"`
}

func toEntryDetailJSON(d *store.EntryDetail, now time.Time) entryDetailJSON {
	out := entryDetailJSON{Entry: toEntryJSON(&d.Entry), Notice: toNoticeJSON(&d.Notice),
		Invitations: make([]invitationJSON, 0, len(d.Invitations)), Grant: toGrantJSON(d.Grant),
		Events: toEventsJSON(d.Events)}
	for i := range d.Invitations {
		out.Invitations = append(out.Invitations, toInvitationJSON(&d.Invitations[i], now))
	}
	return out
}

// queuePageJSON is a page of the queue. NextCursor is null on the last page.
type queuePageJSON struct {
	Entries    []entryJSON `json:"entries"`
	NextCursor *string     `json:"nextCursor"`
}

// eventPageJSON is a page of the audit log, newest first.
type eventPageJSON struct {
	Events     []eventJSON `json:"events"`
	NextCursor *string     `json:"nextCursor"`
}

// assetJSON describes an uploaded private asset (never its bytes).
type assetJSON struct {
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Size        int    `json:"size"`
	CreatedAt   string `json:"createdAt"`
}

func toAssetJSON(a store.AssetInfo) assetJSON {
	return assetJSON{Name: a.Name, ContentType: a.ContentType, Size: a.Size, CreatedAt: rfc3339(a.CreatedAt)}
}

// contentJSON is the owner's view of the private content.
type contentJSON struct {
	Body     string `json:"body"`
	Revision int64  `json:"revision"`
}
