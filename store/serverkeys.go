package store

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
)

// ErrServerKeysDiffer is AgreeServerKeys' answer to a server whose keys are
// not those of the servers already on the database.
var ErrServerKeysDiffer = errors.New("this server's keys are not those of the servers already on this database")

// ServerKeyFingerprintSize is the length of a server key fingerprint.
const ServerKeyFingerprintSize = 32

// AgreeServerKeys checks that fingerprint, a keyed digest of the server's
// keys that every server on one database must share, is the one recorded
// in the database, recording it when none is: the first server to start
// on a database sets it. It returns ErrServerKeysDiffer when another is
// recorded. rule: servers sharing a PostgreSQL database share their keys
// (docs/DEPLOY.md#server-keys-on-postgresql); two first servers starting at
// the same moment are serialised like every write, so the second one is
// refused too.
func (db *DB) AgreeServerKeys(ctx context.Context, fingerprint []byte) error {
	if len(fingerprint) != ServerKeyFingerprintSize {
		return fmt.Errorf("server key fingerprint is %d bytes, want %d", len(fingerprint), ServerKeyFingerprintSize)
	}
	return db.Update(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO server_key_fingerprint (id, digest, created_at) VALUES (1, ?, ?)
			ON CONFLICT (id) DO NOTHING`, fingerprint, Millis(tx.Now)); err != nil {
			return fmt.Errorf("record the server key fingerprint: %w", err)
		}
		var recorded []byte
		if err := tx.QueryRowContext(ctx, `SELECT digest FROM server_key_fingerprint WHERE id = 1`).Scan(&recorded); err != nil {
			return fmt.Errorf("read the server key fingerprint: %w", err)
		}
		if subtle.ConstantTimeCompare(recorded, fingerprint) != 1 {
			return ErrServerKeysDiffer
		}
		return nil
	})
}
