package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	"admit/internal/config"
	"admit/internal/serverkeys"
)

// refuseOwnKeysOnSharedDatabase refuses to make new server keys for a
// PostgreSQL database that admit already runs on: the servers sharing a
// database must share their keys (docs/DEPLOY.md#server-keys-on-postgresql),
// and a server that generated its own would sign its users out, refuse
// their forms and take their retries for other requests. It does nothing on
// SQLite, with the keys in the environment, or when the secrets file (or
// systemd credential) exists.
//
// rule: a server never generates keys for a database another admit has
// already migrated; two first servers starting at the same moment on an
// empty database are not caught here.
func refuseOwnKeysOnSharedDatabase(ctx context.Context, cfg *config.Config) error {
	if !cfg.PostgreSQL() || len(cfg.Secrets.Env) > 0 {
		return nil
	}
	path := serverkeys.Path(cfg.Secrets, cfg.DataDir)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	used, err := migratedByAdmit(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("server keys: read whether admit already runs on %s: %w", cfg.DatabaseLocation(), err)
	}
	if !used {
		return nil
	}
	return fmt.Errorf("server keys: ADMIT_SECRET_* are not set and %s does not exist, so this admit would make keys of its own, "+
		"but admit already runs on the PostgreSQL database %s with other keys: give it the keys of the servers already there — "+
		"copy their secrets file to %s (mode 0600) or set the same ADMIT_SECRET_* — and start it again "+
		"(docs/DEPLOY.md, \"Server keys on PostgreSQL\")", path, cfg.DatabaseLocation(), path)
}

// migratedByAdmit reports whether the database at dbURL has admit's schema
// version table with a migration applied: some admit has run on it.
func migratedByAdmit(ctx context.Context, dbURL string) (bool, error) {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return false, err
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRowContext(ctx, `SELECT to_regclass('goose_db_version') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return false, err
	}
	var applied bool
	err = db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM goose_db_version WHERE version_id > 0 AND is_applied)`).Scan(&applied)
	return applied, err
}
