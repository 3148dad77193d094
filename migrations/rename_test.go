package migrations_test

import (
	"context"
	"strings"
	"testing"
)

// Migration 00017 renames audit_events.actor_clerk_id to actor_user_id on
// both engines: the values stay, nothing in the schema names the old
// column, and the column's check and the append-only triggers on
// audit_events still refuse what they refused.
func TestMigration17_RenamesTheAuditActorKeepingItsRules(t *testing.T) {
	for _, eng := range []namedEngine{onSQLite, onPostgres} {
		t.Run(eng.name, func(t *testing.T) {
			e := eng.open(t, 16)
			ctx := context.Background()
			for _, f := range fixture[:3] { // a workspace, its owner and a program
				e.mustExec(t, f.q, f.args...)
			}
			e.mustExec(t, `INSERT INTO audit_events (program_id, actor_kind, actor_clerk_id, event_type, event_at) VALUES (?, 'owner', 'user_2abc', 'program_created', 1)`, id(programID))
			e.migrate(t, 0)

			if got := queryAll(t, e, `SELECT id, actor_user_id FROM audit_events`); len(got) != 1 || num(got[0][0]) != 1 || str(got[0][1]) != "user_2abc" {
				t.Fatalf("after 00017 the audit events read %v", got)
			}
			stale := `SELECT name FROM sqlite_schema WHERE sql LIKE '%actor_clerk_id%'`
			if e.pg {
				stale = `SELECT attname::text FROM pg_attribute WHERE attrelid = 'audit_events'::regclass AND attname LIKE '%clerk%'
					UNION ALL SELECT conname::text FROM pg_constraint WHERE conname LIKE '%clerk%' OR pg_get_constraintdef(oid) LIKE '%clerk%'
					UNION ALL SELECT proname::text FROM pg_proc WHERE pronamespace = 'public'::regnamespace AND prosrc LIKE '%clerk%'`
			}
			if got := queryAll(t, e, stale); len(got) != 0 {
				t.Errorf("the schema still names actor_clerk_id: %v", got)
			}

			event := valid["audit_events"].with("entry_id", nil)
			for _, c := range []behaviourCase{
				stmt("the renamed column is not updated", "audit_events", immutable, `UPDATE audit_events SET actor_user_id = 'someone else'`),
				stmt("another column is not updated", "audit_events", immutable, `UPDATE audit_events SET event_at = 2`),
				stmt("an event is not deleted", "audit_events", immutable, `DELETE FROM audit_events`),
				insertRow("an event over another", "audit_events", event.with("id", 1), immutable),
				insertRow("an event numbered 0", "audit_events", event.with("id", 0), "raise: audit event ids start at 1"),
				insertRow("an empty actor", "audit_events", event.with("actor_user_id", ""), "check"),
				insertRow("an actor of 129", "audit_events", event.with("actor_user_id", strings.Repeat("u", 129)), "check"),
				insertRow("an event", "audit_events", event, "ok"),
			} {
				if got := outcome(e.tryInTx(ctx, c.q, c.args...)); got != c.want {
					t.Errorf("%s: got %s, want %s", c.name, got, c.want)
				}
			}

			// Down to 16 and up again: an operator rolling back past 00017.
			p := e.provider(t)
			if _, err := p.DownTo(ctx, 16); err != nil {
				t.Fatal(err)
			}
			if got := queryAll(t, e, `SELECT actor_clerk_id FROM audit_events`); len(got) != 1 || str(got[0][0]) != "user_2abc" {
				t.Fatalf("after 00017 down the audit events read %v", got)
			}
			e.migrate(t, 0)
		})
	}
}
