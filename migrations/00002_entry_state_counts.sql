-- Entries per program and state, kept by triggers on entries, so the owner
-- console's state counts read a few rows instead of counting the queue: at
-- 100,000 entries the GROUP BY took 18 ms per page view
-- (docs/PERFORMANCE.md#entry-counts-per-state).
-- Every entry counts, erased ones too, as count(*) over entries did.

-- +goose Up
CREATE TABLE entry_state_counts (
  program_id  TEXT NOT NULL REFERENCES programs(id),
  state       TEXT NOT NULL
              CHECK (state IN ('waiting', 'selected', 'invited', 'active', 'declined', 'withdrawn', 'revoked')),
  n           INTEGER NOT NULL CHECK (n >= 0),
  PRIMARY KEY (program_id, state)
) STRICT, WITHOUT ROWID;

INSERT INTO entry_state_counts (program_id, state, n)
  SELECT program_id, state, count(*) FROM entries WHERE true GROUP BY program_id, state;

-- +goose StatementBegin
CREATE TRIGGER entries_count_insert AFTER INSERT ON entries
BEGIN
  INSERT INTO entry_state_counts (program_id, state, n) VALUES (NEW.program_id, NEW.state, 1)
    ON CONFLICT (program_id, state) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER entries_count_update AFTER UPDATE OF program_id, state ON entries
WHEN OLD.program_id <> NEW.program_id OR OLD.state <> NEW.state
BEGIN
  UPDATE entry_state_counts SET n = n - 1 WHERE program_id = OLD.program_id AND state = OLD.state;
  INSERT INTO entry_state_counts (program_id, state, n) VALUES (NEW.program_id, NEW.state, 1)
    ON CONFLICT (program_id, state) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER entries_count_delete AFTER DELETE ON entries
BEGIN
  UPDATE entry_state_counts SET n = n - 1 WHERE program_id = OLD.program_id AND state = OLD.state;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER entries_count_delete;
DROP TRIGGER entries_count_update;
DROP TRIGGER entries_count_insert;
DROP TABLE entry_state_counts;
