package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The whole load run, every scenario, against the real binary built from
// this module, with tiny bounds: the tool still drives admit end to end
// (build, start, owner setup through the API, seeding, restarts, reads) and
// reports a row per scenario with requests and no errors. The figures mean
// nothing at this size; docs/PERFORMANCE.md has the real ones.
func TestRun_EveryScenarioAgainstTheRealBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs admit")
	}
	cfg, err := parseFlags([]string{"-src", "../..", "-dir", t.TempDir(),
		"-duration", "200ms", "-read-duration", "200ms", "-warmup", "0",
		"-clients", "4", "-owner-clients", "2", "-read-clients", "2",
		"-entries", "1000", "-restarts", "1", "-max-requests", "300", "-timeout", "5m"}, &bytes.Buffer{})
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
	for _, name := range []string{"ceiling: raw FULL txn", "a. signup JSON", "a. signup HTML form", "b. mixed 70/20/10",
		"c. queue HTML first page", "c. queue HTML deep page", "c. queue HTML state=selected",
		"c. queue API first page", "c. queue API deep page", "c. queue API state=selected",
		"c. queue API search exact address", "c. queue API search prefix (1,000 match)",
		"c. queue API search prefix (all match)", "c. queue HTML search prefix (1,000 match)",
		"d. private read API", "d. private read HTML"} {
		row := reportRow(report, name)
		if len(row) != 12 {
			t.Errorf("no row for %q in the report:\n%s", name, report)
			continue
		}
		// | scenario | clients | requests | req/s | p50 | p95 | p99 | max | errors | RSS | DB |
		requests, _ := strconv.Atoi(row[2])
		if requests < 1 || row[8] != "0" {
			t.Errorf("%s: requests %q, errors %q; want some requests and no error", name, row[2], row[8])
		}
		if !strings.Contains(row[10], " + ") {
			t.Errorf("%s: database size %q, want DB MiB + WAL MiB", name, row[10])
		}
		if rss, err := strconv.ParseFloat(row[9], 64); name != "ceiling: raw FULL txn" && (err != nil || rss <= 0) {
			t.Errorf("%s: peak RSS %q, want the server's peak in MiB", name, row[9])
		}
		if cpu, err := strconv.Atoi(row[11]); name != "ceiling: raw FULL txn" && (err != nil || cpu <= 0) {
			t.Errorf("%s: server CPU %q, want microseconds per request", name, row[11])
		}
	}
	for _, want := range []string{"Start to ready", "Server log lines at level ERROR: 0."} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}

// reportRow returns the cells of the report's table row for a scenario.
func reportRow(report, scenario string) []string {
	for _, line := range strings.Split(report, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) >= 11 && cells[0] == scenario {
			return cells
		}
	}
	return nil
}

// The overload sweep against the real binary with a tiny writer queue:
// at the higher level some signups are refused with 503 and Retry-After,
// which the clients honour, and nothing else goes wrong.
func TestRun_OverloadSweepShedsWithRetryAfterAndNoErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs admit")
	}
	// 64 twice: a level named again runs on a program of its own. A queue
	// of 3: the 2 clients and the shed probe fit.
	cfg, err := parseFlags([]string{"-src", "../..", "-dir", t.TempDir(), "-scenarios", "overload",
		"-sweep", "2,64,64", "-write-queue", "3", "-duration", "1500ms", "-warmup", "0", "-owner-clients", "1",
		"-max-requests", "5000", "-timeout", "5m"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, progress bytes.Buffer
	if err := run(ctx, cfg, &out, &progress); err != nil {
		t.Fatalf("run: %v\nprogress:\n%s", err, progress.String())
	}
	// rows keeps each level's last row; shed and probed count the clients'
	// and the probe's 503s over every row of a level: a paced refusal is
	// held up to a second, so on a busy machine one short level may end
	// before the probe's refusal comes back.
	rows, shed, probed := map[string][]string{}, map[string]int{}, map[string]int{}
	for _, line := range strings.Split(out.String(), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) == 12 {
			rows[cells[0]] = cells
			n, _ := strconv.Atoi(cells[5])
			shed[cells[0]] += n
			n, _ = strconv.Atoi(strings.Split(cells[7], ", ")[0])
			probed[cells[0]] += n
		}
	}
	// | clients | accepted | accepted/s | p50 | p99 | shed | shed p99 | probe | errors | owner p95 | CPU | load |
	for _, level := range []string{"2", "64"} {
		row := rows[level]
		if row == nil {
			t.Fatalf("no row for %s clients in the report:\n%s", level, out.String())
		}
		if accepted, _ := strconv.Atoi(row[1]); accepted < 1 || row[8] != "0" {
			t.Errorf("%s clients: accepted %q, errors %q; want some accepted and no error", level, row[1], row[8])
		}
		if owner, err := strconv.ParseFloat(row[9], 64); err != nil || owner <= 0 {
			t.Errorf("%s clients: owner page p95 %q, want a latency", level, row[9])
		}
	}
	if shed["64"] < 1 {
		t.Errorf("64 clients against a queue of 3 shed no signup, want some 503s\n%s", out.String())
	}
	// The probe, in a process of its own, was refused too: "count, p50, p99".
	if probed["64"] < 1 {
		t.Errorf("64 clients: the probe was never refused, want its 503s with their p50 and p99\n%s", out.String())
	}
	if probe := strings.Split(rows["64"][7], ", "); probe[0] != "0" && len(probe) != 3 {
		t.Errorf("64 clients: probe %q, want its 503s with their p50 and p99", rows["64"][7])
	}
	if shed, probe := rows["2"][5], rows["2"][7]; shed != "0" || probe != "0" {
		t.Errorf("2 clients and the probe against a queue of 3 shed %s and %s signups, want none", shed, probe)
	}
}
