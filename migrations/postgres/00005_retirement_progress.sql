-- No change on PostgreSQL: its 00001 already holds what SQLite's 00005_retirement_progress.sql does
-- (admit runs on PostgreSQL from schema version 16, so none is older).

-- +goose Up

-- +goose Down
