-- Erasure is final: once an entry is erased (erased_at set, its address
-- replaced by the tombstone 'erased:' + entry id), no statement can give it
-- an address again or clear or move its erasure instant. The store never
-- tries (every erasing and address-reading statement skips erased rows);
-- this makes the database refuse it too, as history tables refuse changes.
-- docs/erasure.md says what erasure removes.

-- +goose Up
-- +goose StatementBegin
CREATE TRIGGER entries_erasure_final BEFORE UPDATE OF erased_at, email_key ON entries
WHEN OLD.erased_at IS NOT NULL AND (NEW.erased_at IS NOT OLD.erased_at OR NEW.email_key IS NOT OLD.email_key)
BEGIN
  SELECT RAISE(ABORT, 'an erased entry stays erased');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER entries_erasure_final;
