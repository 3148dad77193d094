package main

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

func TestMannWhitneyZ_KnownValues(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		name string
		a, b []time.Duration
		want float64
	}{
		// U = 0, mean 4.5, variance 3·3/12·7 = 5.25.
		{"a all smaller", ms(1, 2, 3), ms(4, 5, 6), -4.5 / math.Sqrt(5.25)},
		{"a all larger", ms(4, 5, 6), ms(1, 2, 3), 4.5 / math.Sqrt(5.25)},
		// Ranks 1, 2.5, 2.5, 4: U_a = (1+2.5) − 3 = 0.5, mean 2, variance
		// 2·2/12·(5 − 6/12) = 1.5.
		{"a tie", ms(1, 2), ms(2, 3), (0.5 - 2) / math.Sqrt(1.5)},
		{"identical samples", ms(5, 5, 5), ms(5, 5, 5), 0},
		{"empty", nil, ms(1), 0},
	} {
		if got := mannWhitneyZ(tc.a, tc.b); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: z=%v, want %v", tc.name, got, tc.want)
		}
	}
}

// The timing check against the real binary, with a few pairs: it lists
// addresses, interleaves new and listed signups on both routes and reports
// the rank statistic (too few pairs here for a verdict; docs/PERFORMANCE.md#signup-timing
// has the real runs).
func TestRun_TimingScenarioReportsTheRankStatistic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs admit")
	}
	cfg, err := parseFlags([]string{"-src", "../..", "-dir", t.TempDir(), "-scenarios", "timing",
		"-timing-pairs", "20", "-timeout", "5m"}, &bytes.Buffer{})
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
	for _, route := range []string{"JSON API", "HTML form"} {
		row := reportRow(report, route)
		if row == nil {
			t.Fatalf("no %s row in:\n%s", route, report)
		}
		if row[1] != "20" || row[9] != "0" || !strings.Contains(row[10], "too few pairs") {
			t.Fatalf("%s row %q: want 20 pairs, 0 errors, no verdict", route, row)
		}
	}
}
