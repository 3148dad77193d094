-- The fingerprint of the server keys every server on one database must
-- share, as on SQLite's 00020 (docs/DEPLOY.md#server-keys-on-postgresql).

-- +goose Up
CREATE TABLE server_key_fingerprint (
  id          BIGINT PRIMARY KEY CHECK (id = 1),
  digest      BYTEA NOT NULL CHECK (length(digest) = 32),
  created_at  BIGINT NOT NULL
);

-- +goose Down
DROP TABLE server_key_fingerprint;
