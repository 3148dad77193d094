-- Leases for once-only background work (docs/ARCHITECTURE.md#background-work-and-leases).
-- The same table as SQLite's 00018: the sweeper and the retirer each run
-- on one server at a time, the one whose row names it as holder until
-- expires_at (Unix milliseconds). epoch counts the lease's unbroken
-- holdings and only grows.

-- +goose Up
CREATE TABLE leases (
  name        TEXT COLLATE "C" PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
  holder      TEXT COLLATE "C" NOT NULL CHECK (length(holder) BETWEEN 1 AND 64),
  epoch       BIGINT NOT NULL CHECK (epoch > 0),
  expires_at  BIGINT NOT NULL
);

-- +goose Down
DROP TABLE leases;
