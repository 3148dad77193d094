-- Two indexes on entries go: each put every signup's address on a page of
-- its own, chosen by the address, so a commit wrote one more page per
-- signup for each (docs/PERFORMANCE.md#cpu-per-signup), and each kept one more
-- ordered copy of every address (docs/erasure.md).
--
-- entries_email_idx found an address's entries across programs. The
-- unique (program_id, email_key) index finds them program by program
-- instead (store/entry.go): a signed-in applicant's statuses cost one
-- index seek per program and address.
--
-- entries_search_idx gave a search without a state its matches in address
-- order. entries_state_search_idx gives each state's matches in that
-- order, and a search without a state merges the states' ranges
-- (store/queue.go).

-- +goose Up
DROP INDEX entries_email_idx;
DROP INDEX entries_search_idx;

-- +goose Down
CREATE INDEX entries_search_idx ON entries(program_id, lower(email_key), id);
CREATE INDEX entries_email_idx ON entries(email_key);
