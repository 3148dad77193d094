package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestReportEngines_RatiosAgainstSQLiteAndAgainstOneAdmit(t *testing.T) {
	at := func(n int, p99 time.Duration) *engineResult {
		// The slowest tenth at p99, so that it is the 99th percentile.
		r := &engineResult{elapsed: time.Second}
		for i := range n {
			d := time.Millisecond
			if i >= n-n/10 {
				d = p99
			}
			r.accepted = append(r.accepted, d)
		}
		return r
	}
	results := []*engineResult{at(1000, 40*time.Millisecond), at(500, 20*time.Millisecond), at(400, 30*time.Millisecond)}
	for i := range results {
		results[i].setup = engineSetups[i]
	}
	var out bytes.Buffer
	reportEngines(&out, enginesConfig{clients: 32, rounds: 1, duration: time.Second}, results, pinning{note: "test"}, "on")
	for _, want := range []string{
		"PostgreSQL / SQLite, one admit:   signups/s ×0.50, p99 ×0.50",
		"two admits / one, on PostgreSQL:  signups/s ×0.80, p99 ×1.50",
		"synchronous_commit=on",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestEnginesMain_RefusesToRunWithoutAPostgreSQLServer(t *testing.T) {
	t.Setenv("ADMIT_TEST_DATABASE_URL", "")
	var stdout, stderr bytes.Buffer
	if code := enginesMain(nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "-pg") {
		t.Fatalf("engines without -pg: exit %d, stderr %q; want 2 naming -pg", code, stderr.String())
	}
}
