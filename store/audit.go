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

// Details are an audit event's details: IDs, states and reason codes only,
// never an email, token, code or free text.
type Details map[string]any

// Event is one audit record.
type Event struct {
	ID        int64
	ProgramID string
	EntryID   string
	Type      string
	ActorKind ActorKind
	At        time.Time
	Details   Details
}

// maxDetailsBytes bounds an event's serialized details (the schema checks it too).
const maxDetailsBytes = 512

// appendEvent records a program audit event in tx at tx.Now.
func appendEvent(ctx context.Context, tx *Tx, programID, entryID string, a Actor, eventType string, d Details) error {
	if d == nil {
		d = Details{}
	}
	for k, v := range d {
		switch v.(type) {
		case string, int, int64, bool, nil:
		default:
			return fmt.Errorf("audit detail %q has unsupported type %T", k, v)
		}
	}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode audit details: %w", err)
	}
	if len(b) > maxDetailsBytes {
		return fmt.Errorf("audit details for %s exceed %d bytes", eventType, maxDetailsBytes)
	}
	kind := a.Kind
	if kind == ActorCLI {
		kind = ActorSystem
	}
	var actorID, entry any
	if a.UserID != "" && (kind == ActorOwner || kind == ActorRecipient) {
		actorID = a.UserID
	}
	if entryID != "" {
		entry = entryID
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO audit_events
		(program_id, entry_id, actor_kind, actor_clerk_id, event_type, event_at, details)
		VALUES (?, ?, ?, ?, ?, ?, ?)`,
		programID, entry, string(kind), actorID, eventType, Millis(tx.Now), string(b))
	if err != nil {
		return fmt.Errorf("append %s event: %w", eventType, err)
	}
	return nil
}

// appendWorkspaceEvent records a workspace-level audit event (staff changes).
func appendWorkspaceEvent(ctx context.Context, tx *Tx, workspaceID string, a Actor, eventType, subjectUserID string) error {
	kind := a.Kind
	if kind == ActorRecipient || kind == ActorPublic {
		return fmt.Errorf("actor %s cannot change a workspace", kind)
	}
	var subject any
	if subjectUserID != "" {
		subject = subjectUserID
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO workspace_events
		(workspace_id, actor_kind, event_type, subject_user_id, event_at) VALUES (?, ?, ?, ?, ?)`,
		workspaceID, string(kind), eventType, subject, Millis(tx.Now))
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
