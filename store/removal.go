package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// tombstone is what an erased entry's email_key becomes: unique per entry,
// never a valid address (it has no @), and not derived from the address.
func tombstone(entryID string) string { return "erased:" + entryID }

// endAccess revokes the entry's issued invitation and active grant, with
// their audit events. Withdrawal, removal and retirement all use it.
func endAccess(ctx context.Context, tx *Tx, programID, entryID string, a Actor) error {
	res, err := tx.ExecContext(ctx, `UPDATE invitations SET state = 'revoked', terminal_at = ?
		WHERE program_id = ? AND entry_id = ? AND state = 'issued'`, Millis(tx.Now), programID, entryID)
	if err != nil {
		return fmt.Errorf("revoke invitations: %w", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		if err := appendEvent(ctx, tx, programID, entryID, a, InviteRevokedDetails{Cause: CauseWithdrawn}); err != nil {
			return err
		}
	}
	res, err = tx.ExecContext(ctx, `UPDATE grants SET active = 0, revoked_at = ?
		WHERE program_id = ? AND entry_id = ? AND active = 1`, Millis(tx.Now), programID, entryID)
	if err != nil {
		return fmt.Errorf("revoke grant: %w", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		if err := appendEvent(ctx, tx, programID, entryID, a, GrantRevokedDetails{Cause: CauseWithdrawn}); err != nil {
			return err
		}
	}
	return nil
}

// eraseEntry replaces the entry's email with a tombstone and clears its
// removal hash; a trigger clears its invitations' delivery references in
// the same statement (docs/history.md). IDs, states and the audit trail
// remain.
func eraseEntry(ctx context.Context, tx *Tx, programID, entryID string, a Actor, reason ErasureReason) error {
	_, err := tx.ExecContext(ctx, `UPDATE entries SET email_key = ?, removal_hash = NULL, erased_at = ?, erase_after = NULL
		WHERE id = ? AND program_id = ? AND erased_at IS NULL`, tombstone(entryID), Millis(tx.Now), entryID, programID)
	if err != nil {
		return fmt.Errorf("erase entry: %w", err)
	}
	// rule: the old bytes leave the log and every local copy soon after
	// the commit (RunEraser).
	tx.erased = true
	return appendEvent(ctx, tx, programID, entryID, a, ErasedDetails{Reason: reason})
}

// RemoveByToken is removal with the private link (docs/API.md#removal): the entry that
// the token's hash matches is withdrawn, its invitation and grant revoked,
// and its email and removal hash erased at once. No match is not an error:
// the answer is the same either way, and repeating it is safe.
func (db *DB) RemoveByToken(ctx context.Context, token string) error {
	hash := HashRemovalToken(token)
	return db.Update(ctx, func(tx *Tx) error {
		var programID, entryID, state string
		var retired sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT e.program_id, e.id, e.state, p.retired_at FROM entries e
			JOIN programs p ON p.id = e.program_id WHERE e.removal_hash = ?`, hash).Scan(&programID, &entryID, &state, &retired)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("find entry by token: %w", err)
		}
		public := Actor{Kind: ActorPublic}
		if err := endAccess(ctx, tx, programID, entryID, public); err != nil {
			return err
		}
		if state != StateWithdrawn {
			if err := db.setEntryState(ctx, tx, programID, entryID, StateWithdrawn, retired.Valid); err != nil {
				return err
			}
			if err := appendEvent(ctx, tx, programID, entryID, public, WithdrawnDetails{From: state, Via: ViaRemovalLink}); err != nil {
				return err
			}
		}
		return eraseEntry(ctx, tx, programID, entryID, public, ErasedByRemovalLink)
	})
}
