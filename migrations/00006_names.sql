-- Names people read: a program has a display name (its slug stays its
-- address), and a workspace has a display name and a public contact for
-- privacy questions (docs/API.md#names).
--
-- The defaults only satisfy the checks while the column is added; every
-- existing row is then named from what it already has.

-- +goose Up
ALTER TABLE programs ADD COLUMN name TEXT NOT NULL DEFAULT 'Untitled program'
  CHECK (length(name) BETWEEN 1 AND 80 AND name = trim(name));

-- "spring-beta" becomes "Spring beta"; the development demo gets its own name.
UPDATE programs SET name = CASE
    WHEN public_slug = 'demo' AND workspace_id IN (SELECT id FROM workspaces WHERE name = 'Demo workspace')
      THEN 'admit demo'
    ELSE upper(substr(public_slug, 1, 1)) || replace(substr(public_slug, 2), '-', ' ')
  END;

ALTER TABLE workspaces ADD COLUMN display_name TEXT NOT NULL DEFAULT 'Workspace'
  CHECK (length(display_name) BETWEEN 1 AND 80 AND display_name = trim(display_name));
UPDATE workspaces SET display_name = trim(substr(name, 1, 80));

-- An email address or an https URL; NULL until the owner sets one.
ALTER TABLE workspaces ADD COLUMN contact TEXT
  CHECK (contact IS NULL OR length(contact) BETWEEN 3 AND 254);

-- The audit log filters by event type; entries already have their own index.
CREATE INDEX audit_program_type_idx ON audit_events(program_id, event_type, id);

-- +goose Down
DROP INDEX audit_program_type_idx;
ALTER TABLE workspaces DROP COLUMN contact;
ALTER TABLE workspaces DROP COLUMN display_name;
ALTER TABLE programs DROP COLUMN name;
