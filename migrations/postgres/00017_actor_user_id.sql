-- An audit event's actor is the identity's user ID: a Clerk user ID, an
-- OpenID Connect issuer and subject digest, or a development ID
-- (docs/ARCHITECTURE.md#identity). The column was named for Clerk; it is
-- named for what it holds, as on SQLite. Its check follows the column; the
-- check's name follows too.

-- +goose Up
ALTER TABLE audit_events RENAME COLUMN actor_clerk_id TO actor_user_id;
ALTER TABLE audit_events RENAME CONSTRAINT audit_events_actor_clerk_id_check TO audit_events_actor_user_id_check;

-- +goose Down
ALTER TABLE audit_events RENAME CONSTRAINT audit_events_actor_user_id_check TO audit_events_actor_clerk_id_check;
ALTER TABLE audit_events RENAME COLUMN actor_user_id TO actor_clerk_id;
