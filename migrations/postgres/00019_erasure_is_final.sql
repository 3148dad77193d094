-- Erasure is final, as on SQLite: once an entry is erased, no statement can
-- give it an address again or clear or move its erasure instant.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION entries_erasure_final() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'an erased entry stays erased';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER entries_erasure_final BEFORE UPDATE OF erased_at, email_key ON entries
FOR EACH ROW WHEN (OLD.erased_at IS NOT NULL AND (NEW.erased_at IS DISTINCT FROM OLD.erased_at OR NEW.email_key IS DISTINCT FROM OLD.email_key))
EXECUTE FUNCTION entries_erasure_final();

-- +goose Down
DROP TRIGGER entries_erasure_final ON entries;
DROP FUNCTION entries_erasure_final();
