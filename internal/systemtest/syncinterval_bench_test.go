package systemtest

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// BenchmarkSyncInterval_CostOfAShorterInterval measures what a shorter
// sync-interval on the replica (docs/DEPLOY.md, "A cold standby") costs:
// two servers of the built binary side by side in one run, both pinned to
// the same CPU with taskset, one replicating with the default interval
// (1 s) and one with 250 ms, take the same signups at the same rate (ten
// a second, as the demo program takes 200 an hour); it
// reports, shorter over default, the ratio of the replica files written
// (each one a PUT to a bucket) and of the servers' CPU time.
//
//	go test ./internal/systemtest -run '^$' -bench SyncInterval -benchtime 1x
func BenchmarkSyncInterval_CostOfAShorterInterval(b *testing.B) {
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		b.Skip("needs taskset")
	}
	bin := MustBuildAdmit(b)
	const rate, seconds = 10, 19 // within the demo program's 200 signups an hour
	for range b.N {
		dir := b.TempDir()
		type server struct {
			interval string
			p        *process
			replica  string
		}
		var servers []*server
		for _, interval := range []string{"1s", "250ms"} {
			d := filepath.Join(dir, interval)
			s := &server{interval: interval, replica: filepath.Join(d, "replica")}
			yml := filepath.Join(d, "litestream.yml")
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
			text := fmt.Sprintf("dbs:\n  - path: %s\n    replica:\n      type: file\n      path: %s\n      sync-interval: %s\n",
				filepath.Join(d, "data", "admit.db"), s.replica, interval)
			if err := os.WriteFile(yml, []byte(text), 0o600); err != nil {
				b.Fatal(err)
			}
			env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + d, "TMPDIR=" + d, "ADMIT_ADDR=127.0.0.1:0",
				"ADMIT_DATA=" + filepath.Join(d, "data"), "ADMIT_LITESTREAM_CONFIG=" + yml,
				"ADMIT_NETWORK_HOURLY_LIMIT=1000000", "ADMIT_BACKUP_DRILL_INTERVAL=off"}
			s.p = mustStartPinned(b, taskset, bin, d, env)
			servers = append(servers, s)
		}
		cpu0 := make([]time.Duration, len(servers))
		files0 := make([]int, len(servers))
		for i, s := range servers {
			cpu0[i], files0[i] = processCPU(b, s.p.cmd.Process.Pid), replicaFiles(b, s.replica)
		}
		// The same signups, at the same moments, to both.
		c := &http.Client{Timeout: 10 * time.Second}
		version := demoNoticeVersion(b, c, servers[0].p.URL)
		tick := time.NewTicker(time.Second / rate)
		for i := range rate * seconds {
			<-tick.C
			var wg sync.WaitGroup
			for _, s := range servers {
				wg.Go(func() {
					if code, _, err := trySignup(c, s.p.URL, uuid.NewString(), fmt.Sprintf("s%d@example.org", i), version); err != nil || code != http.StatusAccepted {
						b.Errorf("signup to the %s server: %d %v", s.interval, code, err)
					}
				})
			}
			wg.Wait()
		}
		tick.Stop()
		// Both replicas catch up, then the counts are read.
		for _, s := range servers {
			waitCaughtUp(b, s.p.URL)
		}
		var cpu []time.Duration
		var files []int
		for i, s := range servers {
			cpu = append(cpu, processCPU(b, s.p.cmd.Process.Pid)-cpu0[i])
			files = append(files, replicaFiles(b, s.replica)-files0[i])
			b.Logf("sync-interval %s: %d replica files, %v CPU", s.interval, files[i], cpu[i])
		}
		b.ReportMetric(float64(files[1])/float64(files[0]), "replica-files-ratio")
		b.ReportMetric(cpu[1].Seconds()/cpu[0].Seconds(), "cpu-ratio")
	}
}

// mustStartPinned is MustStartAdmit with the server pinned to CPU 0.
func mustStartPinned(tb testing.TB, taskset, bin, dir string, env []string) *process {
	tb.Helper()
	wrapper := filepath.Join(dir, "admit-pinned")
	script := fmt.Sprintf("#!/bin/sh\nexec %s -c 0 %s \"$@\"\n", taskset, bin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		tb.Fatal(err)
	}
	return MustStartAdmit(tb, wrapper, dir, env)
}

// waitCaughtUp waits until /readyz says the replica holds every change.
func waitCaughtUp(tb testing.TB, base string) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _ := readyz(tb, base); code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s not ready within 30s", base)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replicaFiles counts the files under a file replica.
func replicaFiles(tb testing.TB, dir string) int {
	tb.Helper()
	n := 0
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(info.Name(), ".ltx") {
			n++
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// processCPU is the user and system CPU time of pid so far, from /proc.
func processCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}
