package systemtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"admit/backup"
	"admit/internal/testutil"

	"github.com/google/uuid"
)

// MustMountTmpfs mounts a tmpfs of size bytes at a new directory and
// unmounts it at cleanup; it skips the test where mounting is not permitted.
func MustMountTmpfs(tb testing.TB, size string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		tb.Skipf("this test needs a small tmpfs to fill, and mounting one is not permitted here (run as root): %v: %s", err, out)
	}
	tb.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			tb.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// mustFillDisk writes a file in dir until the disk is full and returns it.
func mustFillDisk(tb testing.TB, dir string) string {
	tb.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				tb.Fatalf("fill the disk: %v", err)
			}
			return path
		}
	}
}

func TestReadyz_FullDiskIsNotReadyAndRecoversWhenSpaceIsFreed(t *testing.T) {
	disk := MustMountTmpfs(t, "2m")
	srv := MustRunServe(t, map[string]string{
		"ADMIT_ADDR":                 "127.0.0.1:0",
		"ADMIT_DATA":                 filepath.Join(disk, "data"),
		"ADMIT_NETWORK_HOURLY_LIMIT": "100000",
	})
	defer srv.Stop(t) // before the unmount
	c := &http.Client{Timeout: 10 * time.Second}
	if code, reason := readyz(t, srv.URL); code != http.StatusOK {
		t.Fatalf("/readyz=%d (%s) before the disk fills, want 200", code, reason)
	}
	version := demoNoticeVersion(t, c, srv.URL)
	filler := mustFillDisk(t, disk)

	// Signups fail once the WAL must grow; the WAL's existing room takes a few.
	failed := false
	for i := 0; i < 2000 && !failed; i++ {
		code, _, err := trySignup(c, srv.URL, uuid.NewString(), fmt.Sprintf("full%d@example.test", i), version)
		if err != nil {
			t.Fatal(err)
		}
		switch code {
		case http.StatusAccepted:
		case http.StatusServiceUnavailable:
			failed = true
		default:
			t.Fatalf("signup %d on a full disk: status=%d", i, code)
		}
	}
	if !failed {
		t.Fatal("no signup failed on a full disk")
	}
	if code, reason := readyz(t, srv.URL); code != http.StatusServiceUnavailable || reason != "database writes are failing" {
		t.Errorf("/readyz with writes failing=%d (%q), want 503 database writes are failing", code, reason)
	}
	if code, _ := get(t, c, srv.URL+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz=%d, want 200: the process is alive", code)
	}

	// Space is freed: ready again within a few seconds, without a real write.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	for {
		code, reason := readyz(t, srv.URL)
		if code == http.StatusOK {
			break
		}
		if time.Since(freed) > 3*time.Second {
			t.Fatalf("/readyz still %d (%s) 3s after space was freed", code, reason)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("ready again %s after space was freed", time.Since(freed).Round(time.Millisecond))
	if code, _, err := trySignup(c, srv.URL, uuid.NewString(), "after@example.test", version); err != nil || code != http.StatusAccepted {
		t.Errorf("signup after space was freed: status=%d, %v", code, err)
	}
}

func TestBackup_FullDiskThenFreedShipsTheWaitingChangesWithinSeconds(t *testing.T) {
	disk := MustMountTmpfs(t, "32m")
	b := MustBackupEnv(t)
	b.Env["ADMIT_DATA"] = filepath.Join(disk, "data")
	b.DBPath = filepath.Join(disk, "data", "admit.db")
	yml := fmt.Sprintf("dbs:\n  - path: %s\n    replica:\n      type: file\n      path: %s\n", b.DBPath, b.ReplicaDir)
	if err := os.WriteFile(b.Env["ADMIT_LITESTREAM_CONFIG"], []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := MustRunServe(t, b.Env)
	defer srv.Stop(t) // before the unmount
	c := &http.Client{Timeout: 10 * time.Second}
	version := demoNoticeVersion(t, c, srv.URL)
	// Enough signups that Litestream checkpoints and the WAL starts over:
	// later commits then reuse its room even on a full disk, while
	// Litestream's copies of them into its local files need new space.
	walPath := b.DBPath + "-wal"
	start := testutil.FileSize(t, walPath)
	for i := 0; ; i++ {
		if code, _, err := trySignup(c, srv.URL, uuid.NewString(), fmt.Sprintf("before%d@example.test", i), version); err != nil || code != http.StatusAccepted {
			t.Fatalf("signup %d: status=%d, %v", i, code, err)
		}
		if i > 50 && testutil.FileSize(t, walPath) > 2*start && i%50 == 0 {
			break
		}
		if i > 3000 {
			t.Fatal("the WAL did not grow")
		}
	}
	waitForOutput(t, 10*time.Second, b.Env, "backup verify ok", "backup", "verify")

	filler := mustFillDisk(t, disk)
	accepted := 0
	for i := 0; i < 20; i++ {
		code, _, err := trySignup(c, srv.URL, uuid.NewString(), fmt.Sprintf("full%d@example.test", i), version)
		if err != nil {
			t.Fatal(err)
		}
		if code == http.StatusAccepted {
			accepted++
		}
	}
	// Full a while, Litestream's own retries back off to seconds.
	time.Sleep(5 * time.Second)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	if code, _, err := trySignup(c, srv.URL, uuid.NewString(), "after@example.test", version); err != nil || code != http.StatusAccepted {
		t.Fatalf("signup after space was freed: status=%d, %v", code, err)
	}
	// Every committed signup reaches the replica within a few seconds.
	bc, err := backup.LoadConfig(b.Env["ADMIT_LITESTREAM_CONFIG"], fakeEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	for {
		res, err := backup.Verify(context.Background(), bc, b.DBPath, backup.VerifyOptions{Attempts: 1})
		if err == nil && res.OK() {
			break
		}
		if time.Since(freed) > 3*time.Second {
			t.Fatalf("the replica still differs from the live database 3s after space was freed: %v %v\n%s", res, err, srv.Stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d signups committed on the full disk; the replica matched the live database %s after space was freed",
		accepted, time.Since(freed).Round(time.Millisecond))
}
