-- admit's schema: spec 002 Appendix B translated to SQLite (DESIGN §3).
-- Every table is STRICT; UUIDs are TEXT generated in Go; digests and HMACs are
-- 32-byte BLOBs; every instant is INTEGER Unix milliseconds UTC; booleans are
-- INTEGER 0/1.

-- +goose Up
CREATE TABLE workspaces (
  id          TEXT PRIMARY KEY CHECK (length(id) = 36),
  name        TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 120),
  active      INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  created_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE staff_members (
  workspace_id   TEXT NOT NULL REFERENCES workspaces(id),
  clerk_user_id  TEXT NOT NULL CHECK (length(clerk_user_id) BETWEEN 1 AND 128),
  role           TEXT NOT NULL CHECK (role IN ('owner')),
  active         INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL,
  PRIMARY KEY (workspace_id, clerk_user_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX staff_user_idx ON staff_members(clerk_user_id, active);

-- Workspace-level audit: staff changes and bootstrap. Append-only.
CREATE TABLE workspace_events (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  workspace_id     TEXT NOT NULL REFERENCES workspaces(id),
  actor_kind       TEXT NOT NULL CHECK (actor_kind IN ('cli', 'system', 'owner')),
  event_type       TEXT NOT NULL CHECK (event_type IN ('workspace_created', 'owner_added', 'owner_removed')),
  subject_user_id  TEXT CHECK (subject_user_id IS NULL OR length(subject_user_id) BETWEEN 1 AND 128),
  event_at         INTEGER NOT NULL,
  details          TEXT NOT NULL DEFAULT '{}'
                   CHECK (json_valid(details) AND json_type(details) = 'object' AND length(CAST(details AS BLOB)) <= 512)
) STRICT;

CREATE TABLE programs (
  id                   TEXT PRIMARY KEY CHECK (length(id) = 36),
  workspace_id         TEXT NOT NULL REFERENCES workspaces(id),
  public_slug          TEXT NOT NULL UNIQUE
                       CHECK (length(public_slug) BETWEEN 3 AND 60 AND public_slug NOT GLOB '*[^a-z0-9-]*'),
  purpose              TEXT NOT NULL CHECK (length(purpose) BETWEEN 1 AND 1000),
  signup_open          INTEGER NOT NULL DEFAULT 0 CHECK (signup_open IN (0, 1)),
  access_enabled       INTEGER NOT NULL DEFAULT 0 CHECK (access_enabled IN (0, 1)),
  queue_cap            INTEGER NOT NULL CHECK (queue_cap BETWEEN 1 AND 100000),
  hourly_cap           INTEGER NOT NULL CHECK (hourly_cap BETWEEN 1 AND 100000),
  seat_cap             INTEGER NOT NULL CHECK (seat_cap BETWEEN 1 AND 100000),
  max_invitation_days  INTEGER NOT NULL DEFAULT 14 CHECK (max_invitation_days BETWEEN 1 AND 30),
  revision             INTEGER NOT NULL DEFAULT 1 CHECK (revision > 0),
  current_notice_id    TEXT,
  -- Queue occupancy (entries not withdrawn), kept by triggers on entries so
  -- admission reads one row instead of counting the queue.
  occupied             INTEGER NOT NULL DEFAULT 0 CHECK (occupied >= 0),
  retired_at           INTEGER,
  created_at           INTEGER NOT NULL,
  updated_at           INTEGER NOT NULL,
  UNIQUE (id, workspace_id),
  FOREIGN KEY (current_notice_id, id) REFERENCES notices(id, program_id),
  CHECK (retired_at IS NULL OR (signup_open = 0 AND access_enabled = 0))
) STRICT;
CREATE INDEX programs_workspace_idx ON programs(workspace_id, created_at);

CREATE TABLE notices (
  id              TEXT PRIMARY KEY CHECK (length(id) = 36),
  program_id      TEXT NOT NULL REFERENCES programs(id),
  version         INTEGER NOT NULL CHECK (version > 0),
  purpose         TEXT NOT NULL CHECK (length(purpose) BETWEEN 1 AND 1000),
  contact_text    TEXT NOT NULL CHECK (length(contact_text) BETWEEN 1 AND 2000),
  retention_text  TEXT NOT NULL CHECK (length(retention_text) BETWEEN 1 AND 1000),
  published_at    INTEGER NOT NULL,
  UNIQUE (program_id, version),
  UNIQUE (id, program_id)
) STRICT;

CREATE TABLE entries (
  id             TEXT PRIMARY KEY CHECK (length(id) = 36),
  program_id     TEXT NOT NULL REFERENCES programs(id),
  -- The normalized email, or a tombstone ('erased:' + entry id) after erasure.
  email_key      TEXT NOT NULL CHECK (length(email_key) BETWEEN 3 AND 254),
  notice_id      TEXT NOT NULL,
  permission_at  INTEGER NOT NULL,
  state          TEXT NOT NULL
                 CHECK (state IN ('waiting', 'selected', 'invited', 'active', 'declined', 'withdrawn', 'revoked')),
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL,
  -- SHA-256 of the private removal token (spec 000); cleared on erasure.
  removal_hash   BLOB UNIQUE CHECK (removal_hash IS NULL OR length(removal_hash) = 32),
  -- When the sweeper erases the email; NULL while the state keeps it.
  erase_after    INTEGER,
  erased_at      INTEGER,
  UNIQUE (program_id, email_key),
  UNIQUE (id, program_id),
  FOREIGN KEY (notice_id, program_id) REFERENCES notices(id, program_id),
  CHECK (erased_at IS NULL OR removal_hash IS NULL)
) STRICT;
CREATE INDEX entries_queue_idx ON entries(program_id, state, created_at, id);
CREATE INDEX entries_time_idx ON entries(program_id, created_at, id);
CREATE INDEX entries_email_idx ON entries(email_key);
CREATE INDEX entries_erase_idx ON entries(erase_after) WHERE erase_after IS NOT NULL AND erased_at IS NULL;

CREATE TABLE signup_receipts (
  program_id     TEXT NOT NULL REFERENCES programs(id),
  request_key    TEXT NOT NULL CHECK (length(request_key) = 36),
  binding_hmac   BLOB NOT NULL CHECK (length(binding_hmac) = 32),
  response_code  INTEGER NOT NULL DEFAULT 202 CHECK (response_code = 202),
  accepted_at    INTEGER NOT NULL,
  PRIMARY KEY (program_id, request_key)
) STRICT, WITHOUT ROWID;

CREATE TABLE intake_hours (
  program_id      TEXT NOT NULL REFERENCES programs(id),
  bucket_start    INTEGER NOT NULL CHECK (bucket_start % 3600000 = 0),
  admitted_count  INTEGER NOT NULL CHECK (admitted_count >= 0),
  PRIMARY KEY (program_id, bucket_start)
) STRICT, WITHOUT ROWID;

CREATE TABLE invitations (
  id                    TEXT PRIMARY KEY CHECK (length(id) = 36),
  program_id            TEXT NOT NULL,
  entry_id              TEXT NOT NULL,
  token_sha256          BLOB NOT NULL UNIQUE CHECK (length(token_sha256) = 32),
  state                 TEXT NOT NULL CHECK (state IN ('issued', 'redeemed', 'revoked', 'expired')),
  issued_at             INTEGER NOT NULL,
  expires_at            INTEGER NOT NULL,
  delivery_recorded_at  INTEGER,
  delivery_channel      TEXT CHECK (delivery_channel IS NULL OR length(delivery_channel) BETWEEN 1 AND 80),
  delivery_reference    TEXT CHECK (delivery_reference IS NULL OR length(delivery_reference) BETWEEN 1 AND 160),
  terminal_at           INTEGER,
  FOREIGN KEY (entry_id, program_id) REFERENCES entries(id, program_id),
  UNIQUE (id, entry_id, program_id),
  CHECK (expires_at > issued_at),
  CHECK ((delivery_recorded_at IS NULL) = (delivery_channel IS NULL)),
  CHECK (delivery_reference IS NULL OR delivery_recorded_at IS NOT NULL),
  CHECK ((state = 'issued') = (terminal_at IS NULL))
) STRICT;
CREATE UNIQUE INDEX one_issued_invite_per_entry ON invitations(entry_id) WHERE state = 'issued';
CREATE INDEX invite_entry_idx ON invitations(entry_id, issued_at DESC);
CREATE INDEX invite_program_state_idx ON invitations(program_id, state, expires_at);

CREATE TABLE owner_action_receipts (
  program_id    TEXT NOT NULL REFERENCES programs(id),
  request_key   TEXT NOT NULL CHECK (length(request_key) = 36),
  action        TEXT NOT NULL CHECK (action IN ('issue_invitation', 'record_delivery')),
  binding_hmac  BLOB NOT NULL CHECK (length(binding_hmac) = 32),
  target_id     TEXT NOT NULL CHECK (length(target_id) = 36),
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (program_id, request_key)
) STRICT, WITHOUT ROWID;

CREATE TABLE grants (
  id             TEXT PRIMARY KEY CHECK (length(id) = 36),
  program_id     TEXT NOT NULL,
  entry_id       TEXT NOT NULL UNIQUE,
  invitation_id  TEXT NOT NULL UNIQUE,
  clerk_user_id  TEXT NOT NULL CHECK (length(clerk_user_id) BETWEEN 1 AND 128),
  active         INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  granted_at     INTEGER NOT NULL,
  revoked_at     INTEGER,
  FOREIGN KEY (entry_id, program_id) REFERENCES entries(id, program_id),
  FOREIGN KEY (invitation_id, entry_id, program_id) REFERENCES invitations(id, entry_id, program_id),
  UNIQUE (program_id, clerk_user_id),
  CHECK ((active = 1 AND revoked_at IS NULL) OR (active = 0 AND revoked_at IS NOT NULL))
) STRICT;
CREATE INDEX grants_program_active_idx ON grants(program_id, active);

CREATE TABLE early_access_content (
  program_id  TEXT PRIMARY KEY REFERENCES programs(id),
  revision    INTEGER NOT NULL DEFAULT 1 CHECK (revision > 0),
  body        TEXT NOT NULL CHECK (length(body) BETWEEN 1 AND 20000),
  updated_at  INTEGER NOT NULL
) STRICT;

-- Images and PDFs that only the private-content gate serves.
CREATE TABLE private_assets (
  program_id    TEXT NOT NULL REFERENCES programs(id),
  name          TEXT NOT NULL
                CHECK (length(name) BETWEEN 1 AND 100 AND name NOT GLOB '*[^A-Za-z0-9._-]*' AND name NOT GLOB '.*'),
  content_type  TEXT NOT NULL
                CHECK (content_type IN ('image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf')),
  data          BLOB NOT NULL CHECK (length(data) BETWEEN 1 AND 2097152),
  sha256        BLOB NOT NULL CHECK (length(sha256) = 32),
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (program_id, name)
) STRICT, WITHOUT ROWID;

CREATE TABLE audit_events (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  program_id      TEXT NOT NULL REFERENCES programs(id),
  entry_id        TEXT,
  actor_kind      TEXT NOT NULL CHECK (actor_kind IN ('owner', 'recipient', 'public', 'system')),
  actor_clerk_id  TEXT CHECK (actor_clerk_id IS NULL OR length(actor_clerk_id) BETWEEN 1 AND 128),
  event_type      TEXT NOT NULL CHECK (event_type IN (
                    'program_created', 'notice_published', 'signup', 'selected', 'declined',
                    'invite_issued', 'delivery_recorded', 'invite_revoked', 'invite_expired',
                    'redeemed', 'grant_revoked', 'withdrawn', 'content_updated', 'asset_uploaded',
                    'program_changed', 'program_retired', 'queue_exported', 'erased')),
  event_at        INTEGER NOT NULL,
  details         TEXT NOT NULL DEFAULT '{}'
                  CHECK (json_valid(details) AND json_type(details) = 'object' AND length(CAST(details AS BLOB)) <= 512),
  FOREIGN KEY (entry_id, program_id) REFERENCES entries(id, program_id)
) STRICT;
CREATE INDEX audit_program_idx ON audit_events(program_id, event_at, id);
CREATE INDEX audit_entry_idx ON audit_events(entry_id, id) WHERE entry_id IS NOT NULL;

-- Hourly attempt counters keyed by HMAC(server key, purpose, hour, subject);
-- no raw address is stored. Expired rows are deleted by later requests.
CREATE TABLE network_counters (
  key         BLOB PRIMARY KEY CHECK (length(key) = 32),
  attempts    INTEGER NOT NULL CHECK (attempts >= 0),
  expires_at  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX network_counters_expiry_idx ON network_counters(expires_at);

-- Queue occupancy: every entry not withdrawn counts (declined ones too).
-- +goose StatementBegin
CREATE TRIGGER entries_occupy AFTER INSERT ON entries
WHEN NEW.state <> 'withdrawn'
BEGIN
  UPDATE programs SET occupied = occupied + 1 WHERE id = NEW.program_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER entries_release AFTER UPDATE OF state ON entries
WHEN OLD.state <> 'withdrawn' AND NEW.state = 'withdrawn'
BEGIN
  UPDATE programs SET occupied = occupied - 1 WHERE id = NEW.program_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER entries_reoccupy AFTER UPDATE OF state ON entries
WHEN OLD.state = 'withdrawn' AND NEW.state <> 'withdrawn'
BEGIN
  UPDATE programs SET occupied = occupied + 1 WHERE id = NEW.program_id;
END;
-- +goose StatementEnd

-- Notices and audit history are append-only.
-- +goose StatementBegin
CREATE TRIGGER notices_no_update BEFORE UPDATE ON notices
BEGIN
  SELECT RAISE(ABORT, 'immutable reference row');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER notices_no_delete BEFORE DELETE ON notices
BEGIN
  SELECT RAISE(ABORT, 'immutable reference row');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit_events
BEGIN
  SELECT RAISE(ABORT, 'immutable reference row');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit_events
BEGIN
  SELECT RAISE(ABORT, 'immutable reference row');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER workspace_events_no_update BEFORE UPDATE ON workspace_events
BEGIN
  SELECT RAISE(ABORT, 'immutable reference row');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER workspace_events_no_delete BEFORE DELETE ON workspace_events
BEGIN
  SELECT RAISE(ABORT, 'immutable reference row');
END;
-- +goose StatementEnd

-- +goose Down
-- The schema holds audit history; it is never rolled back in place.
