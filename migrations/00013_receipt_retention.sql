-- A signup's receipt answers a replay of its request key for
-- store.ReceiptLifetime after the request, and the sweep then deletes it
-- (docs/erasure.md, "Request receipts"). The sweep finds the expired
-- receipts in the order they were accepted: this index makes that a range
-- at the start of the index instead of a scan of every receipt. Receipts
-- are accepted in time order, so a signup adds its entry at the index's
-- end.

-- +goose Up
CREATE INDEX signup_receipts_accepted_idx ON signup_receipts(accepted_at);

-- +goose Down
DROP INDEX signup_receipts_accepted_idx;
