package systemtest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"admit/backup"

	"github.com/google/uuid"
	"github.com/superfly/ltx"
)

// installation is one admit installation run from the built binary: its
// data directory and litestream.yml.
type installation struct {
	dir, data, db string
	env           []string
}

// mustInstallation writes a litestream.yml that replicates name's database
// to replica.
func mustInstallation(tb testing.TB, root, name, replica string) *installation {
	tb.Helper()
	in := &installation{dir: filepath.Join(root, name)}
	in.data = filepath.Join(in.dir, "data")
	in.db = filepath.Join(in.data, "admit.db")
	if err := os.MkdirAll(in.data, 0o700); err != nil {
		tb.Fatal(err)
	}
	in.setReplica(tb, replica)
	return in
}

// setReplica points the installation's litestream.yml at replica.
func (in *installation) setReplica(tb testing.TB, replica string) {
	tb.Helper()
	cfg := filepath.Join(in.dir, "litestream.yml")
	yml := fmt.Sprintf("dbs:\n  - path: %s\n    replica:\n      type: file\n      path: %s\n", in.db, replica)
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		tb.Fatal(err)
	}
	in.env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + in.dir, "TMPDIR=" + in.dir,
		"ADMIT_ADDR=127.0.0.1:0", "ADMIT_DATA=" + in.data, "ADMIT_LITESTREAM_CONFIG=" + cfg,
		"ADMIT_NETWORK_HOURLY_LIMIT=1000",
	}
}

// run runs the binary with args and the installation's environment, and
// returns its stdout, stderr and error; it ends it, by its own PID, after
// 30 seconds.
func (in *installation) run(tb testing.TB, bin string, args ...string) (string, string, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = in.dir, in.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// mustSignups posts n signups to srv and returns their emails, each
// answered 202.
func mustSignups(tb testing.TB, base, prefix string, n int) []string {
	tb.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	version := demoNoticeVersion(tb, c, base)
	var emails []string
	for i := range n {
		email := fmt.Sprintf("%s%d@example.test", prefix, i)
		if code, _ := postSignup(tb, c, base, uuid.NewString(), email, version); code != http.StatusAccepted {
			tb.Fatalf("signup %s: status=%d", email, code)
		}
		emails = append(emails, email)
	}
	return emails
}

// waitReady waits until /readyz answers 200.
func waitReady(tb testing.TB, base string, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, reason := readyz(tb, base)
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("/readyz=%d (%s) after %s", code, reason, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopAdmit stops p with SIGTERM and fails the test unless it exits cleanly.
func stopAdmit(tb testing.TB, p *process) {
	tb.Helper()
	if err := p.signal(tb, syscall.SIGTERM); err != nil {
		tb.Fatalf("admit after SIGTERM: %v\n%s", err, p.stderr)
	}
}

// mustHoldEvery fails unless the database at path holds every email of
// want and none of notWant.
func mustHoldEvery(tb testing.TB, path string, want, notWant []string) {
	tb.Helper()
	stored := storedEmails(tb, path)
	for _, e := range want {
		if !stored[e] {
			tb.Errorf("%s: acknowledged signup %s is missing", filepath.Base(path), e)
		}
	}
	for _, e := range notWant {
		if stored[e] {
			tb.Errorf("%s holds %s, another database's signup", filepath.Base(path), e)
		}
	}
}

// Two installations whose litestream.yml name the same replica: the first
// to replicate owns it, the second is refused at start with a message
// naming both databases, and a restore of the replica holds every signup
// the first acknowledged and none of the second's. The restored database
// is the replica's owner: a standby started on it replicates on into the
// same replica.
func TestReplicaOwner_ASecondInstallationOnOneReplicaIsRefusedAndTheFirstRestoresWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := MustBuildAdmit(t)
	root := t.TempDir()
	replica := filepath.Join(root, "replica")
	prod := mustInstallation(t, root, "prod", replica)
	// Staging has signups of its own, replicated to its own replica first.
	staging := mustInstallation(t, root, "staging", filepath.Join(root, "staging-replica"))
	s := MustStartAdmit(t, bin, staging.dir, staging.env)
	stagingEmails := mustSignups(t, s.URL, "staging", 3)
	stopAdmit(t, s)

	p := MustStartAdmit(t, bin, prod.dir, prod.env)
	waitReady(t, p.URL, 30*time.Second)
	acked := mustSignups(t, p.URL, "prod", 6)

	// Staging's litestream.yml now names production's replica by mistake.
	staging.setReplica(t, replica)
	stdout, stderr, err := staging.run(t, bin, "serve")
	if err == nil || strings.Contains(stdout, "listening on") {
		t.Fatalf("staging served on production's replica: err=%v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("staging on production's replica: %v, want a non-zero exit", err)
	}
	prodID, _ := backup.DatabaseIdentity(context.Background(), prod.db)
	stagingID, _ := backup.DatabaseIdentity(context.Background(), staging.db)
	if prodID == "" || stagingID == "" || prodID == stagingID {
		t.Fatalf("identities: production %q, staging %q", prodID, stagingID)
	}
	for _, want := range []string{"belongs to another database", "file://" + replica,
		"database " + prodID + " (" + prod.db, "database " + stagingID + " (" + staging.db, "docs/DEPLOY.md"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("staging's refusal does not say %q:\n%s", want, stderr)
		}
	}

	acked = append(acked, mustSignups(t, p.URL, "prodlater", 4)...)
	stopAdmit(t, p)
	out := filepath.Join(root, "restored.db")
	if _, stderr, err := prod.run(t, bin, "restore", "-o", out); err != nil {
		t.Fatalf("restore of production: %v\n%s", err, stderr)
	}
	mustHoldEvery(t, out, acked, stagingEmails)

	// A standby takes over: the production secrets, the restore, the start.
	standby := mustInstallation(t, root, "standby", replica)
	secrets, err := os.ReadFile(filepath.Join(prod.data, "secrets"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(standby.data, "secrets"), secrets, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := standby.run(t, bin, "restore", "-o", standby.db); err != nil {
		t.Fatalf("restore on the standby: %v\n%s", err, stderr)
	}
	sb := MustStartAdmit(t, bin, standby.dir, standby.env)
	waitReady(t, sb.URL, 30*time.Second)
	acked = append(acked, mustSignups(t, sb.URL, "standby", 3)...)
	stopAdmit(t, sb)
	if strings.Contains(sb.stderr.String(), "belongs to another database") {
		t.Errorf("the standby's restored database was refused:\n%s", sb.stderr)
	}
	out = filepath.Join(root, "restored-after-takeover.db")
	if _, stderr, err := standby.run(t, bin, "restore", "-o", out); err != nil {
		t.Fatalf("restore after the takeover: %v\n%s", err, stderr)
	}
	mustHoldEvery(t, out, acked, stagingEmails)
}

// A replica directory deleted under a running server: the replica check
// notices within a minute at its default interval, a fresh snapshot
// repairs it before /readyz is ready again, and a restore afterwards holds
// every acknowledged signup.
func TestServe_ADeletedReplicaIsNoticedWithinAMinuteAndRepairedBeforeReady(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the replica check at its default interval")
	}
	b := MustBackupEnv(t)
	b.Env["ADMIT_BACKUP_DRILL_INTERVAL"] = "off" // the replica check alone
	// Level 1 compacts every 2s. Once it holds a file, a compaction
	// continues from there and does not rewrite what was deleted: a
	// compaction into an empty level 1, right after the start, would copy
	// every transaction from Litestream's local files and mend the replica
	// by chance.
	yml := fmt.Sprintf("dbs:\n  - path: %s\n    replica:\n      type: file\n      path: %s\nlevels:\n  - interval: 2s\n", b.DBPath, b.ReplicaDir)
	if err := os.WriteFile(b.Env["ADMIT_LITESTREAM_CONFIG"], []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := MustRunServe(t, b.Env)
	waitReady(t, srv.URL, 30*time.Second)
	acked := mustSignups(t, srv.URL, "before", 4)
	waitForOutput(t, 10*time.Second, b.Env, "backup verify ok", "backup", "verify")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(b.ReplicaDir, "ltx", "1", "*.ltx")); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no level-1 file within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}

	if err := os.RemoveAll(b.ReplicaDir); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	acked = append(acked, mustSignups(t, srv.URL, "during", 2)...)
	waitForLog(t, srv, time.Minute, "the backup replica no longer holds a restorable backup")
	noticed := time.Since(deleted)
	if noticed > time.Minute {
		t.Errorf("noticed %s after the deletion, want within a minute", noticed.Round(time.Second))
	}
	t.Logf("noticed %s after the deletion", noticed.Round(time.Millisecond))
	waitForLog(t, srv, time.Minute, "backup replica repaired")
	waitReady(t, srv.URL, 30*time.Second)
	acked = append(acked, mustSignups(t, srv.URL, "after", 2)...)
	if err := srv.Stop(t); err != nil {
		t.Fatalf("serve: %v", err)
	}
	out := filepath.Join(t.TempDir(), "restored.db")
	mustRunCmd(t, b.Env, "restore", "-o", out)
	mustHoldEvery(t, out, acked, nil)
}

// One level-0 file of twelve missing from the replica: `admit restore`
// still restores the newest intact point, and says which file is missing,
// where it stopped and how far behind the replica's newest transaction
// that is; `admit backup verify` fails on it.
func TestRestoreCmd_AMissingL0FileIsNamedWithWhereTheRestoreStoppedAndHowFarBehind(t *testing.T) {
	b := MustBackupEnv(t)
	b.Env["ADMIT_BACKUP_DRILL_INTERVAL"] = "off"
	srv := MustRunServe(t, b.Env)
	waitReady(t, srv.URL, 30*time.Second)
	level0 := func() []string {
		m, err := filepath.Glob(filepath.Join(b.ReplicaDir, "ltx", "0", "*.ltx"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// Each signup reaches the replica in a file of its own.
	for i := range 12 {
		n := len(level0())
		mustSignups(t, srv.URL, fmt.Sprintf("gap%d-", i), 1)
		deadline := time.Now().Add(10 * time.Second)
		for len(level0()) <= n {
			if time.Now().After(deadline) {
				t.Fatalf("signup %d reached no new level-0 file within 10s", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := srv.Stop(t); err != nil {
		t.Fatalf("serve: %v", err)
	}
	files := level0()
	_, newest, err := ltx.ParseFilename(filepath.Base(files[len(files)-1]))
	if err != nil {
		t.Fatal(err)
	}
	lost := newest - 5
	// Every file holding that transaction, at any level, is gone.
	all, _ := filepath.Glob(filepath.Join(b.ReplicaDir, "ltx", "*", "*.ltx"))
	for _, p := range all {
		if lo, hi, err := ltx.ParseFilename(filepath.Base(p)); err == nil && lo <= lost && lost <= hi {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}

	out := mustRunCmd(t, b.Env, "restore", "-o", filepath.Join(t.TempDir(), "r.db"))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	first := regexp.MustCompile(fmt.Sprintf(`^restored \S+ from file://\S+ \(newest restorable, NOT the replica's newest: transaction %s, replicated \S+Z\): `, lost-1))
	gap := regexp.MustCompile(fmt.Sprintf(`^INCOMPLETE: the replica is missing ltx/0/%s \(transaction %s\), so the restore stopped at transaction %s; `+
		`the replica's newest transaction %s \(replicated \S+Z\) is 6 transactions( and \S+)? newer, and nothing after transaction %s is in the restored database$`,
		regexp.QuoteMeta(ltx.FormatFilename(lost, lost)), lost, lost-1, newest, lost-1))
	if len(lines) != 2 || !first.MatchString(lines[0]) || !gap.MatchString(lines[1]) {
		t.Fatalf("restore printed:\n%s\nwant a first line matching %s\nand a second matching %s", out, first, gap)
	}

	vout, err := runCmd(t, b.Env, "backup", "verify")
	if err == nil || !strings.Contains(vout, "backup verify FAILED") || !strings.Contains(vout, ltx.FormatFilename(lost, lost)) {
		t.Errorf("backup verify: %v\n%s\nwant a failure naming the missing file", err, vout)
	}
}
