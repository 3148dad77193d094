package systemtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"admit/backup"
	"admit/internal/replicatest"

	"github.com/google/uuid"
	"github.com/superfly/ltx"
)

// backupEnv is a serve environment with a temp data directory and a
// litestream.yml that replicates admit's database to a temp directory.
type backupEnv struct {
	Env        map[string]string
	DBPath     string
	ReplicaDir string
}

// MustBackupEnv writes the litestream.yml and returns the environment.
func MustBackupEnv(tb testing.TB) *backupEnv {
	tb.Helper()
	dir := tb.TempDir()
	data := filepath.Join(dir, "data")
	b := &backupEnv{DBPath: filepath.Join(data, "admit.db"), ReplicaDir: filepath.Join(dir, "replica")}
	cfgPath := filepath.Join(dir, "litestream.yml")
	yml := fmt.Sprintf("dbs:\n  - path: %s\n    replica:\n      type: file\n      path: %s\n", b.DBPath, b.ReplicaDir)
	if err := os.WriteFile(cfgPath, []byte(yml), 0o600); err != nil {
		tb.Fatal(err)
	}
	b.Env = map[string]string{
		"ADMIT_ADDR":                 "127.0.0.1:0",
		"ADMIT_DATA":                 data,
		"ADMIT_LITESTREAM_CONFIG":    cfgPath,
		"ADMIT_NETWORK_HOURLY_LIMIT": "1000",
	}
	return b
}

// readyz returns /readyz's status and reason.
func readyz(tb testing.TB, base string) (int, string) {
	tb.Helper()
	code, body := get(tb, http.DefaultClient, base+"/readyz")
	var v struct{ Reason string }
	_ = json.Unmarshal([]byte(body), &v)
	return code, v.Reason
}

func TestRun_ServeRefusesAnUnknownLitestreamKey(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "litestream.yml")
	if err := os.WriteFile(cfgPath, []byte("dbs:\n  - path: data/admit.db\n    replica:\n      type: file\n      path: /backups\n      keep: 7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	_, err := runCmd(t, map[string]string{"ADMIT_ADDR": "127.0.0.1:0", "ADMIT_DATA": data, "ADMIT_LITESTREAM_CONFIG": cfgPath})
	if err == nil {
		t.Fatal("serve started with an unknown litestream.yml key")
	}
	for _, want := range []string{cfgPath + ":6:", `unknown key "keep"`, "a replica"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "admit.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the database was created before the configuration was refused (stat: %v)", err)
	}
}

func TestRun_ServeWithoutLitestreamYMLSaysBackupIsOff(t *testing.T) {
	srv := MustRunServe(t, map[string]string{"ADMIT_ADDR": "127.0.0.1:0", "ADMIT_DATA": t.TempDir(),
		"ADMIT_LITESTREAM_CONFIG": filepath.Join(t.TempDir(), "absent.yml")})
	if code, reason := readyz(t, srv.URL); code != http.StatusOK {
		t.Errorf("/readyz=%d (%s), want 200", code, reason)
	}
	if err := srv.Stop(t); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if got := srv.Stderr.String(); !strings.Contains(got, "continuous backup is off") {
		t.Errorf("log does not say backup is off:\n%s", got)
	}
}

func TestShippedLitestreamYML_StartsWithoutAReplicaAndItsExamplesParse(t *testing.T) {
	shipped := filepath.Join(moduleRoot, "litestream.yml")
	b, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	env := fakeEnv(nil)
	cfg, err := backup.LoadConfig(shipped, env)
	if err != nil {
		t.Fatalf("the shipped litestream.yml does not load: %v", err)
	}
	if rc, err := cfg.ReplicaFor(filepath.Join("data", "admit.db")); err != nil || rc != nil {
		t.Errorf("shipped ReplicaFor=%v, %v; want replication off by default", rc, err)
	}
	if got := cfg.BackupRetention(); got != 0 {
		t.Errorf("shipped BackupRetention=%s, want 0 without a replica", got)
	}

	// Uncommenting either example gives a valid configuration.
	lines := strings.Split(string(b), "\n")
	for i, want := range []string{"file:///var/backups/admit", "s3://my-admit-backups/admit at https://s3.eu-central-1.example.com"} {
		text := uncommentExample(t, lines, i)
		p := filepath.Join(t.TempDir(), "litestream.yml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := backup.LoadConfig(p, env)
		if err != nil {
			t.Fatalf("example %d does not load: %v\n%s", i, err, text)
		}
		rc, err := c.ReplicaFor(filepath.Join("data", "admit.db"))
		if err != nil || rc == nil {
			t.Fatalf("example %d: ReplicaFor=%v, %v", i, rc, err)
		}
		if got := rc.String(); got != want {
			t.Errorf("example %d replica=%q, want %q", i, got, want)
		}
		if got, want := c.BackupRetention(), 72*time.Hour; got != want {
			t.Errorf("example %d BackupRetention=%s, want %s", i, got, want)
		}
	}
}

var commentedKey = regexp.MustCompile(`^(\s*)# ((replica:|  [a-z-]+:).*)$`)

// uncommentExample uncomments the n-th commented "replica:" block.
func uncommentExample(tb testing.TB, lines []string, n int) string {
	tb.Helper()
	out := append([]string(nil), lines...)
	seen := -1
	for i := 0; i < len(out); i++ {
		m := commentedKey.FindStringSubmatch(out[i])
		if m == nil || m[3] != "replica:" {
			continue
		}
		if seen++; seen != n {
			continue
		}
		for j := i; j < len(out); j++ {
			m := commentedKey.FindStringSubmatch(out[j])
			if m == nil || (j > i && m[3] == "replica:") {
				break
			}
			out[j] = m[1] + m[2]
		}
		return strings.Join(out, "\n")
	}
	tb.Fatalf("no commented replica example %d", n)
	return ""
}

func TestBackupCommands_ServeReplicatesRestoreAndVerifyCheckIt(t *testing.T) {
	b := MustBackupEnv(t)
	srv := MustRunServe(t, b.Env)
	c := &http.Client{Timeout: 10 * time.Second}
	version := demoNoticeVersion(t, c, srv.URL)
	for i := range 3 {
		if code, _ := postSignup(t, c, srv.URL, uuid.NewString(), fmt.Sprintf("backup%d@example.test", i), version); code != http.StatusAccepted {
			t.Fatalf("signup %d: status=%d", i, code)
		}
	}
	if code, reason := readyz(t, srv.URL); code != http.StatusOK {
		t.Errorf("/readyz with a healthy replica=%d (%s), want 200", code, reason)
	}
	// The drill runs against the live server's database.
	waitForOutput(t, 10*time.Second, b.Env, "backup verify ok", "backup", "verify")
	if err := srv.Stop(t); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if got := srv.Stderr.String(); !strings.Contains(got, "replicating the database") || !strings.Contains(got, b.ReplicaDir) {
		t.Errorf("log does not say where it replicates:\n%s", got)
	}

	out := filepath.Join(t.TempDir(), "restored.db")
	line := mustRunCmd(t, b.Env, "restore", "-o", out)
	summary := regexp.MustCompile(`^restored (\S+) from file://(\S+) \(latest: transaction [0-9a-f]{16}, replicated \S+Z\): (\d+) tables, (\d+) rows, integrity_check ok\n$`)
	m := summary.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("restore printed %q, want one summary line", line)
	}
	if m[1] != out || m[2] != b.ReplicaDir {
		t.Errorf("summary names %s from %s, want %s from %s", m[1], m[2], out, b.ReplicaDir)
	}
	// The restore is one file: no -wal or -shm beside it.
	if files, _ := filepath.Glob(out + "*"); !slices.Equal(files, []string{out}) {
		t.Errorf("restore left %q, want only %s", files, out)
	}
	counts, err := backup.TableRowCounts(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := counts["entries"], int64(3); got != want {
		t.Errorf("restored entries=%d, want %d", got, want)
	}

	if _, err := runCmd(t, b.Env, "restore", "-o", out); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("restore over the same file: err=%v, want already exists", err)
	}
	if _, err := runCmd(t, b.Env, "restore", "-o", out+"2", "-timestamp", "yesterday"); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
		t.Errorf("restore with a bad timestamp: err=%v, want an RFC 3339 message", err)
	}
	if _, err := runCmd(t, b.Env, "restore"); err == nil || !strings.Contains(err.Error(), "-o PATH") {
		t.Errorf("restore without -o: err=%v", err)
	}

	// A change made while nothing replicates is missing from the backup.
	mustRunCmd(t, b.Env, "owner", "add", "--workspace", "Unreplicated", "--user", "user_x")
	var stdout string
	stdout, err = runCmd(t, b.Env, "backup", "verify")
	if err == nil {
		t.Fatalf("backup verify passed with an unreplicated change: %s", stdout)
	}
	if !strings.HasPrefix(stdout, "backup verify FAILED: ") || !strings.Contains(stdout, "workspaces: 2 ≠ 1") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("backup verify printed %q, want one FAILED line naming workspaces 2 ≠ 1", stdout)
	}
}

// waitForOutput runs an admit command until its stdout contains want.
func waitForOutput(tb testing.TB, timeout time.Duration, env map[string]string, want string, args ...string) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, err := runCmd(tb, env, args...)
		if err == nil && strings.Contains(out, want) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("admit %s: %q, %v; want %q", strings.Join(args, " "), out, err, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestRun_ReadyzReportsReplicationLag(t *testing.T) {
	b := MustBackupEnv(t)
	b.Env["ADMIT_BACKUP_MAX_LAG"] = "500ms"
	srv := MustRunServe(t, b.Env)
	c := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for { // the first sync creates the replica directory
		if _, err := os.Stat(b.ReplicaDir); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing was replicated within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Replicated, the server is ready. On a busy machine a commit made
	// after the first sync (the start's own housekeeping) may wait for the
	// next one, a second later, past the 500 ms limit: ready means ready
	// once the replica holds everything, so it is polled for.
	deadline = time.Now().Add(10 * time.Second)
	for {
		code, reason := readyz(t, srv.URL)
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz=%d (%s) with a healthy replica, want 200", code, reason)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The replica breaks: its directory becomes a file.
	if err := os.Rename(b.ReplicaDir, b.ReplicaDir+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.ReplicaDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _ := postSignup(t, c, srv.URL, uuid.NewString(), "lag@example.test", demoNoticeVersion(t, c, srv.URL)); code != http.StatusAccepted {
		t.Fatalf("signup: status=%d", code)
	}
	deadline = time.Now().Add(15 * time.Second)
	for {
		code, reason := readyz(t, srv.URL)
		if code == http.StatusServiceUnavailable {
			if !strings.Contains(reason, "replication") || strings.Contains(reason, b.ReplicaDir) {
				t.Errorf("/readyz reason %q: want a replication message naming no path", reason)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d with the replica broken", code)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Broken a while longer, Litestream's own retries back off to seconds.
	time.Sleep(4 * time.Second)

	// Repaired, the change is shipped at once and the server is ready again.
	if err := os.Remove(b.ReplicaDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(b.ReplicaDir+".moved", b.ReplicaDir); err != nil {
		t.Fatal(err)
	}
	repaired := time.Now()
	for {
		code, reason := readyz(t, srv.URL)
		if code == http.StatusOK {
			break
		}
		if time.Since(repaired) > 2500*time.Millisecond {
			t.Fatalf("/readyz still %d (%s) 2.5s after the replica was repaired", code, reason)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("ready again %s after the replica was repaired", time.Since(repaired).Round(time.Millisecond))
	if err := srv.Stop(t); err != nil {
		t.Fatalf("serve: %v", err)
	}
}

func TestRestoreCmd_DamagedNewestLTXRestoresTheNewestIntactStateAndSaysWhatItSkipped(t *testing.T) {
	b := MustBackupEnv(t)
	srv := MustRunServe(t, b.Env)
	c := &http.Client{Timeout: 10 * time.Second}
	version := demoNoticeVersion(t, c, srv.URL)
	for i := range 4 {
		if code, _ := postSignup(t, c, srv.URL, uuid.NewString(), fmt.Sprintf("intact%d@example.test", i), version); code != http.StatusAccepted {
			t.Fatalf("signup %d: status=%d", i, code)
		}
		// Each signup reaches the replica in a transaction of its own.
		waitForOutput(t, 10*time.Second, b.Env, "backup verify ok", "backup", "verify")
	}
	if err := srv.Stop(t); err != nil {
		t.Fatalf("serve: %v", err)
	}
	damaged := replicatest.DamageLatest(t, b.ReplicaDir, replicatest.LocalDir(b.DBPath))
	minTXID, maxTXID, err := ltx.ParseFilename(filepath.Base(damaged))
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	out := mustRunCmd(t, b.Env, "restore", "-o", filepath.Join(dir, "good.db"))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := fmt.Sprintf(`^restored \S+ from file://\S+ \(newest intact: transaction %s, replicated \S+Z\): \d+ tables, \d+ rows, integrity_check ok$`, minTXID-1)
	if len(lines) != 2 || !regexp.MustCompile(want).MatchString(lines[0]) {
		t.Fatalf("restore printed %q, want a first line matching %s", out, want)
	}
	skipped := fmt.Sprintf(`^skipped the newest %d transactions \(up to %s, replicated \S+Z\): transaction %s fails its check: .+$`,
		maxTXID-(minTXID-1), maxTXID, maxTXID)
	if !regexp.MustCompile(skipped).MatchString(lines[1]) {
		t.Errorf("second line %q, want it to match %s", lines[1], skipped)
	}
	if err := backup.IntegrityCheck(context.Background(), filepath.Join(dir, "good.db")); err != nil {
		t.Error(err)
	}

	// -txid restores exactly that transaction, and refuses a damaged one.
	out = mustRunCmd(t, b.Env, "restore", "-txid", (minTXID - 1).String(), "-o", filepath.Join(dir, "txid.db"))
	if !strings.Contains(out, "(as requested: transaction "+(minTXID-1).String()) {
		t.Errorf("restore -txid printed %q", out)
	}
	if _, err := runCmd(t, b.Env, "restore", "-txid", maxTXID.String(), "-o", filepath.Join(dir, "bad.db")); err == nil || !strings.Contains(err.Error(), "failed its check") {
		t.Errorf("restore -txid of the damaged transaction: err=%v, want failed its check", err)
	}
	if _, err := runCmd(t, b.Env, "restore", "-txid", "12", "-o", filepath.Join(dir, "x.db")); err == nil || !strings.Contains(err.Error(), "16 hex digits") {
		t.Errorf("restore -txid 12: err=%v, want the format named", err)
	}
	if _, err := runCmd(t, b.Env, "restore", "-txid", maxTXID.String(), "-timestamp", "2025-01-02T15:04:05Z", "-o", filepath.Join(dir, "x.db")); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("restore with -txid and -timestamp: err=%v", err)
	}
}

// A level-0 file in the middle of a real replica's chain whose bytes were
// overwritten does not decode. `admit restore` without -txid steps back
// past it to the newest point that restores intact and names the file it
// skipped; `admit backup verify` restores the same point, says what does
// not restore and fails.
func TestRestoreCmd_AnL0FileThatDoesNotDecodeIsSteppedOverByRestoreAndVerify(t *testing.T) {
	b := MustBackupEnv(t)
	// Level 1 compacts every hour, not every 30 s: the level-0 files the
	// signups below write stay after the newest compaction however slowly
	// a busy machine runs them.
	cfg, err := os.OpenFile(b.Env["ADMIT_LITESTREAM_CONFIG"], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.WriteString("levels:\n  - interval: 1h\n"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Close(); err != nil {
		t.Fatal(err)
	}
	srv := MustRunServe(t, b.Env)
	c := &http.Client{Timeout: 10 * time.Second}
	version := demoNoticeVersion(t, c, srv.URL)
	for i := range 8 {
		before := len(replicatest.L0Files(t, b.ReplicaDir))
		if code, _ := postSignup(t, c, srv.URL, uuid.NewString(), fmt.Sprintf("intact%d@example.test", i), version); code != http.StatusAccepted {
			t.Fatalf("signup %d: status=%d", i, code)
		}
		// Each signup reaches the replica in a level-0 file of its own.
		for deadline := time.Now().Add(10 * time.Second); len(replicatest.L0Files(t, b.ReplicaDir)) == before; {
			if time.Now().After(deadline) {
				t.Fatalf("signup %d reached no level-0 file within 10s", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := srv.Stop(t); err != nil {
		t.Fatalf("serve: %v", err)
	}
	// A file in the middle of the level-0 files that the newest point's
	// restore reads after the newest snapshot or compaction.
	chain := replicatest.L0Chain(t, b.ReplicaDir)
	if len(chain) < 3 {
		t.Fatalf("%d level-0 files after the newest snapshot, want at least 3", len(chain))
	}
	damaged := chain[len(chain)/2]
	name := filepath.Base(damaged)
	minTXID, _, err := ltx.ParseFilename(name)
	if err != nil {
		t.Fatal(err)
	}
	_, newest, _ := ltx.ParseFilename(filepath.Base(chain[len(chain)-1]))
	replicatest.CorruptMiddle(t, damaged)

	dir := t.TempDir()
	out := mustRunCmd(t, b.Env, "restore", "-o", filepath.Join(dir, "good.db"))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := fmt.Sprintf(`^restored \S+ from file://\S+ \(newest intact: transaction %s, replicated \S+Z\): \d+ tables, \d+ rows, integrity_check ok$`, minTXID-1)
	if len(lines) != 2 || !regexp.MustCompile(want).MatchString(lines[0]) {
		t.Fatalf("restore printed %q, want a first line matching %s", out, want)
	}
	skipped := fmt.Sprintf(`^skipped the newest %d transactions \(up to %s, replicated \S+Z\): transaction %s does not decode: level 0 file %s: .+$`,
		newest-(minTXID-1), newest, newest, regexp.QuoteMeta(name))
	if !regexp.MustCompile(skipped).MatchString(lines[1]) {
		t.Errorf("second line %q, want it to match %s", lines[1], skipped)
	}
	if err := backup.IntegrityCheck(context.Background(), filepath.Join(dir, "good.db")); err != nil {
		t.Error(err)
	}
	// The same state as the point before the damaged file, asked for.
	mustRunCmd(t, b.Env, "restore", "-txid", (minTXID - 1).String(), "-o", filepath.Join(dir, "txid.db"))
	good, err := backup.TableRowCounts(context.Background(), filepath.Join(dir, "good.db"))
	if err != nil {
		t.Fatal(err)
	}
	asked, err := backup.TableRowCounts(context.Background(), filepath.Join(dir, "txid.db"))
	if err != nil {
		t.Fatal(err)
	}
	if diffs := asked.Diff(good); len(diffs) > 0 {
		t.Errorf("the fallback differs from restore -txid %s: %v", minTXID-1, diffs)
	}
	if _, err := runCmd(t, b.Env, "restore", "-txid", newest.String(), "-o", filepath.Join(dir, "bad.db")); err == nil ||
		!strings.Contains(err.Error(), "does not decode") || !strings.Contains(err.Error(), name) {
		t.Errorf("restore -txid %s past the damage: err=%v, want does not decode, naming %s", newest, err, name)
	}

	out, err = runCmd(t, b.Env, "backup", "verify")
	if err == nil || !strings.Contains(err.Error(), "do not restore intact") {
		t.Errorf("backup verify: err=%v, want it to fail for the damage", err)
	}
	for _, want := range []string{
		fmt.Sprintf("backup verify FAILED: the newest %d transactions of file://", newest-(minTXID-1)),
		"do not restore intact: transaction " + newest.String() + " does not decode: level 0 file " + name,
		"the newest intact state is transaction " + (minTXID - 1).String(),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("backup verify printed %q, want %q", out, want)
		}
	}
}
