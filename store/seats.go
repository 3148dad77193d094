package store

import (
	"context"
	"fmt"
)

// SeatUse is how a program's seats stand: Cap in all, Active held by
// recipients with access, Reserved by issued codes that have not expired,
// and Left for new invitations (never below zero).
type SeatUse struct {
	Cap      int
	Active   int
	Reserved int
	Left     int
}

// ProgramSeats reads how the program's seats stand now, counted the way
// IssueInvitation counts them.
func (db *DB) ProgramSeats(ctx context.Context, a Actor, programID string) (SeatUse, error) {
	var u SeatUse
	err := db.View(ctx, func(tx *Tx) error {
		p, err := ownedProgram(ctx, tx, a, programID)
		if err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT
			(SELECT count(*) FROM grants WHERE program_id = ? AND active = 1),
			(SELECT count(*) FROM invitations WHERE program_id = ? AND state = 'issued' AND expires_at > ?)`,
			p.ID, p.ID, Millis(tx.Now)).Scan(&u.Active, &u.Reserved); err != nil {
			return fmt.Errorf("count seats: %w", err)
		}
		u.Cap = p.SeatCap
		u.Left = max(0, p.SeatCap-u.Active-u.Reserved)
		return nil
	})
	return u, err
}
