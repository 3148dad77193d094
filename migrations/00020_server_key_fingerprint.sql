-- The fingerprint of the server keys every server on one database must
-- share (docs/DEPLOY.md#server-keys-on-postgresql): a keyed digest of the
-- keys that are never rotated (binding, counter, session_tokens), from
-- which no key can be read back. The first server to start stores it; a
-- server whose keys give another is refused at start. One row at most.
-- Only PostgreSQL installations use it (a SQLite database has one server,
-- and a restore onto new keys must still start); the table is on both
-- engines so that their schemas stay the same.

-- +goose Up
CREATE TABLE server_key_fingerprint (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  digest      BLOB NOT NULL CHECK (length(digest) = 32),
  created_at  INTEGER NOT NULL
) STRICT;

-- +goose Down
DROP TABLE server_key_fingerprint;
