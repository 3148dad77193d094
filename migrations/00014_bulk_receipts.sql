-- Bulk invitation issues and bulk delivery records are idempotent by
-- request key like the single ones (docs/API.md#bulk-invitations): the
-- receipt names the action, and owner_receipt_targets lists, in the
-- request's order, every invitation a bulk request wrote, so a replay
-- answers all of them. A key is one namespace per program whichever
-- action used it.

-- +goose Up
CREATE TABLE owner_action_receipts_new (
  program_id    TEXT NOT NULL REFERENCES programs(id),
  request_key   TEXT NOT NULL CHECK (length(request_key) = 36),
  action        TEXT NOT NULL CHECK (action IN ('issue_invitation', 'record_delivery', 'issue_invitations', 'record_deliveries')),
  binding_hmac  BLOB NOT NULL CHECK (length(binding_hmac) = 32),
  target_id     TEXT NOT NULL CHECK (length(target_id) = 36),
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (program_id, request_key)
) STRICT, WITHOUT ROWID;
INSERT INTO owner_action_receipts_new SELECT program_id, request_key, action, binding_hmac, target_id, created_at
  FROM owner_action_receipts;
DROP TABLE owner_action_receipts;
ALTER TABLE owner_action_receipts_new RENAME TO owner_action_receipts;

CREATE TABLE owner_receipt_targets (
  program_id   TEXT NOT NULL,
  request_key  TEXT NOT NULL,
  position     INTEGER NOT NULL CHECK (position >= 0),
  target_id    TEXT NOT NULL CHECK (length(target_id) = 36),
  PRIMARY KEY (program_id, request_key, position),
  FOREIGN KEY (program_id, request_key) REFERENCES owner_action_receipts(program_id, request_key)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE owner_receipt_targets;
DELETE FROM owner_action_receipts WHERE action IN ('issue_invitations', 'record_deliveries');
CREATE TABLE owner_action_receipts_old (
  program_id    TEXT NOT NULL REFERENCES programs(id),
  request_key   TEXT NOT NULL CHECK (length(request_key) = 36),
  action        TEXT NOT NULL CHECK (action IN ('issue_invitation', 'record_delivery')),
  binding_hmac  BLOB NOT NULL CHECK (length(binding_hmac) = 32),
  target_id     TEXT NOT NULL CHECK (length(target_id) = 36),
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (program_id, request_key)
) STRICT, WITHOUT ROWID;
INSERT INTO owner_action_receipts_old SELECT * FROM owner_action_receipts;
DROP TABLE owner_action_receipts;
ALTER TABLE owner_action_receipts_old RENAME TO owner_action_receipts;
