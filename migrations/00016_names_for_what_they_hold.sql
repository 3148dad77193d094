-- The user ID of an owner (staff_members) and of a grant's holder (grants)
-- is the identity's: a Clerk user ID, an OpenID Connect issuer and subject
-- digest, or a development ID (docs/ARCHITECTURE.md#identity). The column
-- was named for Clerk, the first of them; it is named for what it holds.
-- An invitation's stored code digest (the SHA-256 of its code, the only
-- form of the code kept) takes the name the code uses for it, CodeDigest.
-- SQLite renames a column in its checks, keys and indexes too.

-- +goose Up
ALTER TABLE staff_members RENAME COLUMN clerk_user_id TO user_id;
ALTER TABLE grants RENAME COLUMN clerk_user_id TO user_id;
ALTER TABLE invitations RENAME COLUMN token_sha256 TO code_digest;

-- +goose Down
ALTER TABLE invitations RENAME COLUMN code_digest TO token_sha256;
ALTER TABLE grants RENAME COLUMN user_id TO clerk_user_id;
ALTER TABLE staff_members RENAME COLUMN user_id TO clerk_user_id;
