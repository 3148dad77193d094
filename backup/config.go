// Package backup embeds Litestream v0.5 in admit
// (docs/ARCHITECTURE.md#backups). It reads litestream.yml, the same file the
// official `litestream` CLI reads; replicates admit's database continuously
// while `admit serve` runs; restores it, optionally to a point in time; and
// checks a restore against the live database. It knows nothing of HTTP or of admit's domain.
package backup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/benbjohnson/litestream"
	"go.yaml.in/yaml/v3"
)

// DefaultConfigFile is read from the working directory when admit's
// configuration names no other file (ADMIT_LITESTREAM_CONFIG).
const DefaultConfigFile = "litestream.yml"

// Litestream's own defaults (cmd/litestream DefaultConfig), which apply when
// litestream.yml leaves a setting out. They are restated here because the
// backup retention computed from them is a promise on the privacy page.
const (
	DefaultSnapshotInterval         = litestream.DefaultSnapshotInterval
	DefaultSnapshotRetention        = litestream.DefaultSnapshotRetention
	DefaultL0Retention              = litestream.DefaultL0Retention
	DefaultL0RetentionCheckInterval = litestream.DefaultL0RetentionCheckInterval
)

// Config is the part of Litestream's configuration file that admit reads.
// Keys and meanings are the official CLI's (cmd/litestream Config), so
// `litestream restore -config litestream.yml <db>` works with the same file.
// Any other key is an error rather than silently ignored.
//
// Relative paths (the database, a file replica) are resolved against the
// working directory, as the official CLI does: run admit and litestream from
// the same directory, or use absolute paths.
type Config struct {
	// File is the path the configuration was read from.
	File string `yaml:"-"`
	// Exists is false when File was not there: replication is then off.
	Exists bool `yaml:"-"`

	DBs      []*DBConfig    `yaml:"dbs"`
	Snapshot SnapshotConfig `yaml:"snapshot"`
	// Levels are the compaction levels L1..Ln; empty means Litestream's
	// defaults (30s, 5m, 1h).
	Levels                   []*LevelConfig  `yaml:"levels"`
	L0Retention              *time.Duration  `yaml:"l0-retention"`
	L0RetentionCheckInterval *time.Duration  `yaml:"l0-retention-check-interval"`
	Retention                RetentionConfig `yaml:"retention"`

	// Credentials and MaxLag are not in the file: they come from admit's
	// configuration (internal/config reads them from the environment), and
	// the caller sets them before Start, Restore or Verify.
	Credentials Credentials   `yaml:"-"`
	MaxLag      time.Duration `yaml:"-"`
	// ReplicaCheckInterval is how often a running server checks that the
	// replica still holds a restorable backup; zero means
	// DefaultReplicaCheckInterval.
	ReplicaCheckInterval time.Duration `yaml:"-"`

	// repairGate, when set (tests only), holds each repair of a lost
	// replica until it can receive.
	repairGate chan struct{}
}

// Credentials are an S3 replica's access key pair. Empty, the AWS SDK's
// default chain applies (shared config, instance role).
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
}

// SnapshotConfig is the `snapshot` section: how often a full snapshot is
// written and how long each is kept.
type SnapshotConfig struct {
	Interval  *time.Duration `yaml:"interval"`
	Retention *time.Duration `yaml:"retention"`
}

// LevelConfig is one compaction level of the `levels` list.
type LevelConfig struct {
	Interval time.Duration `yaml:"interval"`
}

// RetentionConfig is the `retention` section. admit only accepts enabled:
// true (the default): with Litestream's deletion off, how long a backup keeps
// erased data is up to the bucket's lifecycle rules and the privacy page could
// not state it.
type RetentionConfig struct {
	Enabled *bool `yaml:"enabled"`
}

// DBConfig is one entry of `dbs`: a database and its replica. Litestream
// v0.5 replicates each database to one replica; the deprecated one-element
// `replicas` list is accepted as well.
type DBConfig struct {
	Path     string           `yaml:"path"`
	Replica  *ReplicaConfig   `yaml:"replica"`
	Replicas []*ReplicaConfig `yaml:"replicas"`
}

// ReplicaConfig is where a database is replicated: a directory (type file) or
// an S3-compatible bucket (type s3). S3 credentials come from the environment
// (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), never from this file.
type ReplicaConfig struct {
	Type string `yaml:"type"`
	// Path is the directory of a file replica, or the key prefix in a bucket.
	Path           string         `yaml:"path"`
	Bucket         string         `yaml:"bucket"`
	Endpoint       string         `yaml:"endpoint"`
	Region         string         `yaml:"region"`
	ForcePathStyle *bool          `yaml:"force-path-style"`
	SyncInterval   *time.Duration `yaml:"sync-interval"`
}

// replica returns the entry's replica, or nil.
func (d *DBConfig) replica() *ReplicaConfig {
	if d.Replica != nil {
		return d.Replica
	}
	if len(d.Replicas) == 1 {
		return d.Replicas[0]
	}
	return nil
}

// kind is the replica type; Litestream treats an empty type as file.
func (r *ReplicaConfig) kind() string {
	if r.Type == "" {
		return "file"
	}
	return r.Type
}

// String describes the replica without credentials, for logs and summaries.
func (r *ReplicaConfig) String() string {
	switch r.kind() {
	case "s3":
		s := "s3://" + r.Bucket
		if p := strings.Trim(r.Path, "/"); p != "" {
			s += "/" + p
		}
		if r.Endpoint != "" {
			s += " at " + r.Endpoint
		}
		return s
	default:
		p, err := expandPath(r.Path)
		if err != nil {
			p = r.Path
		}
		return "file://" + p
	}
}

// LoadConfig reads litestream.yml from path, expanding $VAR and ${VAR}
// with expand (admit's configuration gives it the environment's values)
// as the official CLI does; a nil expand expands every variable to "". A missing file is not an error: the
// returned Config has Exists false and names no replica. An unknown key, a
// bad value or a setting admit cannot honour is an error naming the file,
// line and key.
func LoadConfig(path string, expand func(string) string) (*Config, error) {
	c := &Config{File: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	c.Exists = true
	b = []byte(os.Expand(string(b), func(k string) string {
		if k == "PID" {
			return strconv.Itoa(os.Getpid())
		}
		if expand == nil {
			return ""
		}
		return expand(k)
	}))
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(path, err)
	}
	c.File, c.Exists = path, true
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// sections names each struct for error messages.
var sections = map[string]string{
	"Config":          "the top level",
	"DBConfig":        "a dbs entry",
	"ReplicaConfig":   "a replica",
	"SnapshotConfig":  "snapshot",
	"LevelConfig":     "a levels entry",
	"RetentionConfig": "retention",
}

// accepted lists the keys admit reads in each section.
var accepted = map[string]string{
	"Config":          "dbs, snapshot, levels, l0-retention, l0-retention-check-interval, retention",
	"DBConfig":        "path, replica (or a one-element replicas list)",
	"ReplicaConfig":   "type, path, bucket, endpoint, region, force-path-style, sync-interval",
	"SnapshotConfig":  "interval, retention",
	"LevelConfig":     "interval",
	"RetentionConfig": "enabled",
}

var unknownField = regexp.MustCompile(`^line (\d+): field (.+) not found in type \S*\.(\w+)$`)

// yamlError rewrites the YAML library's errors into messages that name the
// file, the line and, for an unknown key, what is accepted there.
func yamlError(path string, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("%s: %w", path, err)
	}
	msgs := make([]string, 0, len(te.Errors))
	for _, e := range te.Errors {
		m := unknownField.FindStringSubmatch(e)
		if m == nil {
			msg := fmt.Sprintf("%s: %s", path, e)
			if strings.Contains(e, "into time.Duration") {
				msg += " (write durations with a unit, such as 24h or 30s)"
			}
			msgs = append(msgs, msg)
			continue
		}
		line, key, typ := m[1], m[2], m[3]
		msg := fmt.Sprintf("%s:%s: unknown key %q in %s (admit reads: %s)", path, line, key, sections[typ], accepted[typ])
		switch key {
		case "access-key-id", "secret-access-key":
			msg += "; put S3 credentials in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), not in the file"
		}
		msgs = append(msgs, msg)
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// validate rejects what admit cannot honour, with the official key names.
func (c *Config) validate() error {
	if len(c.DBs) > 1 {
		return fmt.Errorf("dbs lists %d databases: admit's litestream.yml names exactly one, admit's own", len(c.DBs))
	}
	positive := func(name string, d *time.Duration) error {
		if d != nil && *d <= 0 {
			return fmt.Errorf("%s must be a positive duration such as 24h, not %s", name, *d)
		}
		return nil
	}
	if err := errors.Join(
		positive("snapshot.interval", c.Snapshot.Interval),
		positive("snapshot.retention", c.Snapshot.Retention),
		positive("l0-retention-check-interval", c.L0RetentionCheckInterval),
	); err != nil {
		return err
	}
	if c.L0Retention != nil && *c.L0Retention < 0 {
		return fmt.Errorf("l0-retention must not be negative, not %s", *c.L0Retention)
	}
	for i, l := range c.Levels {
		if l == nil || l.Interval <= 0 {
			return fmt.Errorf("levels[%d].interval must be a positive duration", i)
		}
	}
	if e := c.Retention.Enabled; e != nil && !*e {
		return errors.New("retention.enabled: false is not supported: admit states on its privacy page how long backups keep erased data, which needs Litestream to delete old backup files")
	}
	for i, d := range c.DBs {
		if d == nil || strings.TrimSpace(d.Path) == "" {
			return fmt.Errorf("dbs[%d].path is required", i)
		}
		if d.Replica != nil && len(d.Replicas) > 0 {
			return fmt.Errorf("dbs[%d]: set replica or replicas, not both", i)
		}
		if len(d.Replicas) > 1 {
			return fmt.Errorf("dbs[%d].replicas lists %d replicas: Litestream v0.5 replicates a database to one replica", i, len(d.Replicas))
		}
		r := d.replica()
		if r == nil {
			continue
		}
		where := fmt.Sprintf("dbs[%d].replica", i)
		if err := positive(where+".sync-interval", r.SyncInterval); err != nil {
			return err
		}
		switch r.kind() {
		case "file":
			if strings.TrimSpace(r.Path) == "" {
				return fmt.Errorf("%s.path is required for a file replica", where)
			}
			if r.Bucket != "" || r.Endpoint != "" || r.Region != "" || r.ForcePathStyle != nil {
				return fmt.Errorf("%s: bucket, endpoint, region and force-path-style are for type s3", where)
			}
		case "s3":
			if strings.TrimSpace(r.Bucket) == "" {
				return fmt.Errorf("%s.bucket is required for an s3 replica", where)
			}
		default:
			return fmt.Errorf("%s.type %q is not supported: admit replicates to type file or s3", where, r.Type)
		}
	}
	return nil
}

// ReplicaFor returns the replica configured for the database at dbPath, or
// nil when litestream.yml names none (replication off). It is an error for
// the file to name a replica for a different database: replication would
// then silently not cover admit's data.
func (c *Config) ReplicaFor(dbPath string) (*ReplicaConfig, error) {
	for _, d := range c.DBs {
		r := d.replica()
		if r == nil {
			continue
		}
		same, err := samePath(d.Path, dbPath)
		if err != nil {
			return nil, err
		}
		if !same {
			return nil, fmt.Errorf("%s: dbs path %q is not admit's database %q (ADMIT_DATA): point it at admit's database, relative to the working directory", c.File, d.Path, dbPath)
		}
		return r, nil
	}
	return nil, nil
}

// Replicated reports whether the file names a replica for any database.
func (c *Config) Replicated() bool {
	for _, d := range c.DBs {
		if d.replica() != nil {
			return true
		}
	}
	return false
}

func (c *Config) snapshotInterval() time.Duration {
	if c.Snapshot.Interval != nil {
		return *c.Snapshot.Interval
	}
	return DefaultSnapshotInterval
}

func (c *Config) snapshotRetention() time.Duration {
	if c.Snapshot.Retention != nil {
		return *c.Snapshot.Retention
	}
	return DefaultSnapshotRetention
}

func (c *Config) l0Retention() time.Duration {
	if c.L0Retention != nil {
		return *c.L0Retention
	}
	return DefaultL0Retention
}

func (c *Config) l0RetentionCheckInterval() time.Duration {
	if c.L0RetentionCheckInterval != nil {
		return *c.L0RetentionCheckInterval
	}
	return DefaultL0RetentionCheckInterval
}

// compactionLevels are L0 plus the configured (or default) levels.
func (c *Config) compactionLevels() litestream.CompactionLevels {
	levels := litestream.CompactionLevels{{Level: 0}}
	if len(c.Levels) == 0 {
		for _, l := range litestream.DefaultCompactionLevels[1:] {
			levels = append(levels, &litestream.CompactionLevel{Level: l.Level, Interval: l.Interval})
		}
		return levels
	}
	for i, l := range c.Levels {
		levels = append(levels, &litestream.CompactionLevel{Level: i + 1, Interval: l.Interval})
	}
	return levels
}

// BackupRetention is how long a row erased from the live database can still
// be read from the replica; 0 when no replica is configured. The privacy page
// adds it to the live-database retention ("count the copies").
//
// With snapshot interval I and snapshot retention R, Litestream v0.5 (as
// pinned) keeps erased bytes in the replica this long after the erasing
// transaction at time E:
//
//   - Snapshots are taken and expired by one monitor that runs every I. The
//     newest snapshot taken before E (at S ≤ E) holds the row. The first run
//     after E (≤ E+I) takes a snapshot S' that does not, and a snapshot is
//     deleted at the first run more than R after it was taken: S by E+R+I.
//   - Compacted files (levels 1..n) are deleted once they are older than the
//     newest deleted snapshot; those written between S and E go when S' is
//     deleted, at the first run more than R after S': by E+I+R+I.
//   - Level-0 files go once compacted into L1 and older than l0-retention,
//     checked every l0-retention-check-interval: by E + L1 interval +
//     l0-retention + check interval.
//
// So BackupRetention = max(R + 2·I, L1 + l0-retention + l0 check interval);
// with Litestream's defaults 24h + 2·24h = 72h. It assumes the database is
// written at least once after S' (Litestream only expires a snapshot that has
// a newer one); admit's own sweeper and signups write routinely. The local
// Litestream directory next to the database (.admit.db-litestream) does not
// keep erased bytes: Replicator.Erase removes them within seconds.
func (c *Config) BackupRetention() time.Duration {
	if !c.Replicated() {
		return 0
	}
	snapshots := c.snapshotRetention() + 2*c.snapshotInterval()
	levels := c.compactionLevels()
	l0 := c.l0Retention() + c.l0RetentionCheckInterval()
	if len(levels) > 1 {
		l0 += levels[1].Interval
	}
	return max(snapshots, l0)
}

// expandPath resolves p as the official CLI does: ~/ is the home
// directory, anything else is made absolute against the working directory.
func expandPath(p string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~"+string(os.PathSeparator)) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("expand %s: %w", p, err)
		}
		return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
	}
	return filepath.Abs(p)
}

// samePath reports whether a and b name the same file path once expanded.
func samePath(a, b string) (bool, error) {
	ea, err := expandPath(a)
	if err != nil {
		return false, err
	}
	eb, err := expandPath(b)
	if err != nil {
		return false, err
	}
	return ea == eb, nil
}
