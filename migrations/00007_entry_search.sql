-- The owner's queue search (docs/API.md#queue-and-entries). An exact address
-- uses the unique (program_id, email_key) index. The start of a local part,
-- in any letter case, uses these indexes over the lowercased key, with or
-- without a state: they give the matches already in the order a search's
-- pages use, so a page reads only its own rows however many entries match.

-- +goose Up
CREATE INDEX entries_search_idx ON entries(program_id, lower(email_key), id);
CREATE INDEX entries_state_search_idx ON entries(program_id, state, lower(email_key), id);

-- +goose Down
DROP INDEX entries_state_search_idx;
DROP INDEX entries_search_idx;
