package cli

import (
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
// never printed (config.Settings hides them). An invalid configuration is
// refused with serve's message, checked in serve's order.
func configCmd(args []string, env config.Environment, stdout io.Writer) error {
	if len(args) > 0 {
		return usagef("config: unexpected argument %q", args[0])
	}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	bc, err := loadBackupConfig(cfg)
	if err != nil {
		return err
	}
	// serve refuses a litestream.yml whose database is not admit's.
	replica, err := bc.ReplicaFor(cfg.DBPath())
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
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
	fmt.Fprintf(stdout, "database: %s\n", cfg.DBPath())
	fmt.Fprintf(stdout, "server keys: %s\n", keysSource(cfg))
	fmt.Fprintf(stdout, "backup: %s\n", backupSummary(bc, replica))
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
	if cfg.Secrets.CredentialsDir != "" {
		return "the systemd credential " + filepath.Join(cfg.Secrets.CredentialsDir, "secrets") +
			" if present, else " + filepath.Join(cfg.DataDir, "secrets")
	}
	return filepath.Join(cfg.DataDir, "secrets") + " (generated on first start)"
}

// backupSummary says whether and where serve replicates.
func backupSummary(bc *backup.Config, replica *backup.ReplicaConfig) string {
	switch {
	case !bc.Exists:
		return "off: no " + bc.File
	case replica == nil:
		return "off: " + bc.File + " names no replica"
	}
	return "to " + replica.String() + " (" + bc.File + "); erased data leaves the backup within " + bc.BackupRetention().String()
}
