package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"admit/backup"

	"github.com/google/uuid"
	"github.com/superfly/ltx"
)

// erasureDeadline is how soon after the removal response the address must
// be gone from every file in the data directory.
const erasureDeadline = 5 * time.Second

// filesHolding lists the files under dir (recursively) whose bytes contain
// needle.
func filesHolding(tb testing.TB, dir string, needle []byte) []string {
	tb.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) { // removed while we walked
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if bytes.Contains(b, needle) || strings.HasSuffix(path, ".ltx") && ltxHolds(tb, path, b, needle) {
			rel, _ := filepath.Rel(dir, path)
			found = append(found, rel)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("walk %s: %v", dir, err)
	}
	return found
}

// ltxHolds reports whether a Litestream LTX file's pages, which it stores
// LZ4-compressed, contain needle once decoded.
func ltxHolds(tb testing.TB, path string, b, needle []byte) bool {
	tb.Helper()
	dec := ltx.NewDecoder(bytes.NewReader(b))
	if err := dec.DecodeHeader(); err != nil {
		// Being written right now: the next look sees it whole.
		return true
	}
	data := make([]byte, dec.Header().PageSize)
	for {
		var hdr ltx.PageHeader
		if err := dec.DecodePage(&hdr, data); err == io.EOF {
			return false
		} else if err != nil {
			return true // as above
		}
		if bytes.Contains(data, needle) {
			return true
		}
	}
}

// removeByToken posts the removal route and checks its answer.
func removeByToken(tb testing.TB, c *http.Client, base, token string) {
	tb.Helper()
	body, _ := json.Marshal(map[string]string{"token": token})
	resp, err := c.Post(base+"/api/public/removals", "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatalf("removal: %v", err)
	}
	resp.Body.Close()
	if got, want := resp.StatusCode, http.StatusOK; got != want {
		tb.Fatalf("removal status=%d, want %d", got, want)
	}
}

// assertErasedOnDisk signs up canary among other addresses through the
// running server, waits until the canary can be seen in the data directory
// (the check can see it), removes it by its token and then requires that no
// file under the data directory holds its bytes within erasureDeadline,
// while the other addresses stay.
//
// seenIn, when not empty, is a file or directory under dataDir that must
// hold the address too before it is removed (waiting for it up to 10s).
func assertErasedOnDisk(t *testing.T, base, dataDir, seenIn string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	version := demoNoticeVersion(t, c, base)
	canary := "canary-" + uuid.NewString()[:8] + "@example.test"
	kept := "kept-" + uuid.NewString()[:8] + "@example.test"
	var token string
	for i, email := range []string{kept, canary, "other1@example.test", "other2@example.test"} {
		code, r := postSignup(t, c, base, uuid.NewString(), email, version)
		if code != http.StatusAccepted || r.RemovalToken == "" {
			t.Fatalf("signup %d: status=%d token=%q", i, code, r.RemovalToken)
		}
		if email == canary {
			token = r.RemovalToken
		}
	}
	// Control: the check sees the address before it is erased.
	if got := filesHolding(t, dataDir, []byte(canary)); len(got) == 0 {
		t.Fatal("no file holds the address before removal: the check cannot see it")
	}
	if seenIn != "" {
		deadline := time.Now().Add(10 * time.Second)
		for len(filesHolding(t, filepath.Join(dataDir, seenIn), []byte(canary))) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the address did not reach %s within 10s", seenIn)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	removeByToken(t, c, base, token)
	removed := time.Now()
	var holding []string
	for {
		holding = filesHolding(t, dataDir, []byte(canary))
		if len(holding) == 0 {
			break
		}
		if time.Since(removed) > erasureDeadline {
			t.Fatalf("%s after the removal response the address is still in %s", erasureDeadline, strings.Join(holding, ", "))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the address left the data directory %s after the removal response", time.Since(removed).Round(time.Millisecond))
	// An address that was not removed is still stored.
	if got := filesHolding(t, dataDir, []byte(kept)); len(got) == 0 {
		t.Fatal("an address that was not removed is gone too")
	}
}

func TestErasure_RemovalLeavesNoCopyInTheDataDirectory(t *testing.T) {
	data := t.TempDir()
	srv := MustRunServe(t, map[string]string{"ADMIT_ADDR": "127.0.0.1:0", "ADMIT_DATA": data, "ADMIT_NETWORK_HOURLY_LIMIT": "1000"})
	assertErasedOnDisk(t, srv.URL, data, "")
	if err := srv.Stop(t); err != nil {
		t.Fatalf("serve: %v", err)
	}
}

func TestErasure_RemovalLeavesNoCopyInTheDataDirectoryWhileReplicating(t *testing.T) {
	b := MustBackupEnv(t)
	srv := MustRunServe(t, b.Env)
	data := filepath.Dir(b.DBPath)
	c := &http.Client{Timeout: 10 * time.Second}
	// Replication has shipped something, so Litestream's own files exist.
	version := demoNoticeVersion(t, c, srv.URL)
	for i := range 3 {
		if code, _ := postSignup(t, c, srv.URL, uuid.NewString(), fmt.Sprintf("early%d@example.test", i), version); code != http.StatusAccepted {
			t.Fatalf("signup %d: status=%d", i, code)
		}
	}
	waitForReplica(t, b.ReplicaDir)
	// Litestream's local copy of the changes it ships holds the address
	// before the removal; it must not hold it after.
	assertErasedOnDisk(t, srv.URL, data, ".admit.db-litestream")
	// Replication goes on after the local copies were pruned.
	if code, _ := postSignup(t, c, srv.URL, uuid.NewString(), "after@example.test", version); code != http.StatusAccepted {
		t.Fatalf("signup after the erasure: status=%d", code)
	}
	if err := srv.Stop(t); err != nil {
		t.Fatalf("serve: %v", err)
	}
	// The replica restores every row (the erased entry as a tombstone).
	out := filepath.Join(t.TempDir(), "restored.db")
	line := mustRunCmd(t, b.Env, "restore", "-o", out)
	if !strings.Contains(line, "integrity_check ok") {
		t.Fatalf("restore after erasure: %q", line)
	}
	restored, err := backup.TableRowCounts(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	live, err := backup.TableRowCounts(context.Background(), b.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(restored, live) {
		t.Fatalf("restored row counts %v, live %v", restored, live)
	}
	if got, want := live["entries"], int64(8); got != want {
		t.Fatalf("entries=%d, want %d", got, want)
	}
}

// waitForReplica waits until Litestream has written the replica directory.
func waitForReplica(tb testing.TB, dir string) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(dir); err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatal("nothing was replicated within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
