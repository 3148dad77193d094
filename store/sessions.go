package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Session modes: which identity provider a server-side session belongs to.
const (
	SessionModeDev  = "dev"
	SessionModeOIDC = "oidc"
)

// SessionDigestSize is the length of a session ID's digest (SHA-256).
const SessionDigestSize = 32

// MaxSessionSealed bounds a session's sealed provider data in bytes.
const MaxSessionSealed = 16 << 10

// Session is a server-side sign-in session (docs/ARCHITECTURE.md#sessions).
// The store never sees the session ID itself, only its digest, and never
// the provider data in the clear: Sealed is encrypted by the caller.
type Session struct {
	Digest     []byte
	UserID     string
	Mode       string
	Sealed     []byte
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
}

func checkSession(digest []byte, userID, mode string, sealed []byte) error {
	if len(digest) != SessionDigestSize {
		return Errorf(EINVALID, "The session ID digest must be %d bytes.", SessionDigestSize)
	}
	if userID == "" || len(userID) > 512 {
		return Errorf(EINVALID, "The session's user is missing or too long.")
	}
	if mode != SessionModeDev && mode != SessionModeOIDC {
		return Errorf(EINVALID, "Unknown session mode.")
	}
	if len(sealed) < 28 || len(sealed) > MaxSessionSealed {
		return Errorf(EINVALID, "The session's sealed data is out of bounds.")
	}
	return nil
}

// CreateSession stores a new session that expires ttl after the
// transaction's clock.
func (db *DB) CreateSession(ctx context.Context, digest []byte, userID, mode string, sealed []byte, ttl time.Duration) (*Session, error) {
	if err := checkSession(digest, userID, mode, sealed); err != nil {
		return nil, err
	}
	if ttl <= 0 {
		return nil, Errorf(EINVALID, "A session must live for a positive time.")
	}
	var s *Session
	err := db.Update(ctx, func(tx *Tx) error {
		now := tx.Now
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions (id_digest, user_id, mode, sealed, created_at, last_seen_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, digest, userID, mode, sealed, Millis(now), Millis(now), Millis(now.Add(ttl))); err != nil {
			return fmt.Errorf("insert session: %w", err)
		}
		s = &Session{Digest: digest, UserID: userID, Mode: mode, Sealed: sealed,
			CreatedAt: FromMillis(Millis(now)), LastSeenAt: FromMillis(Millis(now)), ExpiresAt: FromMillis(Millis(now.Add(ttl)))}
		return nil
	})
	return s, err
}

// SessionByDigest returns the live session with this ID digest. A session
// that does not exist, was ended or has expired is ENOTFOUND, all alike.
func (db *DB) SessionByDigest(ctx context.Context, digest []byte) (*Session, error) {
	if len(digest) != SessionDigestSize {
		return nil, notFound()
	}
	var s Session
	var created, seen, expires int64
	err := db.readRow(ctx, `SELECT user_id, mode, sealed, created_at, last_seen_at, expires_at
		FROM sessions WHERE id_digest = ? AND expires_at > ?`, digest, Millis(db.now())).
		Scan(&s.UserID, &s.Mode, &s.Sealed, &created, &seen, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound()
	}
	if err != nil {
		return nil, fmt.Errorf("read session: %w", err)
	}
	s.Digest = digest
	s.CreatedAt, s.LastSeenAt, s.ExpiresAt = FromMillis(created), FromMillis(seen), FromMillis(expires)
	return &s, nil
}

// TouchSession records that a live session was used now. A session that
// has ended meanwhile is ENOTFOUND.
func (db *DB) TouchSession(ctx context.Context, digest []byte) error {
	return db.Update(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET last_seen_at = `+tx.engine.pick(`max`, `GREATEST`)+`(last_seen_at, ?)
			WHERE id_digest = ? AND expires_at > ?`, Millis(tx.Now), digest, Millis(tx.Now))
		return sessionChanged(res, err, "touch session")
	})
}

// UpdateSessionSealed replaces a live session's sealed provider data (new
// tokens after a refresh) and records the use. A session that has ended
// meanwhile is ENOTFOUND: a refresh never revives it.
func (db *DB) UpdateSessionSealed(ctx context.Context, digest, sealed []byte) error {
	if len(sealed) < 28 || len(sealed) > MaxSessionSealed {
		return Errorf(EINVALID, "The session's sealed data is out of bounds.")
	}
	return db.Update(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET sealed = ?, last_seen_at = `+tx.engine.pick(`max`, `GREATEST`)+`(last_seen_at, ?)
			WHERE id_digest = ? AND expires_at > ?`, sealed, Millis(tx.Now), digest, Millis(tx.Now))
		return sessionChanged(res, err, "update session")
	})
}

func sessionChanged(res sql.Result, err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	} else if n == 0 {
		return notFound()
	}
	return nil
}

// DeleteSession ends one session. Ending one that is already gone is not
// an error: sign-out is safe to repeat. On a full disk it uses the reserve
// (updateFreeingReserve).
func (db *DB) DeleteSession(ctx context.Context, digest []byte) error {
	return db.updateFreeingReserve(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id_digest = ?`, digest); err != nil {
			return fmt.Errorf("delete session: %w", err)
		}
		return nil
	})
}

// DeleteUserSessions ends every session of userID ("sign out
// everywhere") and returns how many there were. On a full disk it uses the
// reserve (updateFreeingReserve).
func (db *DB) DeleteUserSessions(ctx context.Context, userID string) (int, error) {
	var n int64
	err := db.updateFreeingReserve(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE user_id = ?`, userID)
		if err != nil {
			return fmt.Errorf("delete user sessions: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// CountUserSessions returns how many live sessions userID has.
func (db *DB) CountUserSessions(ctx context.Context, userID string) (int, error) {
	var n int
	err := db.readRow(ctx, `SELECT count(*) FROM sessions WHERE user_id = ? AND expires_at > ?`, userID, Millis(db.now())).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count sessions: %w", err)
	}
	return n, nil
}

// EndProviderSession records that the provider session with this ID
// digest (Clerk's sid) was signed out here, until expiresAt: the last
// moment a token carrying it could still verify.
func (db *DB) EndProviderSession(ctx context.Context, sidDigest []byte, expiresAt time.Time) error {
	if len(sidDigest) != SessionDigestSize {
		return Errorf(EINVALID, "The session ID digest must be %d bytes.", SessionDigestSize)
	}
	// On a full disk it uses the reserve, as a deletion does.
	return db.updateFreeingReserve(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO ended_sessions (sid_digest, expires_at) VALUES (?, ?)
			ON CONFLICT (sid_digest) DO UPDATE SET expires_at = `+tx.engine.pick(`max`, `GREATEST`)+`(ended_sessions.expires_at, excluded.expires_at)`,
			sidDigest, Millis(expiresAt)); err != nil {
			return fmt.Errorf("end provider session: %w", err)
		}
		return nil
	})
}

// ProviderSessionEnded reports whether the provider session with this ID
// digest was signed out here.
func (db *DB) ProviderSessionEnded(ctx context.Context, sidDigest []byte) (bool, error) {
	var ended bool
	err := db.readRow(ctx, `SELECT EXISTS (SELECT 1 FROM ended_sessions WHERE sid_digest = ?)`, sidDigest).Scan(&ended)
	if err != nil {
		return false, fmt.Errorf("read ended session: %w", err)
	}
	return ended, nil
}

// deleteExpiredSessions deletes sessions and ended provider sessions whose
// expiry has passed (the sweeper, docs/erasure.md).
func deleteExpiredSessions(ctx context.Context, tx *Tx) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE expires_at <= ?`, Millis(tx.Now)); err != nil {
		return fmt.Errorf("delete expired sessions: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM ended_sessions WHERE expires_at <= ?`, Millis(tx.Now)); err != nil {
		return fmt.Errorf("delete expired ended sessions: %w", err)
	}
	return nil
}
