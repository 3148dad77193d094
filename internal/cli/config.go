package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"

	"admit/backup"
	"admit/internal/config"
)

// configCmd is `admit config`: every variable admit reads with the value
// in force and where it came from, then what that means — the identity
// mode, the database, the server keys' source and the backup. Secrets are
// never printed (config.Settings hides them). It runs serve's checks
// (preflight) and refuses what serve would refuse with serve's message; an
// ADMIT_ variable admit does not read is named on stderr with the closest
// known one.
func configCmd(ctx context.Context, args []string, env config.Environment, names []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return usagef("config: unexpected argument %q", args[0])
	}
	warnUnknown(names, func(name, closest string) {
		fmt.Fprintf(stderr, "admit: warning: %s is not a variable admit reads, so it is ignored; did you mean %s?\n", name, closest)
	})
	ok, err := preflight(ctx, env)
	if err != nil {
		return err
	}
	cfg, bc, replica := ok.cfg, ok.backup, ok.replica
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "variable\tvalue\tsource")
	for _, s := range cfg.Settings() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Value, s.Source)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "identity: %s\n", identityMode(cfg))
	fmt.Fprintf(stdout, "database: %s\n", databaseSummary(cfg))
	fmt.Fprintf(stdout, "server keys: %s\n", keysSource(cfg))
	fmt.Fprintf(stdout, "backup: %s\n", backupSummary(cfg, bc, replica))
	return nil
}

// identityMode names the identity provider cfg configures.
func identityMode(cfg *config.Config) string {
	switch {
	case cfg.OIDCMode():
		return "OpenID Connect (" + cfg.OIDC.Issuer + ")"
	case cfg.DevMode():
		return "development (no real sign-in configured; this machine only)"
	}
	return "Clerk (" + cfg.Clerk.Issuer + ")"
}

// keysSource says where serve will read the server keys from.
func keysSource(cfg *config.Config) string {
	if len(cfg.Secrets.Env) > 0 {
		return "the environment (ADMIT_SECRET_*)"
	}
	if cfg.PostgreSQL() {
		// rule: servers sharing one database share their keys (docs/DEPLOY.md#server-keys-on-postgresql)
		return keysFileSource(cfg) + "; every server on this database needs the same keys"
	}
	return keysFileSource(cfg)
}

// keysFileSource says which secrets file serve reads the keys from.
func keysFileSource(cfg *config.Config) string {
	if cfg.Secrets.CredentialsDir != "" {
		return "the systemd credential " + filepath.Join(cfg.Secrets.CredentialsDir, "secrets") +
			" if present, else " + filepath.Join(cfg.DataDir, "secrets")
	}
	return filepath.Join(cfg.DataDir, "secrets") + " (generated on first start)"
}

// databaseSummary names the engine in use and where its data is, a
// PostgreSQL URL without its password.
func databaseSummary(cfg *config.Config) string {
	if cfg.PostgreSQL() {
		return "PostgreSQL at " + cfg.DatabaseShown() + " (ADMIT_DATABASE_URL; nothing is stored in a SQLite file)"
	}
	return "SQLite at " + cfg.DBPath()
}

// backupSummary says whether and where serve replicates.
func backupSummary(cfg *config.Config, bc *backup.Config, replica *backup.ReplicaConfig) string {
	switch {
	case cfg.PostgreSQL():
		return "Litestream does not apply to PostgreSQL: back up with the engine's own tools " +
			"(base backups and WAL archiving, or a managed service; docs/DEPLOY.md#postgresql)"
	case !bc.Exists:
		return "off: no " + bc.File
	case replica == nil:
		return "off: " + bc.File + " names no replica"
	}
	return "to " + replica.String() + " (" + bc.File + "); erased data leaves the backup within " + bc.BackupRetention().String()
}
