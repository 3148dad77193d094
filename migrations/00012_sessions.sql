-- Server-side sign-in sessions (docs/ARCHITECTURE.md#sessions). A session
-- cookie carries only a random ID; the server keeps the ID's SHA-256 digest,
-- the user it belongs to and what the identity provider gave it (the
-- development address, or OpenID Connect tokens), sealed with AES-GCM under
-- a server key that never lives in the database. Signing out deletes the
-- row, so a copy of the cookie stops working everywhere at once. Rows past
-- their expiry are deleted by the sweeper.
--
-- ended_sessions records provider sessions (Clerk's sid) that were signed
-- out here, until the last token that could carry them has expired.

-- +goose Up
CREATE TABLE sessions (
  id_digest     BLOB PRIMARY KEY CHECK (length(id_digest) = 32),
  user_id       TEXT NOT NULL CHECK (length(user_id) BETWEEN 1 AND 512),
  mode          TEXT NOT NULL CHECK (mode IN ('dev', 'oidc')),
  sealed        BLOB NOT NULL CHECK (length(sealed) BETWEEN 28 AND 16384),
  created_at    INTEGER NOT NULL,
  last_seen_at  INTEGER NOT NULL CHECK (last_seen_at >= created_at),
  expires_at    INTEGER NOT NULL CHECK (expires_at > created_at)
) STRICT, WITHOUT ROWID;
CREATE INDEX sessions_user_idx ON sessions(user_id);
CREATE INDEX sessions_expiry_idx ON sessions(expires_at);

CREATE TABLE ended_sessions (
  sid_digest  BLOB PRIMARY KEY CHECK (length(sid_digest) = 32),
  expires_at  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX ended_sessions_expiry_idx ON ended_sessions(expires_at);

-- +goose Down
DROP TABLE ended_sessions;
DROP TABLE sessions;
