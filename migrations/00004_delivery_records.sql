-- Invitation delivery records hold no personal data (docs/history.md).
-- The channel becomes one of a fixed list of codes, and the optional
-- reference never outlives the entry's email address: erasing an entry,
-- by whatever path, clears its invitations' references in the same
-- statement.

-- +goose Up
-- Free-text channels from before become the code they name, else 'other'.
UPDATE invitations SET delivery_channel = CASE
    WHEN replace(replace(lower(trim(delivery_channel)), ' ', '_'), '-', '_') IN ('email', 'sms', 'chat', 'in_person', 'other')
      THEN replace(replace(lower(trim(delivery_channel)), ' ', '_'), '-', '_')
    WHEN lower(delivery_channel) LIKE '%mail%' THEN 'email'
    WHEN lower(delivery_channel) LIKE '%sms%' OR lower(delivery_channel) LIKE '%text%' THEN 'sms'
    WHEN lower(delivery_channel) LIKE '%chat%' OR lower(delivery_channel) LIKE '%slack%'
      OR lower(delivery_channel) LIKE '%teams%' OR lower(delivery_channel) LIKE '%signal%'
      OR lower(delivery_channel) LIKE '%whatsapp%' OR lower(delivery_channel) LIKE '%telegram%'
      OR lower(delivery_channel) LIKE '%discord%' OR lower(delivery_channel) LIKE '%messenger%'
      OR lower(delivery_channel) LIKE '%matrix%' THEN 'chat'
    WHEN lower(delivery_channel) LIKE '%person%' THEN 'in_person'
    ELSE 'other'
  END
WHERE delivery_channel IS NOT NULL AND delivery_channel NOT IN ('email', 'sms', 'chat', 'in_person', 'other');

-- References that could hold an address, a phone number or a code are
-- cleared (more broadly than the new check refuses: any @, any seven
-- digits, any 43 base64url characters in a row), and so are those of
-- entries already erased.
UPDATE invitations SET delivery_reference = NULL
WHERE delivery_reference IS NOT NULL AND (
  instr(delivery_reference, '@') > 0 OR instr(delivery_reference, '＠') > 0 OR instr(delivery_reference, '﹫') > 0
  OR delivery_reference GLOB '*[0-9]*[0-9]*[0-9]*[0-9]*[0-9]*[0-9]*[0-9]*'
  OR delivery_reference GLOB '*[A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-][A-Za-z0-9_-]*'
  OR EXISTS (SELECT 1 FROM entries e WHERE e.id = invitations.entry_id AND e.erased_at IS NOT NULL)
);

-- +goose StatementBegin
CREATE TRIGGER invitations_channel_code_insert BEFORE INSERT ON invitations
WHEN NEW.delivery_channel IS NOT NULL AND NEW.delivery_channel NOT IN ('email', 'sms', 'chat', 'in_person', 'other')
BEGIN
  SELECT RAISE(ABORT, 'delivery channel must be a channel code');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER invitations_channel_code_update BEFORE UPDATE OF delivery_channel ON invitations
WHEN NEW.delivery_channel IS NOT NULL AND NEW.delivery_channel NOT IN ('email', 'sms', 'chat', 'in_person', 'other')
BEGIN
  SELECT RAISE(ABORT, 'delivery channel must be a channel code');
END;
-- +goose StatementEnd

-- rule: erasing an entry clears its invitations' delivery references.
-- +goose StatementBegin
CREATE TRIGGER entries_erase_delivery_reference AFTER UPDATE OF erased_at ON entries
WHEN OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL
BEGIN
  UPDATE invitations SET delivery_reference = NULL
  WHERE entry_id = NEW.id AND program_id = NEW.program_id AND delivery_reference IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER entries_erase_delivery_reference;
DROP TRIGGER invitations_channel_code_update;
DROP TRIGGER invitations_channel_code_insert;
