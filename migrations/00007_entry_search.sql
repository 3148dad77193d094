-- The owner's queue search: an exact address uses the unique
-- (program_id, email_key) index; the start of a local part, in any letter
-- case, uses this index over the lowercased key, so neither reads more than
-- the entries that match (docs/API.md#queue-and-entries).

-- +goose Up
CREATE INDEX entries_search_idx ON entries(program_id, lower(email_key));

-- +goose Down
DROP INDEX entries_search_idx;
