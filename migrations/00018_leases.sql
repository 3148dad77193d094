-- Leases for once-only background work (docs/ARCHITECTURE.md#background-work-and-leases).
-- The sweeper and the retirer each run on one server at a time: the one
-- whose row names it as holder until expires_at (Unix milliseconds). A
-- holder is a random ID a server makes at start, never an address. epoch
-- counts the lease's unbroken holdings: every new holder, or a holder
-- taking it back after it expired, raises it by one; a renewal keeps it.
-- A row is never deleted, so epochs only grow.

-- +goose Up
CREATE TABLE leases (
  name        TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
  holder      TEXT NOT NULL CHECK (length(holder) BETWEEN 1 AND 64),
  epoch       INTEGER NOT NULL CHECK (epoch > 0),
  expires_at  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE leases;
