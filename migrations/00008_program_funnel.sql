-- The program page's funnel: how many entries ever joined, were selected,
-- were invited and redeemed, kept by triggers so the page reads one row
-- instead of the history (docs/ARCHITECTURE.md#program-at-a-glance). Each
-- entry counts at most once per step: selection only ever leaves waiting,
-- and nothing returns to waiting; an entry's first invitation counts, not a
-- reissue; an entry has at most one grant.

-- +goose Up
CREATE TABLE program_funnel (
  program_id  TEXT PRIMARY KEY REFERENCES programs(id),
  joined      INTEGER NOT NULL DEFAULT 0 CHECK (joined >= 0),
  selected    INTEGER NOT NULL DEFAULT 0 CHECK (selected >= 0),
  invited     INTEGER NOT NULL DEFAULT 0 CHECK (invited >= 0),
  redeemed    INTEGER NOT NULL DEFAULT 0 CHECK (redeemed >= 0)
) STRICT, WITHOUT ROWID;

-- What history says so far: an entry was selected if it is past waiting
-- along the selection path, or its history records a selection.
INSERT INTO program_funnel (program_id, joined, selected, invited, redeemed)
  SELECT p.id,
    (SELECT count(*) FROM entries e WHERE e.program_id = p.id),
    (SELECT count(*) FROM entries e WHERE e.program_id = p.id AND (e.state IN ('selected', 'invited', 'active', 'revoked')
       OR EXISTS (SELECT 1 FROM audit_events a WHERE a.entry_id = e.id AND a.event_type = 'selected'))),
    (SELECT count(DISTINCT i.entry_id) FROM invitations i WHERE i.program_id = p.id),
    (SELECT count(*) FROM grants g WHERE g.program_id = p.id)
  FROM programs p WHERE true;

-- +goose StatementBegin
CREATE TRIGGER funnel_program AFTER INSERT ON programs
BEGIN
  INSERT INTO program_funnel (program_id) VALUES (NEW.id);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER funnel_joined AFTER INSERT ON entries
BEGIN
  UPDATE program_funnel SET joined = joined + 1 WHERE program_id = NEW.program_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER funnel_selected AFTER UPDATE OF state ON entries
WHEN OLD.state = 'waiting' AND NEW.state = 'selected'
BEGIN
  UPDATE program_funnel SET selected = selected + 1 WHERE program_id = NEW.program_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER funnel_invited AFTER INSERT ON invitations
WHEN NOT EXISTS (SELECT 1 FROM invitations i WHERE i.entry_id = NEW.entry_id AND i.id <> NEW.id)
BEGIN
  UPDATE program_funnel SET invited = invited + 1 WHERE program_id = NEW.program_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER funnel_redeemed AFTER INSERT ON grants
BEGIN
  UPDATE program_funnel SET redeemed = redeemed + 1 WHERE program_id = NEW.program_id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER funnel_redeemed;
DROP TRIGGER funnel_invited;
DROP TRIGGER funnel_selected;
DROP TRIGGER funnel_joined;
DROP TRIGGER funnel_program;
DROP TABLE program_funnel;
