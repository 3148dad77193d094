package systemtest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"admit/internal/replicatest"

	"github.com/google/uuid"
)

// waitForLog waits until the server's log contains want.
func waitForLog(tb testing.TB, srv *runningServer, timeout time.Duration, want string) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(srv.Stderr.String(), want) {
		if time.Now().After(deadline) {
			tb.Fatalf("no %q in the log within %s:\n%s", want, timeout, srv.Stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestServe_RestoreDrillCatchesADamagedReplicaAndTheSnapshotRepairsIt(t *testing.T) {
	b := MustBackupEnv(t)
	b.Env["ADMIT_BACKUP_DRILL_INTERVAL"] = "2s"
	srv := MustRunServe(t, b.Env)
	c := &http.Client{Timeout: 10 * time.Second}
	version := demoNoticeVersion(t, c, srv.URL)
	for i := range 3 {
		if code, _ := postSignup(t, c, srv.URL, uuid.NewString(), fmt.Sprintf("drill%d@example.test", i), version); code != http.StatusAccepted {
			t.Fatalf("signup %d: status=%d", i, code)
		}
	}
	// The drill after start, then the scheduled one that sees the signups.
	waitForLog(t, srv, 10*time.Second, "restore_drill_every=2s")
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(srv.Stderr.String(), `msg="restore drill passed"`) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than two passing drills within 10s:\n%s", srv.Stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, reason := readyz(t, srv.URL); code != http.StatusOK {
		t.Fatalf("/readyz=%d (%s) with a restorable backup", code, reason)
	}

	replicatest.DamageLatest(t, b.ReplicaDir, replicatest.LocalDir(b.DBPath))
	damaged := time.Now()
	for {
		code, reason := readyz(t, srv.URL)
		if code == http.StatusServiceUnavailable {
			if !strings.HasPrefix(reason, "backup not restorable since ") {
				t.Errorf("/readyz reason %q", reason)
			}
			break
		}
		if time.Since(damaged) > 10*time.Second {
			t.Fatalf("/readyz still %d 10s after the replica was damaged:\n%s", code, srv.Stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitForLog(t, srv, 5*time.Second, `level=ERROR msg="restore drill failed: the backup is not restorable; forced a fresh full snapshot"`)

	// The forced snapshot restores intact: the next drill passes.
	failed := time.Now()
	for {
		code, _ := readyz(t, srv.URL)
		if code == http.StatusOK {
			break
		}
		if time.Since(failed) > 10*time.Second {
			t.Fatalf("/readyz still %d 10s after the failed drill:\n%s", code, srv.Stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := srv.Stop(t); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if log := srv.Stderr.String(); strings.Contains(log, "@example.test") {
		t.Errorf("the log names an email:\n%s", log)
	}
	// The replica's newest state restores intact again.
	mustRunCmd(t, b.Env, "backup", "verify")
}

func TestRun_ServeRefusesABadDrillInterval(t *testing.T) {
	b := MustBackupEnv(t)
	b.Env["ADMIT_BACKUP_DRILL_INTERVAL"] = "hourly"
	_, err := runCmd(t, b.Env)
	if err == nil || !strings.Contains(err.Error(), "ADMIT_BACKUP_DRILL_INTERVAL") {
		t.Fatalf("serve with %s=hourly: err=%v, want the variable named", "ADMIT_BACKUP_DRILL_INTERVAL", err)
	}
}
