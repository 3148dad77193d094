package store

import (
	"context"
	"fmt"
	"time"
)

// Retention says how long an entry keeps its email address after it reaches
// a state that ends its purpose (docs/ARCHITECTURE.md#the-data-lifecycle:
// retention by status). States not listed here (waiting, selected,
// invited, active) keep the address while
// the program runs; retiring a program schedules every entry.
type Retention struct {
	Withdrawn      time.Duration
	Declined       time.Duration
	Revoked        time.Duration
	RetiredProgram time.Duration
}

// Default retention periods. The privacy page states these numbers from
// the configuration built on them; change them here, not in prose.
const (
	DefaultWithdrawnDays      = 30
	DefaultDeclinedDays       = 30
	DefaultRevokedDays        = 30
	DefaultRetiredProgramDays = 30
)

// NetworkCounterLifetime is how long an hourly attempt counter may live: it
// expires when its UTC hour ends and is deleted by a later request.
const NetworkCounterLifetime = time.Hour

// ReceiptLifetime is how long a signup's receipt (its request key and the
// keyed hash binding it to the submitted fields) is kept after the
// request: the window in which a retry of the same request key is answered
// from it, even after the entry was removed or erased. The sweep then
// deletes it (docs/erasure.md#request-receipts); the privacy page states
// it.
const ReceiptLifetime = 24 * time.Hour

// DefaultRetention is the retention policy with the default periods.
var DefaultRetention = Retention{
	Withdrawn:      DefaultWithdrawnDays * 24 * time.Hour,
	Declined:       DefaultDeclinedDays * 24 * time.Hour,
	Revoked:        DefaultRevokedDays * 24 * time.Hour,
	RetiredProgram: DefaultRetiredProgramDays * 24 * time.Hour,
}

// eraseAfter is the one rule for when an entry's email is erased: from the
// entry's state and whether its program is retired, at instant now. nil means
// the state keeps the address while the program runs.
func (r Retention) eraseAfter(state string, retired bool, now time.Time) *time.Time {
	var d time.Duration
	switch state {
	case StateWithdrawn:
		d = r.Withdrawn
	case StateDeclined:
		d = r.Declined
	case StateRevoked:
		d = r.Revoked
	}
	if retired && (d == 0 || r.RetiredProgram < d) {
		d = r.RetiredProgram
	}
	if d == 0 {
		return nil
	}
	t := now.Add(d)
	return &t
}

// setEntryState moves an entry to a new state and, in the same statement,
// sets when its email is erased. Every state change goes through here.
func (db *DB) setEntryState(ctx context.Context, tx *Tx, programID, entryID, state string, retired bool) error {
	var erase any
	if t := db.retention.eraseAfter(state, retired, tx.Now); t != nil {
		erase = Millis(*t)
	}
	// In a retired program an entry keeps the earlier of its own erasure
	// date and the retired-program date: retiring never postpones erasure.
	res, err := tx.ExecContext(ctx, `UPDATE entries SET state = ?, updated_at = ?,
		erase_after = CASE
			WHEN erased_at IS NOT NULL THEN NULL
			WHEN ? <> 0 AND erase_after IS NOT NULL AND (CAST(? AS BIGINT) IS NULL OR erase_after < ?) THEN erase_after
			ELSE ? END
		WHERE id = ? AND program_id = ?`, state, Millis(tx.Now), retired, erase, erase, erase, entryID, programID)
	if err != nil {
		return fmt.Errorf("set entry state: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return Errorf(ENOTFOUND, "Not found.")
	}
	return nil
}

// RetentionPolicy returns the retention policy in force.
func (db *DB) RetentionPolicy() Retention { return db.retention }
