-- An audit event's actor is the identity's user ID: a Clerk user ID, an
-- OpenID Connect issuer and subject digest, or a development ID
-- (docs/ARCHITECTURE.md#identity), as in staff_members and grants since
-- 00016. The column was named for Clerk; it is named for what it holds.
-- SQLite renames the column in its check too; the triggers on audit_events
-- do not name it.

-- +goose Up
ALTER TABLE audit_events RENAME COLUMN actor_clerk_id TO actor_user_id;

-- +goose Down
ALTER TABLE audit_events RENAME COLUMN actor_user_id TO actor_clerk_id;
