package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
)

// Every new entry is written by insertEntry, which also counts it for its
// program: occupancy (programs.occupied, every entry not withdrawn), the
// entries per state (entry_state_counts), the funnel's joined
// (program_funnel) and, for a signup, the hour's intake (intake_hours).
// The transaction adds its counts to those rows once, just before it
// commits (applyEntryCounts): a batch of signups writes each of the
// program's counters once instead of once per entry, and an insert into
// entries fires no trigger, so SQLite keeps no statement journal for it
// (docs/PERFORMANCE.md#counted-once-per-commit). Changes of state and
// deletions are still counted by triggers on entries (migrations 00001,
// 00002, 00008); only an insert is counted here.

// newEntry is an entry to insert. CreatedAt is also its permission time
// and its first update time.
type newEntry struct {
	ID, ProgramID, Email, NoticeID, State string
	CreatedAt                             int64
	// RemovalHash is the digest of the private removal token (nil: none);
	// EraseAfter is when the sweeper erases the address (nil: never yet).
	RemovalHash []byte
	EraseAfter  any
	// Intake says the entry is a signup, counted on its hour's intake.
	Intake bool
}

// entryCounts is what the entries a transaction inserted add to one
// program's counters.
type entryCounts struct {
	states map[string]int // new entries per state
	// intake is the new signups per UTC hour (its start, Unix ms): a
	// signup batch that runs across an hour boundary admits into both.
	intake map[int64]int
}

// occupying is how many of the new entries take a place in the queue.
func (c *entryCounts) occupying() int {
	n := 0
	for state, k := range c.states {
		if state != StateWithdrawn {
			n += k
		}
	}
	return n
}

// insertEntry writes e and counts it for its program's counters, which
// the transaction updates before it commits.
func insertEntry(ctx context.Context, tx *Tx, e newEntry) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO entries (id, program_id, email_key, notice_id, permission_at, state,
			created_at, updated_at, removal_hash, erase_after) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?5, ?5, ?7, ?8)`,
		e.ID, e.ProgramID, e.Email, e.NoticeID, e.CreatedAt, e.State, e.RemovalHash, e.EraseAfter); err != nil {
		return fmt.Errorf("insert entry: %w", err)
	}
	if tx.newEntries == nil {
		tx.newEntries = map[string]*entryCounts{}
	}
	c := tx.newEntries[e.ProgramID]
	if c == nil {
		c = &entryCounts{states: map[string]int{}, intake: map[int64]int{}}
		tx.newEntries[e.ProgramID] = c
	}
	c.states[e.State]++
	if e.Intake {
		c.intake[Millis(hourStart(tx.Now))]++
	}
	return nil
}

// pendingEntries is what this transaction's new entries of programID add
// to its counters, not yet written: occupancy and the intake of the hour
// that starts at hour (Unix ms).
func (tx *Tx) pendingEntries(programID string, hour int64) (occupying, intake int) {
	if c := tx.newEntries[programID]; c != nil {
		return c.occupying(), c.intake[hour]
	}
	return 0, 0
}

// applyEntryCounts adds the transaction's new entries to their programs'
// counters, in program order; Update runs it just before the commit.
func (tx *Tx) applyEntryCounts(ctx context.Context) error {
	for _, id := range slices.Sorted(maps.Keys(tx.newEntries)) {
		c := tx.newEntries[id]
		total := 0
		for _, state := range slices.Sorted(maps.Keys(c.states)) {
			n := c.states[state]
			total += n
			if _, err := tx.ExecContext(ctx, `INSERT INTO entry_state_counts (program_id, state, n) VALUES (?, ?, ?)
				ON CONFLICT (program_id, state) DO UPDATE SET n = entry_state_counts.n + excluded.n`, id, state, n); err != nil {
				return fmt.Errorf("count entries by state: %w", err)
			}
		}
		if n := c.occupying(); n > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE programs SET occupied = occupied + ? WHERE id = ?`, n, id); err != nil {
				return fmt.Errorf("count occupancy: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE program_funnel SET joined = joined + ? WHERE program_id = ?`, total, id); err != nil {
			return fmt.Errorf("count joined: %w", err)
		}
		for _, hour := range slices.Sorted(maps.Keys(c.intake)) {
			if _, err := tx.ExecContext(ctx, `INSERT INTO intake_hours (program_id, bucket_start, admitted_count) VALUES (?, ?, ?)
				ON CONFLICT (program_id, bucket_start) DO UPDATE SET admitted_count = intake_hours.admitted_count + excluded.admitted_count`,
				id, hour, c.intake[hour]); err != nil {
				return fmt.Errorf("count the hour's intake: %w", err)
			}
		}
	}
	tx.newEntries = nil
	return nil
}

// Execer runs a statement: a *sql.Tx, a *sql.DB or a store Tx.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// RecountEntries sets programID's counters from the entries it holds, for
// tools that insert entries straight into the table (cmd/loadgen's
// seeding, tests), which insertEntry's counting does not see: occupancy,
// the entries per state, and the funnel's joined as every entry the
// program holds (so a program none of whose entries was ever deleted).
func RecountEntries(ctx context.Context, tx Execer, programID string) error {
	for _, q := range []string{
		`UPDATE programs SET occupied = (SELECT count(*) FROM entries WHERE program_id = ?1 AND state <> 'withdrawn')
			WHERE id = ?1`,
		`DELETE FROM entry_state_counts WHERE program_id = ?1`,
		`INSERT INTO entry_state_counts (program_id, state, n)
			SELECT program_id, state, count(*) FROM entries WHERE program_id = ?1 GROUP BY state`,
		`UPDATE program_funnel SET joined = (SELECT count(*) FROM entries WHERE program_id = ?1) WHERE program_id = ?1`,
	} {
		if _, err := tx.ExecContext(ctx, q, programID); err != nil {
			return fmt.Errorf("recount entries: %w", err)
		}
	}
	return nil
}
