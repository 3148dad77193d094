-- The team (docs/console.md#team): every owner membership gets its own ID,
-- which history shows as the actor of an owner's event instead of the
-- identity provider's user ID, and may carry a name and the sign-in
-- address it was added by or last seen with. An owner may also be added by
-- address before they have signed in: owner_invites holds that address
-- until the first sign-in with it verified by the identity provider, or
-- until it expires.

-- +goose Up
ALTER TABLE staff_members ADD COLUMN id TEXT CHECK (id IS NULL OR length(id) = 36);
ALTER TABLE staff_members ADD COLUMN name TEXT CHECK (name IS NULL OR length(name) BETWEEN 1 AND 80);
ALTER TABLE staff_members ADD COLUMN email TEXT CHECK (email IS NULL OR length(email) BETWEEN 3 AND 254);
ALTER TABLE staff_members ADD COLUMN last_seen_at INTEGER;
UPDATE staff_members SET id = lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' ||
  substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + abs(random()) % 4, 1) ||
  substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6)));
CREATE UNIQUE INDEX staff_id_idx ON staff_members(id);

CREATE TABLE owner_invites (
  id            TEXT PRIMARY KEY CHECK (length(id) = 36),
  workspace_id  TEXT NOT NULL REFERENCES workspaces(id),
  email_key     TEXT NOT NULL CHECK (length(email_key) BETWEEN 3 AND 254),
  name          TEXT CHECK (name IS NULL OR length(name) BETWEEN 1 AND 80),
  created_at    INTEGER NOT NULL,
  expires_at    INTEGER NOT NULL,
  claimed_at    INTEGER,
  claimed_by    TEXT CHECK (claimed_by IS NULL OR length(claimed_by) = 36)
) STRICT;
CREATE INDEX owner_invites_open_idx ON owner_invites(email_key, expires_at) WHERE claimed_at IS NULL;

-- +goose Down
DROP TABLE owner_invites;
DROP INDEX staff_id_idx;
ALTER TABLE staff_members DROP COLUMN last_seen_at;
ALTER TABLE staff_members DROP COLUMN email;
ALTER TABLE staff_members DROP COLUMN name;
ALTER TABLE staff_members DROP COLUMN id;
