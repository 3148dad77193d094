-- Retiring a program takes effect in one transaction (retired_at: closed,
-- no redemption, no private access), and its per-entry bookkeeping (states,
-- erasure dates, revoking invitations and grants) then runs in short
-- transactions so no signup waits long behind it. These columns say how far
-- that bookkeeping has gone, so an interrupted retirement is finished by the
-- next sweep: retire_pending is 1 until it is done, and the cursor is the
-- (created_at, id) of the last entry processed (NULL before the first).

-- +goose Up
ALTER TABLE programs ADD COLUMN retire_pending INTEGER NOT NULL DEFAULT 0 CHECK (retire_pending IN (0, 1));
ALTER TABLE programs ADD COLUMN retire_cursor_at INTEGER;
ALTER TABLE programs ADD COLUMN retire_cursor_id TEXT CHECK (retire_cursor_id IS NULL OR length(retire_cursor_id) = 36);
CREATE INDEX programs_retire_pending_idx ON programs(retire_pending) WHERE retire_pending = 1;

-- +goose Down
DROP INDEX programs_retire_pending_idx;
ALTER TABLE programs DROP COLUMN retire_cursor_id;
ALTER TABLE programs DROP COLUMN retire_cursor_at;
ALTER TABLE programs DROP COLUMN retire_pending;
