package main

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestMain lets the test binary run as the shed probe, which the overload
// scenario starts as a process of its own from this same executable.
func TestMain(m *testing.M) {
	runShedProbeIfAsked()
	os.Exit(m.Run())
}

func TestPercentile_IsTheNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{
		{50, 50 * time.Millisecond},
		{95, 95 * time.Millisecond},
		{99, 99 * time.Millisecond},
		{99.5, 100 * time.Millisecond},
		{100, 100 * time.Millisecond},
		{0.1, 1 * time.Millisecond},
	} {
		if got := percentile(ds, c.p); got != c.want {
			t.Errorf("p%v=%v, want %v", c.p, got, c.want)
		}
	}
	small := []time.Duration{3, 7, 9}
	if got, want := percentile(small, 50), time.Duration(7); got != want {
		t.Errorf("p50 of 3 values=%v, want the middle one %v", got, want)
	}
	if got, want := percentile(small, 99), time.Duration(9); got != want {
		t.Errorf("p99 of 3 values=%v, want the largest %v", got, want)
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing=%v, want 0", got)
	}
}

func TestResult_ThroughputCountsEveryCompletedRequest(t *testing.T) {
	r := &Result{Elapsed: 2 * time.Second, Latencies: make([]time.Duration, 500), Errors: 5}
	if got, want := r.Throughput(), 250.0; got != want {
		t.Fatalf("throughput=%v, want %v", got, want)
	}
	if got := (&Result{}).Throughput(); got != 0 {
		t.Fatalf("throughput with no elapsed time=%v, want 0", got)
	}
}

func TestLoad_StopsAtMaxRequestsAndCountsErrors(t *testing.T) {
	var calls atomic.Int64
	seen := make(chan int64, 100)
	l := load{Clients: 4, Duration: time.Minute, MaxRequests: 37, RequestTimeout: time.Second}
	res := l.run(context.Background(), "bounded", func(_ context.Context, _ int, seq int64) error {
		calls.Add(1)
		seen <- seq
		if seq%10 == 0 {
			return errors.New("boom")
		}
		return nil
	})
	close(seen)
	if got, want := calls.Load(), int64(37); got != want {
		t.Fatalf("calls=%d, want %d", got, want)
	}
	if got, want := res.Requests(), 37; got != want {
		t.Fatalf("recorded=%d, want %d", got, want)
	}
	if got, want := res.Errors, 3; got != want {
		t.Fatalf("errors=%d, want %d (seq 10, 20, 30)", got, want)
	}
	if len(res.ErrorSamples) != 3 || res.ErrorSamples[0] != "boom" {
		t.Fatalf("error samples=%q", res.ErrorSamples)
	}
	var seqs []int64
	for s := range seen {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	if len(slices.Compact(seqs)) != 37 {
		t.Fatalf("sequence numbers repeat: %v", seqs)
	}
	if !slices.IsSorted(res.Latencies) {
		t.Fatal("latencies are not sorted")
	}
}

func TestLoad_StopsAtItsDuration(t *testing.T) {
	l := load{Clients: 2, Duration: 50 * time.Millisecond, MaxRequests: 1 << 40, RequestTimeout: time.Second}
	start := time.Now()
	res := l.run(context.Background(), "timed", func(context.Context, int, int64) error {
		time.Sleep(time.Millisecond)
		return nil
	})
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a 50ms load ran %v", took)
	}
	if res.Requests() == 0 || res.Errors != 0 {
		t.Fatalf("requests=%d errors=%d, want some and none", res.Requests(), res.Errors)
	}
}

func TestLoad_SharedSequenceNeverRepeatsAcrossRuns(t *testing.T) {
	var seq atomic.Int64
	var all []int64
	for range 2 {
		got := make(chan int64, 10)
		l := load{Clients: 1, Duration: time.Minute, MaxRequests: 5, RequestTimeout: time.Second, seq: &seq}
		l.run(context.Background(), "run", func(_ context.Context, _ int, s int64) error { got <- s; return nil })
		close(got)
		for s := range got {
			all = append(all, s)
		}
	}
	slices.Sort(all)
	if got := len(slices.Compact(all)); got != 10 {
		t.Fatalf("distinct sequence numbers=%d over two runs, want 10: a warm-up and its run would reuse addresses", got)
	}
}

func TestMixedKind_Is70NewAnd20DuplicateAnd10Invalid(t *testing.T) {
	counts := map[string]int{}
	for seq := int64(1); seq <= 1000; seq++ {
		counts[mixedKind(seq)]++
	}
	if counts["new"] != 700 || counts["duplicate"] != 200 || counts["invalid"] != 100 {
		t.Fatalf("mix=%v, want 700 new, 200 duplicate, 100 invalid", counts)
	}
}

func TestParseFlags_DefaultsRunEveryLoadScenarioWithModestBounds(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// Every scenario but the checks (timing, overload, goodput), which run when named.
	if want := slices.DeleteFunc(slices.Clone(allScenarios), func(s string) bool {
		return s == "timing" || s == "overload" || s == "goodput"
	}); !slices.Equal(c.Scenarios, want) {
		t.Fatalf("scenarios=%v, want %v", c.Scenarios, want)
	}
	if c.TimingPairs != 1000 {
		t.Fatalf("timing pairs=%d, want 1000", c.TimingPairs)
	}
	if c.Clients != 32 || c.Entries != 100000 || c.Duration != 10*time.Second || c.ReadDuration != 5*time.Second {
		t.Fatalf("defaults=%+v", c)
	}
	if c.MaxRequests > 95000 || c.Timeout > time.Hour {
		t.Fatalf("defaults are unbounded: %+v", c)
	}
}

func TestParseFlags_ScenariosRunInCanonicalOrderOnce(t *testing.T) {
	c, err := parseFlags([]string{"-scenarios", "private, signup,ceiling,signup"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ceiling", "signup", "private"}; !slices.Equal(c.Scenarios, want) {
		t.Fatalf("scenarios=%v, want %v", c.Scenarios, want)
	}
	if !c.wants("private") || c.wants("queue") {
		t.Fatalf("wants: private=%v queue=%v", c.wants("private"), c.wants("queue"))
	}
}

func TestParseFlags_RejectsOutOfBoundsValues(t *testing.T) {
	for _, args := range [][]string{
		{"-clients", "0"},
		{"-clients", "5000"},
		{"-duration", "10ms"},
		{"-duration", "2h"},
		{"-entries", "100001"},
		{"-max-requests", "100000"},
		{"-restarts", "0"},
		{"-warmup", "-1s"},
		{"-scenarios", "signup,everything"},
		{"-scenarios", ","},
		{"stray"},
		{"-no-such-flag"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted it, want an error", args)
		}
	}
}

func TestParseVmHWM_ReadsKilobytes(t *testing.T) {
	status := "Name:\tadmit\nVmPeak:\t 1300000 kB\nVmHWM:\t   45678 kB\nVmRSS:\t   40000 kB\n"
	got, err := parseVmHWM(status)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(45678 * 1024); got != want {
		t.Fatalf("VmHWM=%d, want %d", got, want)
	}
	for _, bad := range []string{"Name:\tx\n", "VmHWM:\t12 MB\n", "VmHWM:\tlots kB\n"} {
		if _, err := parseVmHWM(bad); err == nil {
			t.Errorf("parseVmHWM(%q) accepted it", bad)
		}
	}
}

func TestMachineInfo_ParsesCPUModelAndTheMountOfADir(t *testing.T) {
	if got, want := cpuModel("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t: x\n"), "Intel(R) Xeon(R) Processor"; got != want {
		t.Errorf("cpuModel=%q, want %q", got, want)
	}
	mounts := "/dev/vda / ext4 rw,relatime 0 0\ntmpfs /tmp tmpfs rw 0 0\ntmpfs /tmpx tmpfs rw 0 0\n"
	if got := mountOf(mounts, "/tmp/admit-loadgen-1"); !strings.HasPrefix(got, "tmpfs (tmpfs on /tmp,") {
		t.Errorf("mountOf /tmp/…=%q, want the /tmp tmpfs", got)
	}
	if got := mountOf(mounts, "/work/main"); !strings.HasPrefix(got, "/dev/vda (ext4 on /,") {
		t.Errorf("mountOf /work/main=%q, want the root file system", got)
	}
}

// sameLatency is n latencies of d, a sorted sample.
func sameLatency(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func TestEvaluate_ComparesEachTargetAndNamesMisses(t *testing.T) {
	ceil := &Result{Name: "ceiling: raw FULL txn", Elapsed: time.Second, Latencies: sameLatency(time.Millisecond, 1000)}
	results := []*Result{
		ceil,
		{Name: "a. signup JSON", Elapsed: time.Second, Latencies: sameLatency(10*time.Millisecond, 600), PeakRSS: 40 << 20},
		{Name: "c. queue HTML first page", Elapsed: time.Second, Latencies: sameLatency(20*time.Millisecond, 100), PeakRSS: 90 << 20},
		{Name: "d. private read API", Elapsed: time.Second, Latencies: sameLatency(time.Millisecond, 6000)},
	}
	met := map[string]bool{}
	for _, c := range evaluate(results, ceil, []time.Duration{50 * time.Millisecond, 250 * time.Millisecond}) {
		met[c.Target] = c.Met
	}
	for target, want := range map[string]bool{
		"a. signup JSON ≥ 50% of the raw FULL ceiling": true,
		"a. signup JSON p99 ≤ 25ms":                    true,
		"a. signup JSON errors = 0":                    true,
		"c. queue HTML first page p95 ≤ 15ms":          false,
		"d. private read API ≥ 5000/s":                 true,
		"peak RSS ≤ 80 MiB in every scenario":          false,
		"start to ready ≤ 200ms with the seeded queue": false,
	} {
		got, ok := met[target]
		if !ok {
			t.Errorf("no verdict for %q (have %v)", target, met)
		} else if got != want {
			t.Errorf("%q met=%v, want %v", target, got, want)
		}
	}
}

func TestParseStatCPU_AddsUserAndSystemTicks(t *testing.T) {
	// A real line's shape, with a command name holding a space and a ')'.
	stat := "4242 (ad min) S 1 4242 4242 0 -1 4194560 1200 0 0 0 250 75 0 0 20 0 9 0 123456 1000000 500 18446744073709551615"
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3250 * time.Millisecond; got != want {
		t.Fatalf("CPU=%v, want %v (250 + 75 ticks of 10 ms)", got, want)
	}
	for _, bad := range []string{"", "4242 (admit) S 1 2", "4242 (admit) S 1 4242 4242 0 -1 4194560 1200 0 0 0 x 75 0"} {
		if _, err := parseStatCPU(bad); err == nil {
			t.Errorf("parseStatCPU(%q) succeeded, want an error", bad)
		}
	}
}

func TestProcessCPU_ReadsThisProcess(t *testing.T) {
	before, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the process has used another 100 ms of CPU (a loaded
	// machine may give it less than the wall time).
	deadline := time.Now().Add(30 * time.Second)
	for {
		after, err := processCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after-before >= 100*time.Millisecond {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s of spinning moved the CPU time by %v, want 100 ms", after-before)
		}
		for x := 0; x < 1e6; x++ {
			_ = x * x
		}
	}
}

func TestParseFlags_SweepLevelsAndWriteQueue(t *testing.T) {
	c, err := parseFlags([]string{"-sweep", "8, 1024,64", "-write-queue", "300"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{8, 1024, 64}; !slices.Equal(c.Sweep, want) || c.WriteQueue != 300 {
		t.Fatalf("sweep=%v write queue=%d, want %v and 300", c.Sweep, c.WriteQueue, want)
	}
	if d, _ := parseFlags(nil, io.Discard); !slices.Equal(d.Sweep, []int{32, 64, 128, 256, 1024}) || d.WriteQueue != 0 {
		t.Fatalf("default sweep=%v write queue=%d", d.Sweep, d.WriteQueue)
	}
	for _, args := range [][]string{{"-sweep", "0"}, {"-sweep", "5000"}, {"-sweep", "x"}, {"-sweep", ","}, {"-write-queue", "-1"}} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted it, want an error", args)
		}
	}
}

func TestOverloadResult_SortsOutcomesAndCPUPerAccepted(t *testing.T) {
	var o OverloadResult
	o.record(overloadSample{lat: 3 * time.Millisecond})
	o.record(overloadSample{lat: 1 * time.Millisecond, shed: true, retry: time.Second})
	o.record(overloadSample{lat: 5 * time.Millisecond})
	o.record(overloadSample{lat: 2 * time.Millisecond, err: errors.New("status 500")})
	o.CPU, o.Elapsed = 10*time.Millisecond, time.Second
	if len(o.Accepted) != 2 || len(o.Shed) != 1 || o.Errors != 1 || len(o.ErrorSamples) != 1 {
		t.Fatalf("accepted %d, shed %d, errors %d: want 2, 1, 1", len(o.Accepted), len(o.Shed), o.Errors)
	}
	if got, want := o.CPUPerAccepted(), 5*time.Millisecond; got != want {
		t.Fatalf("CPU per accepted=%v, want %v", got, want)
	}
	if got := o.AcceptedRate(); got != 2 {
		t.Fatalf("accepted rate=%v, want 2", got)
	}
	// The shed probe's accepted signups cost the server too.
	o.Probe = &shedProbeResult{Answered: 3}
	if got, want := o.CPUPerAccepted(), 2*time.Millisecond; got != want {
		t.Fatalf("CPU per accepted with the probe's=%v, want %v", got, want)
	}
}

func TestEvaluateOverload_JudgesEveryLevelForErrorsAndTheBusiestForLatency(t *testing.T) {
	levels := []*OverloadResult{
		// Below 256 clients only errors are judged: a slow p99 is no miss.
		{Clients: 128, Accepted: sameLatency(300*time.Millisecond, 100), Errors: 1, Owner: sameLatency(time.Millisecond, 10)},
		// Every target met; the sweep's own refusals are slow, the probe's are not.
		{Clients: 256, Accepted: sameLatency(90*time.Millisecond, 100), Shed: sameLatency(40*time.Millisecond, 100),
			Owner: sameLatency(14*time.Millisecond, 10), Probe: &shedProbeResult{Shed: sameLatency(2*time.Millisecond, 10)}},
		// Every latency target missed; without the probe's refusals the
		// sweep's are judged.
		{Clients: 1024, Accepted: append(sameLatency(50*time.Millisecond, 98), sameLatency(150*time.Millisecond, 2)...),
			Shed: sameLatency(6*time.Millisecond, 100), Owner: sameLatency(16*time.Millisecond, 10), Probe: &shedProbeResult{}},
	}
	met := map[string]bool{}
	got := map[string]string{}
	for _, c := range evaluateOverload(levels) {
		met[c.Target], got[c.Target] = c.Met, c.Got
	}
	want := map[string]bool{
		"128 clients: errors = 0":             false,
		"256 clients: errors = 0":             true,
		"256 clients: accepted p99 ≤ 100ms":   true,
		"256 clients: refusal p99 ≤ 5ms":      true,
		"256 clients: owner page p95 ≤ 15ms":  true,
		"1024 clients: errors = 0":            true,
		"1024 clients: accepted p99 ≤ 100ms":  false,
		"1024 clients: refusal p99 ≤ 5ms":     false,
		"1024 clients: owner page p95 ≤ 15ms": false,
	}
	if len(met) != len(want) {
		t.Errorf("verdicts %v, want exactly %v", met, want)
	}
	for target, w := range want {
		if m, ok := met[target]; !ok {
			t.Errorf("no verdict for %q (have %v)", target, met)
		} else if m != w {
			t.Errorf("%q met=%v (%s), want %v", target, m, got[target], w)
		}
	}
	if g := got["256 clients: refusal p99 ≤ 5ms"]; !strings.Contains(g, "probe 2.00 ms (10)") || !strings.Contains(g, "sweep's clients 40.00 ms (100)") {
		t.Errorf("the 256 level's refusals read %q, want the probe's and the sweep's figures", g)
	}
	// A level with no refusal at all has nothing to judge.
	quiet := evaluateOverload([]*OverloadResult{{Clients: 256, Accepted: sameLatency(time.Millisecond, 10), Owner: sameLatency(time.Millisecond, 10)}})
	for _, c := range quiet {
		if !c.Met {
			t.Errorf("a quiet level missed %q (%s)", c.Target, c.Got)
		}
	}
}
