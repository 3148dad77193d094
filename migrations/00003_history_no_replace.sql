-- Append-only history cannot be rewritten by an insert either. REPLACE,
-- INSERT OR REPLACE and an upsert resolve a key conflict by deleting the old
-- row without firing its delete trigger (SQLite fires none unless
-- recursive_triggers is on), so the update and delete triggers alone let
-- them rewrite a notice or an audit event. These triggers refuse any insert
-- whose key is already taken, before the conflict is resolved; a plain
-- insert with a new key is untouched. See docs/history.md.

-- +goose Up
-- +goose StatementBegin
CREATE TRIGGER notices_no_replace BEFORE INSERT ON notices
WHEN EXISTS (SELECT 1 FROM notices WHERE id = NEW.id OR (program_id = NEW.program_id AND version = NEW.version))
BEGIN
  SELECT RAISE(ABORT, 'immutable reference row');
END;
-- +goose StatementEnd

-- In a BEFORE INSERT trigger an id left for SQLite to assign reads as -1, so
-- ids below 1 are refused outright (after the insert, when the id is known):
-- no stored row can then be matched by an insert that names no id.
-- +goose StatementBegin
CREATE TRIGGER audit_no_replace BEFORE INSERT ON audit_events
WHEN EXISTS (SELECT 1 FROM audit_events WHERE id = NEW.id)
BEGIN
  SELECT RAISE(ABORT, 'immutable reference row');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER audit_positive_id AFTER INSERT ON audit_events
WHEN NEW.id < 1
BEGIN
  SELECT RAISE(ABORT, 'audit event ids start at 1');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER workspace_events_no_replace BEFORE INSERT ON workspace_events
WHEN EXISTS (SELECT 1 FROM workspace_events WHERE id = NEW.id)
BEGIN
  SELECT RAISE(ABORT, 'immutable reference row');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER workspace_events_positive_id AFTER INSERT ON workspace_events
WHEN NEW.id < 1
BEGIN
  SELECT RAISE(ABORT, 'workspace event ids start at 1');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER workspace_events_positive_id;
DROP TRIGGER workspace_events_no_replace;
DROP TRIGGER audit_positive_id;
DROP TRIGGER audit_no_replace;
DROP TRIGGER notices_no_replace;
