package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"admit/backup"
	"admit/internal/config"
	"admit/internal/serverkeys"
	"admit/store"
)

// checked is a configuration that passed preflight.
type checked struct {
	cfg *config.Config
	// backup is litestream.yml with the environment's backup settings;
	// replica is the replica it names for admit's database, nil for none.
	backup  *backup.Config
	replica *backup.ReplicaConfig
}

// preflight runs every check admit serve makes before it takes the data
// directory's lock: the environment (each problem named by its variable,
// placeholders shipped in deploy/ included), litestream.yml and the
// replica's credentials, the server keys' source and the database's schema
// version. serve and `admit config` both run it, so `admit config` refuses
// exactly what serve would. It changes nothing on disk.
func preflight(ctx context.Context, env config.Environment) (*checked, error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return nil, err
	}
	bc, err := loadBackupConfig(cfg)
	if err != nil {
		return nil, err
	}
	var errs []error
	if err := serverkeys.Check(cfg.Secrets, cfg.DataDir); err != nil {
		errs = append(errs, fmt.Errorf("server keys (ADMIT_DATA=%s): %w", cfg.DataDir, err))
	}
	if cfg.PostgreSQL() {
		if err := refuseOwnKeysOnSharedDatabase(ctx, cfg); err != nil {
			errs = append(errs, err)
		}
		// Litestream and the SQLite file's schema do not apply; the
		// database's schema is checked when it is opened.
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		return &checked{cfg: cfg, backup: bc}, nil
	}
	// serve refuses a litestream.yml whose database is not admit's.
	replica, err := bc.ReplicaFor(cfg.DBPath())
	if err != nil {
		return nil, errors.Join(append(errs, fmt.Errorf("backup: %w", err))...)
	}
	if replica != nil {
		errs = append(errs, checkReplica(cfg, bc, replica)...)
	}
	if s, err := store.ReadSchema(ctx, cfg.DBPath()); err != nil {
		errs = append(errs, fmt.Errorf("database (ADMIT_DATA=%s): %w", cfg.DataDir, err))
	} else if len(s.Unknown) > 0 {
		errs = append(errs, &store.SchemaTooNewError{Path: cfg.DBPath(), Version: s.Version(), Known: store.KnownVersion(), Unknown: s.Unknown})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &checked{cfg: cfg, backup: bc, replica: replica}, nil
}

// examplePlaceholders are litestream.yml values shipped in
// deploy/litestream.yml for the operator to replace.
const (
	exampleBucket   = "my-admit-backups"
	exampleEndpoint = "example.com"
)

// checkReplica refuses an S3 replica whose settings are deploy/'s
// examples, or that has no credentials: without them Litestream's first
// listing fails, or the AWS SDK looks for an instance role the machine
// does not have.
func checkReplica(cfg *config.Config, bc *backup.Config, rc *backup.ReplicaConfig) []error {
	if rc.Type != "s3" {
		return nil
	}
	var errs []error
	if rc.Bucket == exampleBucket {
		errs = append(errs, fmt.Errorf("%s: bucket %s is the example shipped in deploy/litestream.yml: set your own", bc.File, rc.Bucket))
	}
	if u, err := url.Parse(rc.Endpoint); err == nil && rc.Endpoint != "" {
		if h := u.Hostname(); h == exampleEndpoint || strings.HasSuffix(h, "."+exampleEndpoint) {
			errs = append(errs, fmt.Errorf("%s: endpoint %s is the example shipped in deploy/litestream.yml: set your provider's, or remove it for AWS S3", bc.File, rc.Endpoint))
		}
	}
	if bc.Credentials == (backup.Credentials{}) && cfg.Backup.CredentialSource == "" {
		errs = append(errs, fmt.Errorf("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, and %s names the S3 replica %s: "+
			"set both in the service's environment (/etc/admit/admit.env), or name where the AWS SDK finds credentials "+
			"(AWS_PROFILE, AWS_WEB_IDENTITY_TOKEN_FILE; AWS_EC2_METADATA_DISABLED=false for an instance role)", bc.File, rc))
	}
	return errs
}

// warnUnknown says, once per name, that an ADMIT_ variable of the
// environment is not one admit reads, and which known one it is closest
// to: a misspelt setting is otherwise silently not in force.
func warnUnknown(names []string, warn func(name, closest string)) {
	for _, u := range config.UnknownVars(names) {
		warn(u.Name, u.Closest)
	}
}

// environNames are the names of environ's NAME=value entries.
func environNames(environ []string) []string {
	names := make([]string, 0, len(environ))
	for _, kv := range environ {
		if n, _, ok := strings.Cut(kv, "="); ok && n != "" {
			names = append(names, n)
		}
	}
	return names
}
