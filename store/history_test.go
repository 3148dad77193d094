package store

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// historyRows is every row of table, every column, in rowid (ctid) order: what a
// statement that rewrites history would change.
func historyRows(tb testing.TB, db *DB, table string) []string {
	tb.Helper()
	ctx := context.Background()
	var out []string
	err := db.View(ctx, func(tx *Tx) error {
		// PostgreSQL's ctid is a row version's place: an append-only
		// table's rows keep theirs, in insertion order, as SQLite's rowid.
		rows, err := tx.QueryContext(ctx, tx.engine.pick(`SELECT rowid, * FROM `+table+` ORDER BY rowid`,
			`SELECT ctid::text, * FROM `+table+` ORDER BY ctid`))
		if err != nil {
			return err
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			return err
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%#v", vals))
		}
		return rows.Err()
	})
	if err != nil {
		tb.Fatalf("read %s: %v", table, err)
	}
	return out
}

// TestSchema_HistoryCannotBeRewritten tries every SQL form that could change
// or remove a row of an append-only table — UPDATE, DELETE, REPLACE,
// INSERT OR REPLACE (on each unique key), upsert DO UPDATE — and checks each
// is refused with every row left exactly as it was. DO NOTHING and
// INSERT OR IGNORE must leave the rows as they were too.
func TestSchema_HistoryCannotBeRewritten(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "append-only")
	n := mustNotice(t, db, a, p.ID)
	mustNotice(t, db, a, p.ID) // a second version, so history has more than one row

	var auditID, workspaceEventID int64
	mustUpdate(t, db, func(tx *Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT min(id) FROM audit_events WHERE program_id = ?`, p.ID).Scan(&auditID); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT min(id) FROM workspace_events WHERE workspace_id = ?`, w.ID).Scan(&workspaceEventID)
	})

	noticeCols := `(id, program_id, version, purpose, contact_text, retention_text, published_at)`
	noticeVals := func(id string, version int) string {
		return fmt.Sprintf(`VALUES ('%s', '%s', %d, 'rewritten', 'rewritten', 'rewritten', 1)`, id, p.ID, version)
	}
	auditCols := `(id, program_id, actor_kind, event_type, event_at, details)`
	auditVals := fmt.Sprintf(`VALUES (%d, '%s', 'system', 'erased', 1, '{}')`, auditID, p.ID)
	wsCols := `(id, workspace_id, actor_kind, event_type, event_at)`
	wsVals := fmt.Sprintf(`VALUES (%d, '%s', 'system', 'owner_removed', 1)`, workspaceEventID, w.ID)
	const otherID = "00000000-0000-4000-8000-000000000001"

	type attempt struct {
		name, stmt string
		// harmless statements may succeed, as long as nothing changes.
		harmless bool
	}
	cases := map[string][]attempt{
		"notices": {
			{"update", `UPDATE notices SET purpose = 'rewritten' WHERE id = '` + n.ID + `'`, false},
			{"update or replace", `UPDATE OR REPLACE notices SET version = 2 WHERE id = '` + n.ID + `'`, false},
			{"delete", `DELETE FROM notices WHERE id = '` + n.ID + `'`, false},
			{"replace", `REPLACE INTO notices ` + noticeCols + ` ` + noticeVals(n.ID, n.Version), false},
			{"insert or replace", `INSERT OR REPLACE INTO notices ` + noticeCols + ` ` + noticeVals(n.ID, n.Version), false},
			{"insert or replace on (program, version)", `INSERT OR REPLACE INTO notices ` + noticeCols + ` ` + noticeVals(otherID, n.Version), false},
			{"upsert do update", `INSERT INTO notices ` + noticeCols + ` ` + noticeVals(n.ID, n.Version) +
				` ON CONFLICT (id) DO UPDATE SET purpose = excluded.purpose`, false},
			{"upsert do update on (program, version)", `INSERT INTO notices ` + noticeCols + ` ` + noticeVals(otherID, n.Version) +
				` ON CONFLICT (program_id, version) DO UPDATE SET purpose = excluded.purpose`, false},
			{"upsert do nothing", `INSERT INTO notices ` + noticeCols + ` ` + noticeVals(n.ID, n.Version) + ` ON CONFLICT DO NOTHING`, true},
			{"insert or ignore", `INSERT OR IGNORE INTO notices ` + noticeCols + ` ` + noticeVals(n.ID, n.Version), true},
		},
		"audit_events": {
			{"update", fmt.Sprintf(`UPDATE audit_events SET details = '{"x":1}' WHERE id = %d`, auditID), false},
			{"delete", fmt.Sprintf(`DELETE FROM audit_events WHERE id = %d`, auditID), false},
			{"replace", `REPLACE INTO audit_events ` + auditCols + ` ` + auditVals, false},
			{"insert or replace", `INSERT OR REPLACE INTO audit_events ` + auditCols + ` ` + auditVals, false},
			{"upsert do update", `INSERT INTO audit_events ` + auditCols + ` ` + auditVals +
				` ON CONFLICT (id) DO UPDATE SET event_type = excluded.event_type`, false},
			{"upsert do nothing", `INSERT INTO audit_events ` + auditCols + ` ` + auditVals + ` ON CONFLICT DO NOTHING`, true},
			{"insert or ignore", `INSERT OR IGNORE INTO audit_events ` + auditCols + ` ` + auditVals, true},
		},
		"workspace_events": {
			{"update", fmt.Sprintf(`UPDATE workspace_events SET event_type = 'owner_removed' WHERE id = %d`, workspaceEventID), false},
			{"delete", fmt.Sprintf(`DELETE FROM workspace_events WHERE id = %d`, workspaceEventID), false},
			{"replace", `REPLACE INTO workspace_events ` + wsCols + ` ` + wsVals, false},
			{"insert or replace", `INSERT OR REPLACE INTO workspace_events ` + wsCols + ` ` + wsVals, false},
			{"upsert do update", `INSERT INTO workspace_events ` + wsCols + ` ` + wsVals +
				` ON CONFLICT (id) DO UPDATE SET event_type = excluded.event_type`, false},
			{"upsert do nothing", `INSERT INTO workspace_events ` + wsCols + ` ` + wsVals + ` ON CONFLICT DO NOTHING`, true},
			{"insert or ignore", `INSERT OR IGNORE INTO workspace_events ` + wsCols + ` ` + wsVals, true},
		},
	}
	for table, attempts := range cases {
		if len(historyRows(t, db, table)) < 2 {
			t.Fatalf("%s has fewer than 2 rows: the attempts would prove nothing", table)
		}
		for _, at := range attempts {
			t.Run(table+"/"+at.name, func(t *testing.T) {
				if strings.Contains(at.stmt, "REPLACE INTO") || strings.Contains(at.stmt, "OR IGNORE") || strings.Contains(at.stmt, "OR REPLACE") {
					sqliteOnly(t, "SQLite's own statement; PostgreSQL has no such form")
				}
				before := historyRows(t, db, table)
				err := db.Update(ctx, func(tx *Tx) error {
					_, err := tx.ExecContext(ctx, at.stmt)
					return err
				})
				if !at.harmless && (err == nil || !strings.Contains(err.Error(), "immutable reference row")) {
					t.Errorf("err=%v, want immutable reference row", err)
				}
				if after := historyRows(t, db, table); !reflect.DeepEqual(before, after) {
					t.Errorf("history changed\nbefore: %v\nafter:  %v", before, after)
				}
			})
		}
	}

	// New history can still be appended.
	before := len(historyRows(t, db, "notices"))
	mustNotice(t, db, a, p.ID)
	if got := len(historyRows(t, db, "notices")); got != before+1 {
		t.Fatalf("notices=%d after publishing, want %d", got, before+1)
	}
}

// TestSchema_HistoryIDsStartAtOne checks that no audit row can take an id
// below 1: an insert that names no id reads as -1 inside the insert trigger,
// so a stored -1 would make every later append look like a rewrite.
func TestSchema_HistoryIDsStartAtOne(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "history-ids")
	for _, stmt := range []string{
		`INSERT INTO audit_events (id, program_id, actor_kind, event_type, event_at) VALUES (-1, '` + p.ID + `', 'system', 'erased', 1)`,
		`INSERT INTO audit_events (id, program_id, actor_kind, event_type, event_at) VALUES (0, '` + p.ID + `', 'system', 'erased', 1)`,
		`INSERT INTO workspace_events (id, workspace_id, actor_kind, event_type, event_at) VALUES (-1, '` + w.ID + `', 'system', 'owner_removed', 1)`,
	} {
		err := db.Update(ctx, func(tx *Tx) error {
			_, err := tx.ExecContext(ctx, stmt)
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "ids start at 1") {
			t.Errorf("%s: err=%v, want ids start at 1", stmt, err)
		}
	}
	if n := mustCount(t, db, `SELECT count(*) FROM audit_events WHERE id < 1`); n != 0 {
		t.Fatalf("%d audit events with an id below 1", n)
	}
}
