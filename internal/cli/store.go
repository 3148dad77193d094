package cli

import (
	"context"
	"errors"
	"fmt"

	"admit/internal/config"
	"admit/internal/datalock"
	"admit/internal/serverkeys"
	"admit/store"
)

// loadConfig is config.Load with the context its errors are reported in.
func loadConfig(env config.Environment) (*config.Config, error) {
	cfg, err := config.Load(env)
	if err != nil {
		return nil, fmt.Errorf("configuration:\n%w", err)
	}
	return cfg, nil
}

// openStore loads the server keys from cfg's data directory and opens the
// database with opt, the binding key and the retention policy.
func openStore(ctx context.Context, cfg *config.Config, opt store.Options) (serverkeys.Keys, *store.DB, error) {
	if err := refuseOwnKeysOnSharedDatabase(ctx, cfg); err != nil {
		return serverkeys.Keys{}, nil, err
	}
	keys, err := serverkeys.Load(cfg.Secrets, cfg.DataDir)
	if err != nil {
		return serverkeys.Keys{}, nil, err
	}
	opt.BindingKey, opt.Retention, opt.SignupQueue = keys.Binding, cfg.Retention, cfg.WriteQueue
	db, err := openDB(ctx, cfg, opt)
	if err != nil {
		return serverkeys.Keys{}, nil, err
	}
	if err := agreeKeys(ctx, cfg, keys, db); err != nil {
		db.Close()
		return serverkeys.Keys{}, nil, err
	}
	return keys, db, nil
}

// agreeKeys refuses, on PostgreSQL, keys other than those of the servers
// already on the database, naming where this server's keys come from. On
// SQLite one server owns the database, and a restore onto new keys starts.
func agreeKeys(ctx context.Context, cfg *config.Config, keys serverkeys.Keys, db *store.DB) error {
	if !cfg.PostgreSQL() {
		return nil
	}
	err := db.AgreeServerKeys(ctx, keys.Fingerprint())
	if errors.Is(err, store.ErrServerKeysDiffer) {
		return fmt.Errorf("server keys: the keys from %s differ from those of the servers already on the PostgreSQL database %s "+
			"(binding, counter or session_tokens): every server on one database needs the same keys — "+
			"copy the secrets file of a server already there or set the same ADMIT_SECRET_* — "+
			"and start it again (docs/DEPLOY.md, \"Server keys on PostgreSQL\")", keysSource(cfg), cfg.DatabaseLocation())
	}
	if err != nil {
		return fmt.Errorf("server keys: %w", err)
	}
	return nil
}

// openDB opens cfg's database with opt: PostgreSQL at ADMIT_DATABASE_URL
// when it is set, else the SQLite file in the data directory.
func openDB(ctx context.Context, cfg *config.Config, opt store.Options) (*store.DB, error) {
	if cfg.PostgreSQL() {
		return store.OpenPostgres(ctx, cfg.DatabaseURL, opt)
	}
	return store.Open(ctx, cfg.DBPath(), opt)
}

// readSchema reads the schema version of cfg's database, changing nothing.
func readSchema(ctx context.Context, cfg *config.Config) (*store.Schema, error) {
	if cfg.PostgreSQL() {
		return store.ReadSchemaPostgres(ctx, cfg.DatabaseURL)
	}
	return store.ReadSchema(ctx, cfg.DBPath())
}

// databaseName names cfg's database in a command's output: the SQLite
// file, or the PostgreSQL URL without its password.
func databaseName(cfg *config.Config) string {
	if cfg.PostgreSQL() {
		return cfg.DatabaseShown()
	}
	return cfg.DBPath()
}

// closeDB closes db and adds a failure to *err: closing the last connection
// checkpoints the WAL, so a write is not safely on disk until it succeeds.
func closeDB(db *store.DB, err *error) {
	if cerr := db.Close(); cerr != nil {
		*err = errors.Join(*err, fmt.Errorf("close database: %w", cerr))
	}
}

// openBesideServer opens the database for a command that may run beside
// admit serve (cmd names it in the lock file). Such a command migrates only
// while it holds the data directory's lock; beside a running server, which
// migrated at its start, it opens the schema as it is and refuses one with
// migrations pending. release drops the lock, if it was taken.
func openBesideServer(ctx context.Context, env config.Environment, cmd string) (db *store.DB, release func() error, err error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return nil, nil, err
	}
	schema, err := readSchema(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	opt := store.Options{NoMigrate: len(schema.Pending) == 0}
	if !opt.NoMigrate && cfg.PostgreSQL() && schema.Version() > 0 {
		// Several servers may share a PostgreSQL database: a command
		// migrates only a new one, never one that servers may run on.
		return nil, nil, fmt.Errorf("%s: the database needs migrations this admit applies: "+
			"start admit serve (or run admit migrate) with this admit first, then run this command again", cmd)
	}
	var lock *datalock.Lock
	if !opt.NoMigrate {
		if lock, err = datalock.Take(cfg.DataDir, cmd); err != nil {
			if busy := new(datalock.BusyError); errors.As(err, &busy) {
				return nil, nil, fmt.Errorf("%s: the database needs migrations this admit applies, and %w: "+
					"restart the server with this admit (it migrates when it starts), then run this command again", cmd, err)
			}
			return nil, nil, err
		}
	}
	if _, db, err = openStore(ctx, cfg, opt); err != nil {
		return nil, nil, errors.Join(err, lock.Release())
	}
	return db, lock.Release, nil
}
