package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// ActorKind says who caused an audited change.
type ActorKind string

// Actor kinds recorded on audit events.
const (
	ActorOwner     ActorKind = "owner"
	ActorRecipient ActorKind = "recipient"
	ActorPublic    ActorKind = "public"
	ActorSystem    ActorKind = "system"
	ActorCLI       ActorKind = "cli"
)

// Actor is the person or process performing an operation.
type Actor struct {
	Kind ActorKind
	// UserID is the identity provider's user ID for owners and recipients.
	UserID string
}

// EventType names a kind of program audit event. Every type admit records
// is declared here and has its details struct in eventRegistry
// (store/audit_details.go), which says the type it is recorded under.
type EventType string

// Program audit event types.
const (
	EventProgramCreated   EventType = "program_created"
	EventNoticePublished  EventType = "notice_published"
	EventSignup           EventType = "signup"
	EventSelected         EventType = "selected"
	EventDeclined         EventType = "declined"
	EventInviteIssued     EventType = "invite_issued"
	EventDeliveryRecorded EventType = "delivery_recorded"
	EventInviteRevoked    EventType = "invite_revoked"
	EventInviteExpired    EventType = "invite_expired"
	EventRedeemed         EventType = "redeemed"
	EventGrantRevoked     EventType = "grant_revoked"
	EventWithdrawn        EventType = "withdrawn"
	EventContentUpdated   EventType = "content_updated"
	EventAssetUploaded    EventType = "asset_uploaded"
	EventProgramChanged   EventType = "program_changed"
	EventProgramRetired   EventType = "program_retired"
	EventQueueExported    EventType = "queue_exported"
	EventErased           EventType = "erased"
)

// Event is one audit record.
type Event struct {
	ID        int64
	ProgramID string
	EntryID   string
	Type      string
	ActorKind ActorKind
	At        time.Time
	// Details are the event's details read into its type's struct
	// (DecodeEventDetails).
	Details EventDetails
	// StoredDetails are the details exactly as history holds them: the
	// JSON API answers with these bytes, so what it shows of an event
	// never depends on which version of admit reads it.
	StoredDetails json.RawMessage
	// EntryEmail is the entry's address while it keeps one, where the read
	// asked for it (FilteredEvents); "" otherwise.
	EntryEmail string
	// ActorID is an owner event's actor as a team membership ID, never the
	// identity provider's user ID; "" for other actors.
	ActorID string
	// ActorName is the name (or else the sign-in address) the team knows
	// the acting owner by now; "" when it knows none.
	ActorName string
	// ActorFormer is set when the acting owner has since been removed.
	ActorFormer bool
}

// maxDetailsBytes bounds an event's serialized details (the schema checks it too).
const maxDetailsBytes = 512

// appendEvent records a program audit event of d's type in tx at tx.Now,
// after checking d's values against their rules: an event that fails is
// never stored.
func appendEvent(ctx context.Context, tx *Tx, programID, entryID string, a Actor, d EventDetails) error {
	row, err := newEventRow(programID, entryID, a, d)
	if err != nil {
		return err
	}
	if err := eventRows.insert(ctx, tx, row.appendValues(nil, tx)); err != nil {
		return fmt.Errorf("append %s event: %w", row.eventType, err)
	}
	return nil
}

// queueEvent checks and encodes an audit event as appendEvent does, and
// leaves its insert to the end of the transaction, where the queued events
// are written together (store/queued.go). A signup's event is queued.
// Nothing reads an event in the transaction that appends it, and every
// check is made here, so its insert can fail only as the whole
// transaction would.
func queueEvent(tx *Tx, programID, entryID string, a Actor, d EventDetails) error {
	row, err := newEventRow(programID, entryID, a, d)
	if err != nil {
		return err
	}
	tx.queuedEvents = row.appendValues(tx.queuedEvents, tx)
	return nil
}

// eventRow is one audit event, checked and encoded for its insert.
type eventRow struct {
	programID            string
	entryID, actorUserID any // nil: NULL
	kind, eventType      string
	details              string
}

// appendValues appends the row's values to dst in eventRows' column
// order, at tx.Now.
func (r eventRow) appendValues(dst []any, tx *Tx) []any {
	return append(dst, r.programID, r.entryID, r.kind, r.actorUserID, r.eventType, Millis(tx.Now), r.details)
}

// eventRows inserts audit events, many a statement.
var eventRows = newManyRows("audit_events", "program_id", "entry_id", "actor_kind", "actor_user_id", "event_type", "event_at", "details")

// newEventRow checks an event's details against their rules and size
// bound, and encodes them.
func newEventRow(programID, entryID string, a Actor, d EventDetails) (eventRow, error) {
	if err := checkDetails(d); err != nil {
		return eventRow{}, err
	}
	eventType := d.EventType()
	b, err := json.Marshal(d)
	if err != nil {
		return eventRow{}, fmt.Errorf("encode audit details: %w", err)
	}
	if len(b) > maxDetailsBytes {
		return eventRow{}, fmt.Errorf("audit details for %s exceed %d bytes", eventType, maxDetailsBytes)
	}
	kind := a.Kind
	if kind == ActorCLI {
		kind = ActorSystem
	}
	row := eventRow{programID: programID, kind: string(kind), eventType: string(eventType), details: string(b)}
	if a.UserID != "" && (kind == ActorOwner || kind == ActorRecipient) {
		row.actorUserID = a.UserID
	}
	if entryID != "" {
		row.entryID = entryID
	}
	return row, nil
}

// appendWorkspaceEvent records a workspace-level audit event (staff changes).
func appendWorkspaceEvent(ctx context.Context, tx *Tx, workspaceID string, a Actor, eventType, subjectUserID string) error {
	return appendTeamEvent(ctx, tx, workspaceID, a, eventType, subjectUserID, TeamEventDetails{})
}

// TeamEventDetails are a workspace event's details: membership and owner
// invite IDs only, never an address or a user ID.
type TeamEventDetails struct {
	// By is the acting owner's membership ID, when an owner acted.
	By string `json:"by,omitempty"`
	// MemberID is the membership the event is about.
	MemberID string `json:"memberId,omitempty"`
	// InviteID is the owner invite by address the event made or used.
	InviteID string `json:"inviteId,omitempty"`
	// Pending is set when an owner was added by address and has not yet
	// signed in with it.
	Pending bool `json:"pending,omitempty"`
}

// appendTeamEvent records a workspace event with its details.
func appendTeamEvent(ctx context.Context, tx *Tx, workspaceID string, a Actor, eventType, subjectUserID string, d TeamEventDetails) error {
	kind := a.Kind
	if kind == ActorRecipient || kind == ActorPublic {
		return fmt.Errorf("actor %s cannot change a workspace", kind)
	}
	var subject any
	if subjectUserID != "" {
		subject = subjectUserID
	}
	details, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode team details: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO workspace_events
		(workspace_id, actor_kind, event_type, subject_user_id, event_at, details) VALUES (?, ?, ?, ?, ?, ?)`,
		workspaceID, string(kind), eventType, subject, Millis(tx.Now), string(details))
	if err != nil {
		return fmt.Errorf("append %s event: %w", eventType, err)
	}
	return nil
}

// WorkspaceEvent is one workspace-level audit record.
type WorkspaceEvent struct {
	ID            int64
	Type          string
	ActorKind     ActorKind
	SubjectUserID string
	At            time.Time
}

// WorkspaceEvents lists a workspace's staff audit trail, oldest first.
func (db *DB) WorkspaceEvents(ctx context.Context, workspaceName string) ([]WorkspaceEvent, error) {
	var out []WorkspaceEvent
	err := db.View(ctx, func(tx *Tx) error {
		w, err := workspaceByName(ctx, tx, workspaceName)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT e.id, e.event_type, e.actor_kind, coalesce(e.subject_user_id, ''), e.event_at
			FROM workspace_events e WHERE e.workspace_id = ? ORDER BY e.id`, w.ID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ev WorkspaceEvent
			var at int64
			if err := rows.Scan(&ev.ID, &ev.Type, &ev.ActorKind, &ev.SubjectUserID, &at); err != nil {
				return err
			}
			ev.At = FromMillis(at)
			out = append(out, ev)
		}
		return rows.Err()
	})
	return out, err
}
