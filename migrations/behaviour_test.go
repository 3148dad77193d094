package migrations_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The schema's rules, by behaviour: every statement below is refused, or
// accepted, in the same way on both engines, a trigger's refusal with the
// same message. Each engine runs the same cases against its own fixture,
// and every CHECK of its schema must be refused by at least one case.

// id is a fixture row's UUID-shaped ID.
func id(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// blob is n bytes of b.
func blob(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

const (
	wsID, programID, noticeID                      = 1, 2, 3
	waitingID, invitedID, activeID, erasedID       = 4, 5, 6, 7
	issuedInviteID, redeemedInviteID, receiptKeyID = 8, 9, 10
	staffID                                        = 11
)

// fixture is what the cases build on, written the same on both engines:
// a workspace and its owner, a program with its notice, entries waiting,
// invited (its invitation's delivery recorded), active (its invitation
// redeemed, no grant yet) and erased, their counters as the store keeps
// them, an audit event, a workspace event and an owner's receipt.
var fixture = []struct {
	q    string
	args []any
}{
	{`INSERT INTO workspaces (id, name, created_at) VALUES (?, 'Fixture workspace', 1)`, []any{id(wsID)}},
	{`INSERT INTO staff_members (workspace_id, user_id, role, created_at, updated_at, id) VALUES (?, 'user-1', 'owner', 1, 1, ?)`, []any{id(wsID), id(staffID)}},
	{`INSERT INTO programs (id, workspace_id, public_slug, purpose, queue_cap, hourly_cap, seat_cap, created_at, updated_at)
		VALUES (?, ?, 'fixture', 'Testing', 100, 100, 100, 1, 1)`, []any{id(programID), id(wsID)}},
	{`INSERT INTO notices (id, program_id, version, purpose, contact_text, retention_text, published_at) VALUES (?, ?, 1, 'p', 'c', 'r', 1)`, []any{id(noticeID), id(programID)}},
	{`UPDATE programs SET current_notice_id = ? WHERE id = ?`, []any{id(noticeID), id(programID)}},
	{`INSERT INTO entries (id, program_id, email_key, notice_id, permission_at, state, created_at, updated_at, removal_hash)
		VALUES (?, ?, 'waiting@example.test', ?, 1, 'waiting', 1, 1, ?)`, []any{id(waitingID), id(programID), id(noticeID), blob(4, 32)}},
	{`INSERT INTO entries (id, program_id, email_key, notice_id, permission_at, state, created_at, updated_at, removal_hash)
		VALUES (?, ?, 'invited@example.test', ?, 1, 'invited', 1, 1, ?)`, []any{id(invitedID), id(programID), id(noticeID), blob(5, 32)}},
	{`INSERT INTO entries (id, program_id, email_key, notice_id, permission_at, state, created_at, updated_at, removal_hash)
		VALUES (?, ?, 'active@example.test', ?, 1, 'active', 1, 1, ?)`, []any{id(activeID), id(programID), id(noticeID), blob(6, 32)}},
	{`INSERT INTO entries (id, program_id, email_key, notice_id, permission_at, state, created_at, updated_at, erased_at)
		VALUES (?, ?, ?, ?, 1, 'withdrawn', 1, 2, 2)`, []any{id(erasedID), id(programID), "erased:" + id(erasedID), id(noticeID)}},
	{`INSERT INTO entry_state_counts (program_id, state, n) VALUES (?, 'waiting', 1), (?, 'invited', 1), (?, 'active', 1), (?, 'withdrawn', 1)`,
		[]any{id(programID), id(programID), id(programID), id(programID)}},
	{`UPDATE programs SET occupied = 3 WHERE id = ?`, []any{id(programID)}},
	{`UPDATE program_funnel SET joined = 4, selected = 2 WHERE program_id = ?`, []any{id(programID)}},
	{`INSERT INTO invitations (id, program_id, entry_id, code_digest, state, issued_at, expires_at, delivery_recorded_at, delivery_channel, delivery_reference)
		VALUES (?, ?, ?, ?, 'issued', 1, 100, 2, 'email', 'batch 7')`, []any{id(issuedInviteID), id(programID), id(invitedID), blob(8, 32)}},
	{`INSERT INTO invitations (id, program_id, entry_id, code_digest, state, issued_at, expires_at, terminal_at)
		VALUES (?, ?, ?, ?, 'redeemed', 1, 100, 3)`, []any{id(redeemedInviteID), id(programID), id(activeID), blob(9, 32)}},
	{`INSERT INTO audit_events (program_id, entry_id, actor_kind, event_type, event_at) VALUES (?, ?, 'public', 'signup', 1)`, []any{id(programID), id(waitingID)}},
	{`INSERT INTO workspace_events (workspace_id, actor_kind, event_type, event_at) VALUES (?, 'cli', 'workspace_created', 1)`, []any{id(wsID)}},
	{`INSERT INTO owner_action_receipts (program_id, request_key, action, binding_hmac, target_id, created_at) VALUES (?, ?, 'issue_invitations', ?, ?, 1)`,
		[]any{id(programID), id(receiptKeyID), blob(10, 32), id(issuedInviteID)}},
}

// kv is a row's columns and values, in order.
type kv []any

// with is r with the columns in changes set (added when r lacks them);
// the value omit drops a column.
func (r kv) with(changes ...any) kv {
	out := slices.Clone(r)
	for i := 0; i < len(changes); i += 2 {
		j := -1
		for k := 0; k < len(out); k += 2 {
			if out[k] == changes[i] {
				j = k
			}
		}
		switch {
		case changes[i+1] == omit && j >= 0:
			out = slices.Delete(out, j, j+2)
		case j >= 0:
			out[j+1] = changes[i+1]
		default:
			out = append(out, changes[i], changes[i+1])
		}
	}
	return out
}

type omitted struct{}

var omit = omitted{}

// valid is, per table, a row the schema accepts on top of the fixture.
var valid = map[string]kv{
	"workspaces":    {"id", id(100), "name", "Another", "active", 1, "created_at", 1, "display_name", "Another", "contact", nil},
	"staff_members": {"workspace_id", id(wsID), "user_id", "user-2", "role", "owner", "active", 1, "created_at", 1, "updated_at", 1, "id", id(101), "name", "Ana", "email", "ana@example.test", "last_seen_at", nil},
	"workspace_events": {"workspace_id", id(wsID), "actor_kind", "owner", "event_type", "owner_added", "subject_user_id", "user-2",
		"event_at", 2, "details", `{"memberId":"x"}`},
	"programs": {"id", id(102), "workspace_id", id(wsID), "public_slug", "another-1", "purpose", "p", "queue_cap", 1, "hourly_cap", 1,
		"seat_cap", 1, "created_at", 1, "updated_at", 1, "name", "Another"},
	"notices": {"id", id(103), "program_id", id(programID), "version", 2, "purpose", "p", "contact_text", "c", "retention_text", "r", "published_at", 2},
	"entries": {"id", id(104), "program_id", id(programID), "email_key", "new@example.test", "notice_id", id(noticeID), "permission_at", 1,
		"state", "waiting", "created_at", 1, "updated_at", 1, "removal_hash", blob(104, 32)},
	"signup_receipts": {"program_id", id(programID), "request_key", id(105), "binding_hmac", blob(105, 32), "response_code", 202, "accepted_at", 1},
	"intake_hours":    {"program_id", id(programID), "bucket_start", 7200000, "admitted_count", 0},
	"invitations": {"id", id(106), "program_id", id(programID), "entry_id", id(waitingID), "code_digest", blob(106, 32), "state", "expired",
		"issued_at", 1, "expires_at", 2, "terminal_at", 2},
	"owner_action_receipts": {"program_id", id(programID), "request_key", id(107), "action", "record_delivery", "binding_hmac", blob(107, 32),
		"target_id", id(issuedInviteID), "created_at", 1},
	"owner_receipt_targets": {"program_id", id(programID), "request_key", id(receiptKeyID), "position", 0, "target_id", id(issuedInviteID)},
	"grants": {"id", id(108), "program_id", id(programID), "entry_id", id(activeID), "invitation_id", id(redeemedInviteID), "user_id", "user-9",
		"active", 1, "granted_at", 3},
	"early_access_content": {"program_id", id(programID), "revision", 1, "body", "Welcome", "updated_at", 1},
	"private_assets": {"program_id", id(programID), "name", "logo.png", "content_type", "image/png", "data", blob(1, 10),
		"sha256", blob(109, 32), "created_at", 1},
	"audit_events": {"program_id", id(programID), "entry_id", id(waitingID), "actor_kind", "owner", "actor_user_id", "user-1",
		"event_type", "selected", "event_at", 2, "details", "{}"},
	"network_counters":   {"key", blob(110, 32), "attempts", 0, "expires_at", 1},
	"entry_state_counts": {"program_id", id(programID), "state", "declined", "n", 0},
	"sessions": {"id_digest", blob(111, 32), "user_id", "user-1", "mode", "dev", "sealed", blob(1, 28), "created_at", 1,
		"last_seen_at", 1, "expires_at", 2},
	"ended_sessions": {"sid_digest", blob(112, 32), "expires_at", 1},
	"owner_invites": {"id", id(113), "workspace_id", id(wsID), "email_key", "new-owner@example.test", "name", nil, "created_at", 1,
		"expires_at", 2, "claimed_at", nil, "claimed_by", nil},
	"leases":                 {"name", "sweeper", "holder", "holder-1", "epoch", 1, "expires_at", 1},
	"server_key_fingerprint": {"id", 1, "digest", blob(9, 32), "created_at", 1},
}

// behaviourCase is one statement and how both engines must answer it:
// "ok", "check", "unique", "foreign key", "not null" or "raise: " and a
// trigger's message.
type behaviourCase struct {
	name, table string
	q           string
	args        []any
	want        string
}

// insert is a case inserting the table's valid row with changes.
func insert(name, table, want string, changes ...any) behaviourCase {
	return insertRow(name, table, valid[table].with(changes...), want)
}

// insertRow is a case inserting r into table.
func insertRow(name, table string, r kv, want string) behaviourCase {
	var cols, marks []string
	var args []any
	for i := 0; i < len(r); i += 2 {
		cols = append(cols, r[i].(string))
		marks = append(marks, "?")
		args = append(args, r[i+1])
	}
	return behaviourCase{name: name, table: table, want: want, args: args,
		q: fmt.Sprintf(`INSERT INTO %s (%s) VALUES (%s)`, table, strings.Join(cols, ", "), strings.Join(marks, ", "))}
}

func stmt(name, table, want, q string, args ...any) behaviourCase {
	return behaviourCase{name: name, table: table, q: q, args: args, want: want}
}

const (
	immutable = "raise: immutable reference row"
	channel   = "raise: delivery channel must be a channel code"
)

func behaviourCases() []behaviourCase {
	long := func(n int) string { return strings.Repeat("a", n) }
	cs := []behaviourCase{
		insert("workspace id is a UUID", "workspaces", "check", "id", "short"),
		insert("workspace name may not be empty", "workspaces", "check", "name", ""),
		insert("workspace name of 120", "workspaces", "ok", "name", long(120)),
		insert("workspace name of 121", "workspaces", "check", "name", long(121)),
		insert("workspace name taken", "workspaces", "unique", "name", "Fixture workspace"),
		insert("workspace name missing", "workspaces", "not null", "name", omit),
		insert("workspace active is 0 or 1", "workspaces", "check", "active", 2),
		insert("workspace display name is trimmed", "workspaces", "check", "display_name", " Padded"),
		insert("workspace display name defaults", "workspaces", "ok", "display_name", omit),
		insert("workspace contact of 2", "workspaces", "check", "contact", "ab"),
		insert("workspace contact of 3", "workspaces", "ok", "contact", "a@b"),

		insert("staff user id may not be empty", "staff_members", "check", "user_id", ""),
		insert("staff role is owner", "staff_members", "check", "role", "admin"),
		insert("staff active is 0 or 1", "staff_members", "check", "active", -1),
		insert("staff id is a UUID", "staff_members", "check", "id", "x"),
		insert("staff id may be NULL", "staff_members", "ok", "id", nil),
		insert("staff id taken", "staff_members", "unique", "id", id(staffID)),
		insert("staff key taken", "staff_members", "unique", "user_id", "user-1"),
		insert("staff name may not be empty", "staff_members", "check", "name", ""),
		insert("staff email of 2", "staff_members", "check", "email", "a@"),
		insert("staff workspace unknown", "staff_members", "foreign key", "workspace_id", id(999)),

		insert("workspace event actor kind", "workspace_events", "check", "actor_kind", "robot"),
		insert("workspace event type", "workspace_events", "check", "event_type", "owner_renamed"),
		insert("workspace event subject may not be empty", "workspace_events", "check", "subject_user_id", ""),
		insert("workspace event details are JSON", "workspace_events", "check", "details", "not json"),
		insert("workspace event details are an object", "workspace_events", "check", "details", "[1]"),
		insert("workspace event details end", "workspace_events", "check", "details", `{"a":1`),
		insert("workspace event details are one value", "workspace_events", "check", "details", `{} {}`),
		insert("workspace event details in JSON5", "workspace_events", "check", "details", `{a:1}`),
		insert("workspace event details with a NUL escape", "workspace_events", "ok", "details", `{"a":"\u0000","b":[1e400,-0.5,true,null]}`),
		insert("workspace event details padded", "workspace_events", "ok", "details", " {\"a\":{}}\n"),
		insert("workspace event details of 512 bytes", "workspace_events", "ok", "details", `{"a":"`+long(504)+`"}`),
		insert("workspace event details of 513 bytes", "workspace_events", "check", "details", `{"a":"`+long(505)+`"}`),
		insert("workspace event details of 512 bytes in 256 characters", "workspace_events", "ok", "details", `{"a":"`+strings.Repeat("é", 252)+`"}`),
		insert("workspace event details of 514 bytes in 257 characters", "workspace_events", "check", "details", `{"a":"`+strings.Repeat("é", 253)+`"}`),
		insert("workspace event ids start at 1", "workspace_events", "raise: workspace event ids start at 1", "id", 0),
		insert("workspace event id taken", "workspace_events", immutable, "id", 1),
		insert("workspace event with a new id", "workspace_events", "ok", "id", 50),
		stmt("workspace events are not updated", "workspace_events", immutable, `UPDATE workspace_events SET event_at = 5`),
		stmt("workspace events are not deleted", "workspace_events", immutable, `DELETE FROM workspace_events`),

		insert("program id is a UUID", "programs", "check", "id", long(37)),
		insert("program slug of 2", "programs", "check", "public_slug", "ab"),
		insert("program slug in capitals", "programs", "check", "public_slug", "Another"),
		insert("program slug with an underscore", "programs", "check", "public_slug", "an_other"),
		insert("program slug with a non-ASCII letter", "programs", "check", "public_slug", "caf\u00e9"),
		insert("program slug of 60", "programs", "ok", "public_slug", strings.Repeat("a-9", 20)),
		insert("program slug taken", "programs", "unique", "public_slug", "fixture"),
		insert("program purpose may not be empty", "programs", "check", "purpose", ""),
		insert("program signup open is 0 or 1", "programs", "check", "signup_open", 2),
		insert("program access enabled is 0 or 1", "programs", "check", "access_enabled", 2),
		insert("program queue cap of 0", "programs", "check", "queue_cap", 0),
		insert("program queue cap of 100000", "programs", "ok", "queue_cap", 100000),
		insert("program hourly cap of 100001", "programs", "check", "hourly_cap", 100001),
		insert("program seat cap of 0", "programs", "check", "seat_cap", 0),
		insert("program invitation days of 31", "programs", "check", "max_invitation_days", 31),
		insert("program revision of 0", "programs", "check", "revision", 0),
		insert("program occupied below 0", "programs", "check", "occupied", -1),
		insert("program retire pending is 0 or 1", "programs", "check", "retire_pending", 3),
		insert("program retire cursor is a UUID", "programs", "check", "retire_cursor_id", "x"),
		insert("program name is trimmed", "programs", "check", "name", "Another "),
		insert("program name of 81", "programs", "check", "name", long(81)),
		insert("program retire total below 0", "programs", "check", "retire_total", -1),
		insert("program retire done below 0", "programs", "check", "retire_done", -1),
		insert("a retired program is closed", "programs", "check", "retired_at", 5, "signup_open", 1),
		insert("a retired program without access", "programs", "check", "retired_at", 5, "access_enabled", 1),
		insert("a retired program", "programs", "ok", "retired_at", 5),
		insert("program notice of another program", "programs", "foreign key", "current_notice_id", id(noticeID)),
		insert("program workspace unknown", "programs", "foreign key", "workspace_id", id(999)),

		insert("notice id is a UUID", "notices", "check", "id", "x"),
		insert("notice version of 0", "notices", "check", "version", 0),
		insert("notice purpose may not be empty", "notices", "check", "purpose", ""),
		insert("notice contact of 2001", "notices", "check", "contact_text", long(2001)),
		insert("notice retention may not be empty", "notices", "check", "retention_text", ""),
		insert("notice version taken", "notices", immutable, "version", 1),
		insert("notice id taken", "notices", immutable, "id", id(noticeID)),
		insert("notice program unknown", "notices", "foreign key", "program_id", id(999)),
		stmt("notices are not updated", "notices", immutable, `UPDATE notices SET purpose = 'changed'`),
		stmt("notices are not deleted", "notices", immutable, `DELETE FROM notices`),

		insert("entry id is a UUID", "entries", "check", "id", "x"),
		insert("entry email key of 2", "entries", "check", "email_key", "a@"),
		insert("entry email key of 255", "entries", "check", "email_key", long(255)),
		insert("entry state", "entries", "check", "state", "gone"),
		insert("entry removal hash of 31 bytes", "entries", "check", "removal_hash", blob(1, 31)),
		insert("entry removal hash taken", "entries", "unique", "removal_hash", blob(4, 32)),
		insert("entry address taken in the program", "entries", "unique", "email_key", "waiting@example.test"),
		insert("entry address compares bytes", "entries", "ok", "email_key", "Waiting@example.test"),
		insert("entry notice unknown", "entries", "foreign key", "notice_id", id(999)),
		insert("an erased entry keeps no removal hash", "entries", "check", "erased_at", 5),
		stmt("an erased entry's removal hash stays cleared", "entries", "check",
			`UPDATE entries SET removal_hash = ? WHERE id = ?`, blob(77, 32), id(erasedID)),
		stmt("erasing clears the removal hash", "entries", "ok",
			`UPDATE entries SET erased_at = 5, removal_hash = NULL, email_key = ? WHERE id = ?`, "erased:"+id(waitingID), id(waitingID)),
		stmt("an erased entry gets no address back", "entries", "raise: an erased entry stays erased",
			`UPDATE entries SET email_key = ? WHERE id = ?`, "back@example.test", id(erasedID)),
		stmt("an erased entry stays erased", "entries", "raise: an erased entry stays erased",
			`UPDATE entries SET erased_at = NULL WHERE id = ?`, id(erasedID)),
		stmt("an erasure keeps its instant", "entries", "raise: an erased entry stays erased",
			`UPDATE entries SET erased_at = 9 WHERE id = ?`, id(erasedID)),
		stmt("an erased entry may still change state", "entries", "ok",
			`UPDATE entries SET state = 'declined', updated_at = 3 WHERE id = ?`, id(erasedID)),

		insert("signup receipt key is a UUID", "signup_receipts", "check", "request_key", "x"),
		insert("signup receipt binding of 33 bytes", "signup_receipts", "check", "binding_hmac", blob(1, 33)),
		insert("signup receipt response is 202", "signup_receipts", "check", "response_code", 200),

		insert("intake bucket on the hour", "intake_hours", "check", "bucket_start", 7200001),
		insert("intake count below 0", "intake_hours", "check", "admitted_count", -1),

		insert("invitation id is a UUID", "invitations", "check", "id", "x"),
		insert("invitation digest of 31 bytes", "invitations", "check", "code_digest", blob(1, 31)),
		insert("invitation digest taken", "invitations", "unique", "code_digest", blob(8, 32)),
		insert("invitation state", "invitations", "check", "state", "sent"),
		insert("invitation expires after its issue", "invitations", "check", "expires_at", 1),
		insert("invitation delivery recorded without a channel", "invitations", "check", "delivery_recorded_at", 2),
		insert("invitation channel without a delivery", "invitations", "check", "delivery_channel", "email"),
		insert("invitation reference without a delivery", "invitations", "check", "delivery_reference", "batch"),
		insert("invitation reference of 161", "invitations", "check", "delivery_recorded_at", 2, "delivery_channel", "sms", "delivery_reference", long(161)),
		insert("invitation delivery recorded", "invitations", "ok", "delivery_recorded_at", 2, "delivery_channel", "in_person", "delivery_reference", long(160)),
		insert("invitation channel is a code", "invitations", channel, "delivery_recorded_at", 2, "delivery_channel", "pigeon"),
		insert("invitation channel of 81 is no code", "invitations", channel, "delivery_recorded_at", 2, "delivery_channel", long(81)),
		stmt("invitation channel changed to no code", "invitations", channel,
			`UPDATE invitations SET delivery_channel = 'fax' WHERE id = ?`, id(issuedInviteID)),
		stmt("invitation channel changed to a code", "invitations", "ok",
			`UPDATE invitations SET delivery_channel = 'chat' WHERE id = ?`, id(issuedInviteID)),
		insert("an issued invitation has no end", "invitations", "check", "state", "issued"),
		insert("an ended invitation has its end", "invitations", "check", "terminal_at", nil),
		insert("a second issued invitation", "invitations", "unique", "entry_id", id(invitedID), "state", "issued", "terminal_at", nil),
		insert("an issued invitation", "invitations", "ok", "state", "issued", "terminal_at", nil),
		insert("invitation of another program's entry", "invitations", "foreign key", "entry_id", id(999)),

		insert("owner receipt key is a UUID", "owner_action_receipts", "check", "request_key", "x"),
		insert("owner receipt action", "owner_action_receipts", "check", "action", "delete_everything"),
		insert("owner receipt binding of 31 bytes", "owner_action_receipts", "check", "binding_hmac", blob(1, 31)),
		insert("owner receipt target is a UUID", "owner_action_receipts", "check", "target_id", "x"),
		insert("owner receipt key taken", "owner_action_receipts", "unique", "request_key", id(receiptKeyID)),
		insert("owner receipt target position below 0", "owner_receipt_targets", "check", "position", -1),
		insert("owner receipt target is an ID", "owner_receipt_targets", "check", "target_id", "x"),
		insert("owner receipt target of no receipt", "owner_receipt_targets", "foreign key", "request_key", id(999)),

		insert("grant id is a UUID", "grants", "check", "id", "x"),
		insert("grant user may not be empty", "grants", "check", "user_id", ""),
		insert("grant user of 129", "grants", "check", "user_id", long(129)),
		insert("grant active is 0 or 1", "grants", "check", "active", 2),
		insert("an active grant is not revoked", "grants", "check", "revoked_at", 4),
		insert("a revoked grant has its time", "grants", "check", "active", 0),
		insert("a revoked grant", "grants", "ok", "active", 0, "revoked_at", 4),
		insert("grant of another entry's invitation", "grants", "foreign key", "entry_id", id(invitedID)),

		insert("content revision of 0", "early_access_content", "check", "revision", 0),
		insert("content may not be empty", "early_access_content", "check", "body", ""),
		insert("content of 20000", "early_access_content", "ok", "body", long(20000)),

		insert("asset name starts with a dot", "private_assets", "check", "name", ".hidden"),
		insert("asset name with a space", "private_assets", "check", "name", "a b.png"),
		insert("asset name with a slash", "private_assets", "check", "name", "../a.png"),
		insert("asset name of 101", "private_assets", "check", "name", long(101)),
		insert("asset name in every allowed character", "private_assets", "ok", "name", "A-z_0.9.PNG"),
		insert("asset type", "private_assets", "check", "content_type", "text/html"),
		insert("asset of no bytes", "private_assets", "check", "data", []byte{}),
		insert("asset digest of 31 bytes", "private_assets", "check", "sha256", blob(1, 31)),

		insert("audit actor kind", "audit_events", "check", "actor_kind", "robot"),
		insert("audit actor user may not be empty", "audit_events", "check", "actor_user_id", ""),
		insert("audit actor user of 128", "audit_events", "ok", "actor_user_id", long(128)),
		insert("audit actor user of 129", "audit_events", "check", "actor_user_id", long(129)),
		insert("audit event type", "audit_events", "check", "event_type", "renamed"),
		insert("audit details are an object", "audit_events", "check", "details", `"text"`),
		insert("audit entry of another program", "audit_events", "foreign key", "entry_id", id(999)),
		insert("audit event ids start at 1", "audit_events", "raise: audit event ids start at 1", "id", -5),
		insert("audit event id taken", "audit_events", immutable, "id", 1),
		stmt("audit event id taken, conflict ignored", "audit_events", immutable,
			`INSERT INTO audit_events (id, program_id, actor_kind, event_type, event_at) VALUES (1, ?, 'system', 'signup', 1) ON CONFLICT (id) DO NOTHING`, id(programID)),
		stmt("audit events are not updated", "audit_events", immutable, `UPDATE audit_events SET actor_user_id = 'someone'`),
		stmt("audit events are not deleted", "audit_events", immutable, `DELETE FROM audit_events WHERE id = 1`),

		insert("network counter key of 31 bytes", "network_counters", "check", "key", blob(1, 31)),
		insert("network counter attempts below 0", "network_counters", "check", "attempts", -1),

		insert("state count state", "entry_state_counts", "check", "state", "lost"),
		insert("state count below 0", "entry_state_counts", "check", "n", -1),
		stmt("funnel joined below 0", "program_funnel", "check", `UPDATE program_funnel SET joined = -1`),
		stmt("funnel selected below 0", "program_funnel", "check", `UPDATE program_funnel SET selected = -1`),
		stmt("funnel invited below 0", "program_funnel", "check", `UPDATE program_funnel SET invited = -1`),
		stmt("funnel redeemed below 0", "program_funnel", "check", `UPDATE program_funnel SET redeemed = -1`),

		insert("session digest of 31 bytes", "sessions", "check", "id_digest", blob(1, 31)),
		insert("session user may not be empty", "sessions", "check", "user_id", ""),
		insert("session user of 512", "sessions", "ok", "user_id", long(512)),
		insert("session mode", "sessions", "check", "mode", "clerk"),
		insert("session sealed of 27 bytes", "sessions", "check", "sealed", blob(1, 27)),
		insert("session seen before it began", "sessions", "check", "last_seen_at", 0),
		insert("session expires as it begins", "sessions", "check", "expires_at", 1),
		insert("ended session digest of 33 bytes", "ended_sessions", "check", "sid_digest", blob(1, 33)),

		insert("owner invite id is a UUID", "owner_invites", "check", "id", "x"),
		insert("owner invite address of 2", "owner_invites", "check", "email_key", "a@"),
		insert("owner invite name may not be empty", "owner_invites", "check", "name", ""),
		insert("owner invite claimed by a UUID", "owner_invites", "check", "claimed_by", "x"),
		insert("owner invite workspace unknown", "owner_invites", "foreign key", "workspace_id", id(999)),

		insert("lease name may not be empty", "leases", "check", "name", ""),
		insert("lease name of 64", "leases", "ok", "name", long(64)),
		insert("lease name of 65", "leases", "check", "name", long(65)),
		insert("lease holder may not be empty", "leases", "check", "holder", ""),
		insert("lease holder of 65", "leases", "check", "holder", long(65)),
		insert("lease epoch starts at 1", "leases", "check", "epoch", 0),
		insert("lease expiry missing", "leases", "not null", "expires_at", omit),

		insert("one key fingerprint row", "server_key_fingerprint", "check", "id", 2),
		insert("key fingerprint of 32 bytes", "server_key_fingerprint", "ok", "digest", blob(3, 32)),
		insert("key fingerprint of 31 bytes", "server_key_fingerprint", "check", "digest", blob(3, 31)),
		insert("key fingerprint missing", "server_key_fingerprint", "not null", "digest", omit),
	}
	for _, table := range slices.Sorted(func(yield func(string) bool) {
		for k := range valid {
			if !yield(k) {
				return
			}
		}
	}) {
		cs = append(cs, insert("a valid row of "+table, table, "ok"))
	}
	return cs
}

// unreachableChecks are checks no statement can break: a trigger refuses
// the row first. Keyed by table and the columns the check names.
var unreachableChecks = map[string]string{
	// Any channel that is no code is refused by the channel-code triggers
	// before the row's checks run, and every code is 1 to 80 characters.
	"invitations:delivery_channel": "the channel-code triggers refuse first",
}

func TestSchema_SameRulesOnBothEngines(t *testing.T) {
	for _, eng := range []namedEngine{onSQLite, onPostgres} {
		t.Run(eng.name, func(t *testing.T) {
			e := eng.open(t, 0)
			for _, f := range fixture {
				e.mustExec(t, f.q, f.args...)
			}
			ctx := context.Background()
			hit := map[string]bool{} // table:columns of every check refused
			for _, c := range behaviourCases() {
				err := e.tryInTx(ctx, c.q, c.args...)
				if got := outcome(err); got != c.want {
					t.Errorf("%s: got %s, want %s (%v)", c.name, got, c.want, err)
					continue
				}
				if r, ok := classify(err); ok && r.kind == "check" {
					hit[c.table+":"+checkOf(t, e, c.table, r.which)] = true
				}
			}
			for _, key := range checksOf(t, e) {
				if !hit[key] && unreachableChecks[key] == "" {
					t.Errorf("no case breaks the check on %s", key)
				}
			}
		})
	}
}

// checksOf lists every check of e's schema as table:columns.
func checksOf(t *testing.T, e *engine) []string {
	t.Helper()
	var d *schema
	if e.pg {
		d = describePostgres(t, e)
	} else {
		d = describeSQLite(t, e)
	}
	var out []string
	for name, tb := range d.Tables {
		for _, c := range tb.Checks {
			out = append(out, name+":"+c)
		}
	}
	slices.Sort(out)
	return out
}

// checkOf names the columns of the check a refusal named: its expression
// on SQLite, its constraint's name on PostgreSQL.
func checkOf(t *testing.T, e *engine, table, which string) string {
	t.Helper()
	if !e.pg {
		var cols []string
		for _, c := range queryAll(t, e, `SELECT name FROM pragma_table_info(?)`, table) {
			cols = append(cols, str(c[0]))
		}
		return checkColumns(which, cols)
	}
	r := queryAll(t, e, `SELECT array_to_string(ARRAY(SELECT a.attname FROM unnest(con.conkey) k(n)
			JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY a.attname), ',')
		FROM pg_constraint con WHERE con.conrelid = ?::regclass AND con.conname = ?`, table, which)
	if len(r) != 1 {
		t.Fatalf("no check %s on %s", which, table)
	}
	return str(r[0][0])
}
