-- A new entry is no longer counted by triggers: the store counts the
-- entries a transaction inserts and adds them to the program's counters
-- once, before the commit (store/entry_counts.go). A batch of signups then
-- writes each counter once instead of once per signup, and with no trigger
-- on the insert SQLite keeps no statement journal for it
-- (docs/PERFORMANCE.md#counted-once-per-commit). Changes of state and deletions are still
-- counted by the triggers of 00001, 00002 and 00008.
--
-- The counters are right when this runs (the triggers kept them), so
-- nothing is recounted.

-- +goose Up
DROP TRIGGER entries_occupy;
DROP TRIGGER entries_count_insert;
DROP TRIGGER funnel_joined;

-- +goose Down
-- +goose StatementBegin
CREATE TRIGGER entries_occupy AFTER INSERT ON entries
WHEN NEW.state <> 'withdrawn'
BEGIN
  UPDATE programs SET occupied = occupied + 1 WHERE id = NEW.program_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER entries_count_insert AFTER INSERT ON entries
BEGIN
  INSERT INTO entry_state_counts (program_id, state, n) VALUES (NEW.program_id, NEW.state, 1)
    ON CONFLICT (program_id, state) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER funnel_joined AFTER INSERT ON entries
BEGIN
  UPDATE program_funnel SET joined = joined + 1 WHERE program_id = NEW.program_id;
END;
-- +goose StatementEnd
