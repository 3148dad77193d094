package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseScale_AscendingCountsInRange(t *testing.T) {
	got, err := parseScale("10000, 100000,1000000")
	if err != nil || len(got) != 3 || got[0] != 10000 || got[2] != 1000000 {
		t.Fatalf("parseScale: %v, %v", got, err)
	}
	for _, bad := range []string{"", "999", "2000001", "100000,10000", "10000,10000", "ten"} {
		if _, err := parseScale(bad); err == nil {
			t.Errorf("parseScale(%q) accepted", bad)
		}
	}
}

// The split keeps every entry, gives the largest program half and every
// other at most scaleProgramMax, over at least three programs.
func TestScaleSplit_HalfInTheLargestTheRestInCappedPrograms(t *testing.T) {
	for _, n := range []int{1000, 10000, 100001, 1000000, 2000000} {
		split := scaleSplit(n)
		sum := 0
		for i, k := range split {
			sum += k
			if i > 0 && (k > scaleProgramMax || k < 1) {
				t.Errorf("%d: program %d holds %d", n, i, k)
			}
		}
		if sum != n || split[0] != n/2 || len(split) < 3 {
			t.Errorf("%d: split %v", n, split)
		}
	}
	if got := scaleSplit(1000000); len(got) != 6 {
		t.Errorf("1M split over %d programs, want 6: %v", len(got), got)
	}
}

// Due entries are the declined and withdrawn ones among the oldest fifth:
// 1% of a program.
func TestScaleEntry_OnePercentDue(t *testing.T) {
	const n = 100000
	due, states := 0, map[string]int{}
	for i := range n {
		st, d := scaleEntry(i, n)
		states[st]++
		if d {
			due++
			if st != "declined" && st != "withdrawn" || i >= n/5 {
				t.Fatalf("entry %d (%s) due", i, st)
			}
		}
	}
	if due != n/100 {
		t.Errorf("%d due, want %d", due, n/100)
	}
	if states["waiting"] != 85000 || states["selected"] != 10000 {
		t.Errorf("state mix %v", states)
	}
}

func TestParseHolds_FromTheExposition(t *testing.T) {
	text := strings.Join([]string{
		`admit_store_write_lock_hold_seconds_bucket{le="0.025"} 90`,
		`admit_store_write_lock_hold_seconds_bucket{le="0.05"} 97`,
		`admit_store_write_lock_hold_seconds_bucket{le="0.1"} 100`,
		`admit_store_write_lock_hold_seconds_sum 1.5`,
		`admit_store_write_lock_hold_seconds_count 103`,
		`admit_store_write_lock_hold_max_seconds 0.125`,
		`admit_store_commit_seconds_bucket{le="0.05"} 99`,
		`admit_store_commit_seconds_count 101`,
		`admit_store_commit_max_seconds 0.075`,
	}, "\n")
	h, err := parseHolds(text)
	if err != nil {
		t.Fatal(err)
	}
	if want := (holds{Count: 103, Over: 6, Max: 125 * time.Millisecond, CommitOver: 2, CommitMax: 75 * time.Millisecond}); h != want {
		t.Errorf("holds %+v, want %+v", h, want)
	}
	if _, err := parseHolds("admit_store_write_lock_hold_seconds_count 3\n"); err == nil {
		t.Error("parseHolds accepted metrics without the bucket and gauge")
	}
}

func TestSweepLine_ReadsCountAndDurationAfterTheOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	old := `time=2026-12-01T03:00:00Z level=INFO msg="retention sweep erased entries" count=7 took=1ms` + "\n"
	now := `time=2026-12-01T03:01:00Z level=INFO msg="retention sweep erased entries" count=10000 took=1.234s` + "\n"
	if err := os.WriteFile(path, []byte(old+now), 0o600); err != nil {
		t.Fatal(err)
	}
	n, d, err := sweepLine(path, int64(len(old)))
	if err != nil || n != 10000 || d != 1234*time.Millisecond {
		t.Errorf("sweepLine: %d, %v, %v; want 10000, 1.234s", n, d, err)
	}
}

// The scale mode end to end at 10,000 entries against the real binary,
// with short loops: every row is there without errors, the sweep at start
// erased exactly the seeded due entries, the export has every entry of the
// largest program, the retirement finished (checkRetired) and the backup
// verified and restored. The figures mean nothing at this size and bounds.
func TestRunScale_TenThousandEntriesAgainstTheRealBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs admit")
	}
	cfg, err := parseFlags([]string{"-src", "../..", "-dir", t.TempDir(), "-scale", "10000",
		"-read-duration", "200ms", "-warmup", "0", "-owner-clients", "2", "-restarts", "2", "-timeout", "5m"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, progress bytes.Buffer
	if err := run(ctx, cfg, &out, &progress); err != nil {
		t.Fatalf("run: %v\nprogress:\n%s", err, progress.String())
	}
	report := out.String()
	due := 0
	for _, n := range scaleSplit(10000) {
		for i := range n {
			if _, d := scaleEntry(i, n); d {
				due++
			}
		}
	}
	for _, want := range []string{
		"| programs (largest) | 3 (5000) |",
		"| sweep at start: erased, time | " + strconv.Itoa(due) + " in ",
		"| CSV export of the largest: time, size | ",
		"| `admit backup verify`: time (CPU, peak RSS) | ",
		"| `admit restore`: time (CPU, peak RSS) | ",
		"Targets at 10k entries:",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if !strings.Contains(progress.String(), "5000 rows,") {
		t.Errorf("the export did not have the largest program's 5000 rows:\n%s", progress.String())
	}
	for _, name := range []string{"queue HTML first page", "queue HTML deep page", "queue API state=selected", "program page HTML", "program API"} {
		line := ""
		for _, l := range strings.Split(report, "\n") {
			if strings.HasPrefix(l, "| "+name+" |") {
				line = l
			}
		}
		if line == "" || strings.Contains(line, "errors") || strings.Contains(line, "–") {
			t.Errorf("%s: row %q, want a p95 without errors", name, line)
		}
	}
}

// Between two scrapes: the counts are the difference; the longest is the
// later gauge when it rose, else negated (at most that).
func TestSinceHolds_LongestOnlyWhenItRose(t *testing.T) {
	before := holds{Count: 10, Over: 1, Max: 80 * time.Millisecond, CommitOver: 1, CommitMax: 60 * time.Millisecond}
	rose := sinceHolds(holds{Count: 25, Over: 3, Max: 120 * time.Millisecond, CommitOver: 1, CommitMax: 60 * time.Millisecond}, before)
	if rose != (holds{Count: 15, Over: 2, Max: 120 * time.Millisecond, CommitOver: 0, CommitMax: -60 * time.Millisecond}) ||
		holdCell(rose) != "15, 120.00 ms, 2 (0, ≤ 60.00 ms)" {
		t.Errorf("rose: %+v, %q", rose, holdCell(rose))
	}
	flat := sinceHolds(holds{Count: 12, Over: 1, Max: 80 * time.Millisecond, CommitOver: 2, CommitMax: 70 * time.Millisecond}, before)
	if flat != (holds{Count: 2, Over: 0, Max: -80 * time.Millisecond, CommitOver: 1, CommitMax: 70 * time.Millisecond}) ||
		holdCell(flat) != "2, ≤ 80.00 ms, 0 (1, 70.00 ms)" {
		t.Errorf("flat: %+v, %q", flat, holdCell(flat))
	}
}

func TestSummarizeFsyncs_PercentilesLongestAndStalls(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 200; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond/2) // 0.5 ms … 100 ms
	}
	p := summarizeFsyncs(lat, 3*time.Second)
	if p.N != 200 || p.P50 != 50500*time.Microsecond || p.P99 != 99500*time.Microsecond || p.Max != 100*time.Millisecond || p.Over50ms != 100 || p.Length != 3*time.Second {
		t.Fatalf("%+v", p)
	}
	if z := summarizeFsyncs(nil, time.Second); z.N != 0 || z.Max != 0 {
		t.Fatalf("no fsyncs: %+v", z)
	}
}

func TestProbeFsync_MeasuresAndRemovesItsFile(t *testing.T) {
	dir := t.TempDir()
	p, err := probeFsync(dir, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if p.N == 0 || p.P50 <= 0 || p.P50 > p.P99 || p.P99 > p.Max {
		t.Fatalf("%+v", p)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("the probe left %d files", len(left))
	}
}
