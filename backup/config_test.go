package backup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeEnv is a getenv over a fixed map, so tests never read the real
// environment.
func fakeEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// mustWriteFile writes text to name in a new temp directory and returns its path.
func mustWriteFile(tb testing.TB, name, text string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// mustLoadConfig parses text as litestream.yml and fails the test on error.
func mustLoadConfig(tb testing.TB, text string, env map[string]string) *Config {
	tb.Helper()
	cfg, err := LoadConfig(mustWriteFile(tb, "litestream.yml", text), fakeEnv(env))
	if err != nil {
		tb.Fatalf("LoadConfig: %v", err)
	}
	return cfg
}

func TestLoadConfig_MissingFileMeansReplicationOff(t *testing.T) {
	p := filepath.Join(t.TempDir(), "litestream.yml")
	cfg, err := LoadConfig(p, fakeEnv(nil))
	if err != nil {
		t.Fatalf("LoadConfig of a missing file: %v", err)
	}
	if cfg.Exists {
		t.Error("Exists=true for a missing file")
	}
	rc, err := cfg.ReplicaFor("data/admit.db")
	if err != nil || rc != nil {
		t.Errorf("ReplicaFor=%v, %v; want nil, nil", rc, err)
	}
	if got := cfg.BackupRetention(); got != 0 {
		t.Errorf("BackupRetention=%s without a replica, want 0", got)
	}
}

func TestLoadConfig_ReadsTheOfficialKeys(t *testing.T) {
	cfg := mustLoadConfig(t, `
dbs:
  - path: data/admit.db
    replica:
      type: s3
      bucket: backups
      path: admit/prod
      endpoint: http://127.0.0.1:9000
      region: eu-central-1
      force-path-style: true
      sync-interval: 5s
snapshot:
  interval: 6h
  retention: 48h
levels:
  - interval: 10s
  - interval: 1m
l0-retention: 1m
l0-retention-check-interval: 5s
retention:
  enabled: true
`, nil)
	rc, err := cfg.ReplicaFor("data/admit.db")
	if err != nil {
		t.Fatalf("ReplicaFor: %v", err)
	}
	if rc == nil {
		t.Fatal("ReplicaFor=nil, want the s3 replica")
	}
	if got, want := rc.String(), "s3://backups/admit/prod at http://127.0.0.1:9000"; got != want {
		t.Errorf("replica=%q, want %q", got, want)
	}
	if rc.Region != "eu-central-1" || rc.ForcePathStyle == nil || !*rc.ForcePathStyle || *rc.SyncInterval != 5*time.Second {
		t.Errorf("replica settings not read: %+v", rc)
	}
	if got, want := cfg.snapshotInterval(), 6*time.Hour; got != want {
		t.Errorf("snapshot interval=%s, want %s", got, want)
	}
	if got, want := len(cfg.compactionLevels()), 3; got != want {
		t.Errorf("compaction levels=%d, want %d (L0 + 2)", got, want)
	}
}

func TestLoadConfig_ExpandsEnvironmentVariables(t *testing.T) {
	cfg := mustLoadConfig(t, `
dbs:
  - path: $ADMIT_DB
    replica:
      type: s3
      bucket: ${BUCKET}
`, map[string]string{"ADMIT_DB": "/srv/admit/admit.db", "BUCKET": "from-env"})
	rc, err := cfg.ReplicaFor("/srv/admit/admit.db")
	if err != nil || rc == nil {
		t.Fatalf("ReplicaFor=%v, %v", rc, err)
	}
	if got, want := rc.Bucket, "from-env"; got != want {
		t.Errorf("bucket=%q, want %q", got, want)
	}
}

func TestLoadConfig_UnknownKeyNamesTheKeyFileAndLine(t *testing.T) {
	tests := []struct {
		name, text, key, line, where string
	}{
		{"top level", "dbs: []\nsnapshots:\n  interval: 1h\n", `"snapshots"`, ":2:", "the top level"},
		{"database", "dbs:\n  - path: a.db\n    replica-path: /x\n", `"replica-path"`, ":3:", "a dbs entry"},
		{"replica", "dbs:\n  - path: a.db\n    replica:\n      type: file\n      path: /x\n      retention: 24h\n", `"retention"`, ":6:", "a replica"},
		{"snapshot", "snapshot:\n  keep: 3\n", `"keep"`, ":2:", "snapshot"},
		{"credentials", "dbs:\n  - path: a.db\n    replica:\n      type: s3\n      bucket: b\n      access-key-id: AKIA\n", `"access-key-id"`, ":6:", "AWS_ACCESS_KEY_ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustWriteFile(t, "litestream.yml", tt.text)
			_, err := LoadConfig(p, fakeEnv(nil))
			if err == nil {
				t.Fatal("LoadConfig accepted an unknown key")
			}
			for _, want := range []string{p, tt.key, tt.line, "unknown key", tt.where} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestLoadConfig_RejectsSettingsAdmitCannotHonour(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"retention off", "retention:\n  enabled: false\n", "retention.enabled"},
		{"two databases", "dbs:\n  - path: a.db\n  - path: b.db\n", "exactly one"},
		{"two replicas", "dbs:\n  - path: a.db\n    replicas:\n      - path: /x\n      - path: /y\n", "one replica"},
		{"replica and replicas", "dbs:\n  - path: a.db\n    replica:\n      path: /x\n    replicas:\n      - path: /y\n", "not both"},
		{"unsupported type", "dbs:\n  - path: a.db\n    replica:\n      type: gs\n      bucket: b\n", `type "gs"`},
		{"file without path", "dbs:\n  - path: a.db\n    replica:\n      type: file\n", "path is required"},
		{"s3 without bucket", "dbs:\n  - path: a.db\n    replica:\n      type: s3\n", "bucket is required"},
		{"database without path", "dbs:\n  - replica:\n      path: /x\n", "dbs[0].path"},
		{"zero snapshot interval", "snapshot:\n  interval: 0s\n", "snapshot.interval"},
		{"duration without unit", "snapshot:\n  retention: 24\n", "such as 24h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadConfig(mustWriteFile(t, "litestream.yml", tt.text), fakeEnv(nil))
			if err == nil {
				t.Fatal("LoadConfig accepted it")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func TestReplicaFor_ReplicaForAnotherDatabaseIsAnError(t *testing.T) {
	cfg := mustLoadConfig(t, "dbs:\n  - path: /srv/other.db\n    replica:\n      path: /backups\n", nil)
	_, err := cfg.ReplicaFor("/srv/admit/admit.db")
	if err == nil {
		t.Fatal("ReplicaFor accepted a replica configured for another database")
	}
	if !strings.Contains(err.Error(), "/srv/other.db") {
		t.Errorf("error %q does not name the configured path", err)
	}
}

func TestReplicaFor_NoReplicaMeansReplicationOff(t *testing.T) {
	// The shipped file names admit's database with its replica commented
	// out: admit starts without replication whatever ADMIT_DATA is.
	cfg := mustLoadConfig(t, "dbs:\n  - path: data/admit.db\n", nil)
	rc, err := cfg.ReplicaFor("/somewhere/else/admit.db")
	if err != nil || rc != nil {
		t.Errorf("ReplicaFor=%v, %v; want nil, nil", rc, err)
	}
}

func TestReplicaFor_RelativePathsResolveAgainstTheWorkingDirectory(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cfg := mustLoadConfig(t, "dbs:\n  - path: data/admit.db\n    replicas:\n      - path: backups\n", nil)
	rc, err := cfg.ReplicaFor(filepath.Join(wd, "data", "admit.db"))
	if err != nil || rc == nil {
		t.Fatalf("ReplicaFor=%v, %v; want the replica", rc, err)
	}
	if got, want := rc.String(), "file://"+filepath.Join(wd, "backups"); got != want {
		t.Errorf("replica=%q, want %q", got, want)
	}
}

func TestBackupRetention_FollowsTheSnapshotSettings(t *testing.T) {
	const replica = "dbs:\n  - path: a.db\n    replica:\n      path: /backups\n"
	tests := []struct {
		name, extra string
		want        time.Duration
	}{
		// R + 2·I with Litestream's defaults, 24h and 24h.
		{"defaults", "", 72 * time.Hour},
		{"shorter snapshots", "snapshot:\n  interval: 1h\n  retention: 12h\n", 14 * time.Hour},
		{"longer retention", "snapshot:\n  retention: 168h\n", 168*time.Hour + 48*time.Hour},
		// When level-0 files outlive the snapshots, they bound it.
		{"long l0 retention", "snapshot:\n  interval: 1m\n  retention: 1m\nl0-retention: 1h\nl0-retention-check-interval: 1m\nlevels:\n  - interval: 30s\n",
			time.Hour + time.Minute + 30*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoadConfig(t, replica+tt.extra, nil)
			if got := cfg.BackupRetention(); got != tt.want {
				t.Errorf("BackupRetention=%s, want %s", got, tt.want)
			}
		})
	}
	t.Run("no replica", func(t *testing.T) {
		cfg := mustLoadConfig(t, "dbs:\n  - path: a.db\nsnapshot:\n  retention: 1h\n", nil)
		if got := cfg.BackupRetention(); got != 0 {
			t.Errorf("BackupRetention=%s without a replica, want 0", got)
		}
	})
}
