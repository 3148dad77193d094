-- How far a retirement's bookkeeping has gone, in entries, for the owner's
-- program page: retire_total is the number of the program's entries when it
-- was retired (no entry is added after that), retire_done how many of them
-- the steps have reached and dated. Each step adds its entries to
-- retire_done in its own transaction; the last sets it to retire_total.
-- Both stay 0 for a program that is not retired.

-- +goose Up
ALTER TABLE programs ADD COLUMN retire_total INTEGER NOT NULL DEFAULT 0 CHECK (retire_total >= 0);
ALTER TABLE programs ADD COLUMN retire_done INTEGER NOT NULL DEFAULT 0 CHECK (retire_done >= 0);

-- Programs retired before these columns: a finished retirement reached
-- every entry; a pending one reached those up to its cursor.
UPDATE programs SET retire_total = (SELECT coalesce(sum(c.n), 0) FROM entry_state_counts c WHERE c.program_id = programs.id)
  WHERE retired_at IS NOT NULL;
UPDATE programs SET retire_done = CASE
    WHEN retire_pending = 0 THEN retire_total
    WHEN retire_cursor_at IS NULL THEN 0
    ELSE (SELECT count(*) FROM entries e WHERE e.program_id = programs.id
      AND (e.created_at, e.id) <= (programs.retire_cursor_at, programs.retire_cursor_id))
  END
  WHERE retired_at IS NOT NULL;

-- +goose Down
ALTER TABLE programs DROP COLUMN retire_done;
ALTER TABLE programs DROP COLUMN retire_total;
