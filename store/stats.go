package store

import (
	"context"
	"fmt"
	"time"
)

// StatsDays is how many UTC days of signups a program's stats cover,
// today included.
const StatsDays = 30

// Seats says how a program's seat cap is taken: Used by active access,
// Reserved by issued invitations that have not expired, Left for new
// invitations (never below zero).
type Seats struct {
	Cap, Used, Reserved, Left int
}

// DaySignups is the number of new entries on one UTC day.
type DaySignups struct {
	Day     time.Time
	Signups int
}

// Funnel counts the entries that ever reached each step: joined, selected,
// sent an invitation, redeemed one. Each entry counts once per step.
type Funnel struct {
	Joined, Selected, Invited, Redeemed int
}

// ProgramStats is a program at a glance.
type ProgramStats struct {
	// Counts has every entry state, zero ones included.
	Counts map[string]int
	Seats  Seats
	// Daily holds StatsDays days, oldest first, zero days included.
	Daily  []DaySignups
	Funnel Funnel
}

// ProgramStats reads a program's counts by state, its seats, its signups per
// day and its funnel. Every part is a counter or a bounded indexed read
// (docs/ARCHITECTURE.md#program-at-a-glance), so the cost does not grow with
// the queue.
func (db *DB) ProgramStats(ctx context.Context, a Actor, programID string) (*ProgramStats, error) {
	var st *ProgramStats
	err := db.View(ctx, func(tx *Tx) error {
		p, err := ownedProgram(ctx, tx, a, programID)
		if err != nil {
			return err
		}
		st, err = programStats(ctx, tx, p)
		return err
	})
	return st, err
}

// programStats reads the stats of a program already read in tx, judged by
// the transaction clock.
func programStats(ctx context.Context, tx *Tx, p *Program) (*ProgramStats, error) {
	st := &ProgramStats{Counts: map[string]int{}}
	counts, err := stateCounts(ctx, tx, p.ID)
	if err != nil {
		return nil, err
	}
	for _, s := range EntryStates {
		st.Counts[s] = counts[s]
	}
	// Both counts are bounded by the seat cap: each is a range of an index.
	st.Seats.Cap = p.SeatCap
	if err := tx.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM grants WHERE program_id = ?1 AND active = 1),
		(SELECT count(*) FROM invitations WHERE program_id = ?1 AND state = 'issued' AND expires_at > ?2)`,
		p.ID, Millis(tx.Now)).Scan(&st.Seats.Used, &st.Seats.Reserved); err != nil {
		return nil, fmt.Errorf("count seats: %w", err)
	}
	st.Seats.Left = max(0, st.Seats.Cap-st.Seats.Used-st.Seats.Reserved)
	if st.Daily, err = dailySignups(ctx, tx, p.ID); err != nil {
		return nil, err
	}
	f := &st.Funnel
	err = tx.QueryRowContext(ctx, `SELECT joined, selected, invited, redeemed FROM program_funnel WHERE program_id = ?`, p.ID).
		Scan(&f.Joined, &f.Selected, &f.Invited, &f.Redeemed)
	if err != nil {
		return nil, fmt.Errorf("read funnel: %w", err)
	}
	return st, nil
}

// dailySignups sums the hour buckets signup keeps (at most 24 rows a day)
// into StatsDays UTC days ending today.
func dailySignups(ctx context.Context, tx *Tx, programID string) ([]DaySignups, error) {
	today := tx.Now.UTC().Truncate(24 * time.Hour)
	first := today.AddDate(0, 0, -(StatsDays - 1))
	out := make([]DaySignups, StatsDays)
	for i := range out {
		out[i].Day = first.AddDate(0, 0, i)
	}
	rows, err := tx.QueryContext(ctx, `SELECT bucket_start, admitted_count FROM intake_hours
		WHERE program_id = ? AND bucket_start >= ? AND bucket_start < ?`,
		programID, Millis(first), Millis(today.AddDate(0, 0, 1)))
	if err != nil {
		return nil, fmt.Errorf("read signup hours: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var at int64
		var n int
		if err := rows.Scan(&at, &n); err != nil {
			return nil, err
		}
		i := int(FromMillis(at).Sub(first) / (24 * time.Hour))
		out[i].Signups += n
	}
	return out, rows.Err()
}
