package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The overload scenario sweeps signup concurrency past what the writer can
// commit. Each client behaves as a well-made client would: a 202 is done;
// a 503 is a refusal for load, after which it waits what Retry-After says
// (with up to as much again of jitter, so refused clients do not return in
// one wave) before its next signup. Meanwhile a few owner clients load the
// queue page, whose latency must not suffer while signups saturate the
// writer.

// OverloadResult is one concurrency level of the sweep.
type OverloadResult struct {
	Clients int
	Elapsed time.Duration
	// Accepted and Shed are the latencies of the 202s and of the 503s
	// with Retry-After, each sorted ascending.
	Accepted, Shed []time.Duration
	// Errors counts anything else: other statuses, a 503 without
	// Retry-After, transport failures.
	Errors       int
	ErrorSamples []string
	// Owner is the owner queue page's latencies during the level.
	Owner []time.Duration
	// CPU is the server's CPU time (user + system) over the level.
	CPU time.Duration
	// LoadAvg is the machine's 1-minute load average when the level began.
	LoadAvg string
	// Probe is what the shed probe, a client in a process of its own,
	// measured over the level (nil when it did not run).
	Probe *shedProbeResult
}

// CPUPerAccepted is the server's CPU time per accepted signup, the shed
// probe's included.
func (o *OverloadResult) CPUPerAccepted() time.Duration {
	n := len(o.Accepted)
	if o.Probe != nil {
		n += o.Probe.Answered
	}
	if n == 0 {
		return 0
	}
	return o.CPU / time.Duration(n)
}

// AcceptedRate is accepted signups per second of the level.
func (o *OverloadResult) AcceptedRate() float64 {
	if o.Elapsed <= 0 {
		return 0
	}
	return float64(len(o.Accepted)) / o.Elapsed.Seconds()
}

// sweepLevels are the concurrency levels of the overload sweep.
var sweepLevels = []int{32, 64, 128, 256, 1024}

// maxRetryWait bounds how long a refused client honours Retry-After.
const maxRetryWait = 5 * time.Second

// overloadSample is one signup's outcome.
type overloadSample struct {
	lat   time.Duration
	shed  bool
	retry time.Duration
	err   error
}

// overloadSignup sends one JSON signup and classifies the answer.
func (r *runner) overloadSignup(ctx context.Context, p *program, seq int64) overloadSample {
	email := fmt.Sprintf("overload-%s-%d@example.test", r.runID, seq)
	t0 := time.Now()
	resp, _, err := r.c.do(ctx, request{Method: http.MethodPost, Path: "/api/public/programs/" + p.Slug + "/signups",
		ContentType: "application/json", Body: signupBody(p, email), Want: http.StatusAccepted})
	s := overloadSample{lat: time.Since(t0)}
	if err == nil {
		return s
	}
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		s.err = err
		return s
	}
	secs, perr := strconv.Atoi(resp.Header.Get("Retry-After"))
	if perr != nil || secs < 0 {
		s.err = fmt.Errorf("503 without a Retry-After: %w", err)
		return s
	}
	s.shed, s.retry = true, time.Duration(secs)*time.Second
	return s
}

// overloadLevel runs clients signup clients against p for dur (and at
// most the run's -max-requests signups), with the owner clients loading
// the queue page alongside, and the shed probe when probe is set.
func (r *runner) overloadLevel(ctx context.Context, p *program, clients int, dur time.Duration, probe bool) *OverloadResult {
	res := &OverloadResult{Clients: clients, LoadAvg: loadAverage()}
	var probed func() (*shedProbeResult, error)
	if probe {
		var err error
		if probed, err = r.startShedProbe(ctx, p, dur); err != nil {
			r.progress("  %v", err)
		}
	}
	cpu0, cpuErr := processCPU(r.srv.Pid())
	var (
		mu      sync.Mutex
		started atomic.Int64
		wg      sync.WaitGroup
	)
	begin := time.Now()
	deadline := begin.Add(dur)
	lctx, stop := context.WithDeadline(ctx, deadline.Add(10*time.Second))
	defer stop()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lctx.Err() == nil && time.Now().Before(deadline) && started.Add(1) <= r.cfg.MaxRequests {
				s := r.overloadSignup(lctx, p, r.seq.Add(1))
				mu.Lock()
				res.record(s)
				mu.Unlock()
				if s.shed {
					wait := min(s.retry+rand.N(s.retry+1), maxRetryWait, time.Until(deadline))
					sleepCtx(lctx, wait)
				}
			}
		}()
	}
	owner := r.ownerPageLoad(lctx, p, deadline)
	wg.Wait()
	res.Elapsed = time.Since(begin)
	res.Owner = <-owner
	if probed != nil {
		var err error
		if res.Probe, err = probed(); err != nil {
			r.progress("  %v", err)
		}
	}
	if cpu1, err := processCPU(r.srv.Pid()); err == nil && cpuErr == nil {
		res.CPU = cpu1 - cpu0
	}
	slices.Sort(res.Accepted)
	slices.Sort(res.Shed)
	return res
}

// record adds one outcome.
func (o *OverloadResult) record(s overloadSample) {
	switch {
	case s.err != nil:
		o.Errors++
		if len(o.ErrorSamples) < maxErrorSamples {
			o.ErrorSamples = append(o.ErrorSamples, s.err.Error())
		}
	case s.shed:
		o.Shed = append(o.Shed, s.lat)
	default:
		o.Accepted = append(o.Accepted, s.lat)
	}
}

// ownerPageLoad loads the program's queue page (HTML, first page) from the
// owner clients until deadline; the channel yields the sorted latencies.
func (r *runner) ownerPageLoad(ctx context.Context, p *program, deadline time.Time) <-chan []time.Duration {
	out := make(chan []time.Duration, 1)
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	for range r.cfg.OwnerClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t0 := time.Now()
				_, _, err := r.c.do(ctx, request{Method: http.MethodGet, Path: "/owner/programs/" + p.ID + "/entries",
					Session: r.owner, Want: http.StatusOK})
				d := time.Since(t0)
				if err != nil {
					r.progress("  owner page: %v", err)
					continue
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	go func() {
		wg.Wait()
		slices.Sort(lat)
		out <- lat
	}()
	return out
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// overload runs the sweep, one fresh program per level so no level meets
// a program's caps, and records each level.
func (r *runner) overload(ctx context.Context) error {
	for i, clients := range r.cfg.Sweep {
		// The level's position keeps a level named twice (-sweep 1024,1024)
		// on a program of its own.
		slug := fmt.Sprintf("bench-overload-%d-%d-%s", i+1, clients, r.runID)
		p, err := createProgram(ctx, r.c, r.owner, slug)
		if err != nil {
			return fmt.Errorf("create program %s: %w", slug, err)
		}
		if r.cfg.Warmup > 0 {
			r.overloadLevel(ctx, p, clients, r.cfg.Warmup, false)
		}
		r.progress("overload: %d clients, %v", clients, r.cfg.Duration)
		res := r.overloadLevel(ctx, p, clients, r.cfg.Duration, true)
		r.progress("  accepted %d (%.0f/s, p50 %s ms, p99 %s ms), shed %d (p99 %s ms; probe %s), errors %d, owner page p95 %s ms, CPU %s µs/signup, load %s",
			len(res.Accepted), res.AcceptedRate(), ms(percentile(res.Accepted, 50)), ms(percentile(res.Accepted, 99)),
			len(res.Shed), ms(percentile(res.Shed, 99)), probeCell(res.Probe), res.Errors, ms(percentile(res.Owner, 95)),
			us(res.CPUPerAccepted()), res.LoadAvg)
		for _, e := range res.ErrorSamples {
			r.progress("  error: %s", e)
		}
		r.overloads = append(r.overloads, res)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// writeOverloadReport writes the sweep's table.
func writeOverloadReport(w io.Writer, levels []*OverloadResult) {
	if len(levels) == 0 {
		return
	}
	fmt.Fprintln(w, "\n### Overload sweep (JSON signups; refused clients honour Retry-After)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| clients | accepted | accepted/s | p50 ms | p99 ms | shed (503) | shed p99 ms | probe: shed, p50, p99 ms | errors | owner page p95 ms | server CPU µs per accepted | load avg (1 min) |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, o := range levels {
		fmt.Fprintf(w, "| %d | %d | %.0f | %s | %s | %d | %s | %s | %d | %s | %s | %s |\n", o.Clients, len(o.Accepted),
			o.AcceptedRate(), ms(percentile(o.Accepted, 50)), ms(percentile(o.Accepted, 99)), len(o.Shed),
			ms(percentile(o.Shed, 99)), probeCell(o.Probe), o.Errors, ms(percentile(o.Owner, 95)), us(o.CPUPerAccepted()), o.LoadAvg)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The probe is one more client in a process of its own, one signup at a time every 5 ms: its 503s are what a refusal costs a client that is not short of CPU itself.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | measured | met |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, c := range evaluateOverload(levels) {
		v := "yes"
		if !c.Met {
			v = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", c.Target, c.Got, v)
	}
}

// Overload targets, for the levels of overloadJudgedFrom clients and more:
// what a saturated admit must still do (docs/ARCHITECTURE.md, "Overload").
const (
	overloadJudgedFrom = 256
	targetAcceptedP99  = 100 * time.Millisecond
	targetRefusalP99   = 5 * time.Millisecond
)

// evaluateOverload judges the sweep: no error at any level, and from
// overloadJudgedFrom clients on, accepted signups within targetAcceptedP99,
// refusals within targetRefusalP99 and the owner's page within its p95
// target. A refusal is judged as the probe saw it, a client in a process of
// its own; the sweep's own clients share the machine's cores with a
// thousand goroutines, so their figure is shown beside it. With no refusal
// at all there is nothing to judge, and the target is met.
func evaluateOverload(levels []*OverloadResult) []check {
	var out []check
	for _, o := range levels {
		name := fmt.Sprintf("%d clients:", o.Clients)
		out = append(out, check{name + " errors = 0", fmt.Sprint(o.Errors), o.Errors == 0})
		if o.Clients < overloadJudgedFrom {
			continue
		}
		p99 := percentile(o.Accepted, 99)
		out = append(out, check{fmt.Sprintf("%s accepted p99 ≤ %v", name, targetAcceptedP99),
			fmt.Sprintf("%s ms (%d accepted)", ms(p99), len(o.Accepted)), len(o.Accepted) > 0 && p99 <= targetAcceptedP99})
		refusals := o.Shed
		got := "none refused"
		if o.Probe != nil && len(o.Probe.Shed) > 0 {
			refusals = o.Probe.Shed
			got = fmt.Sprintf("probe %s ms (%d); sweep's clients %s ms (%d)", ms(percentile(o.Probe.Shed, 99)), len(o.Probe.Shed),
				ms(percentile(o.Shed, 99)), len(o.Shed))
		} else if len(o.Shed) > 0 {
			got = fmt.Sprintf("sweep's clients %s ms (%d); the probe was refused none", ms(percentile(o.Shed, 99)), len(o.Shed))
		}
		out = append(out, check{fmt.Sprintf("%s refusal p99 ≤ %v", name, targetRefusalP99), got,
			len(refusals) == 0 || percentile(refusals, 99) <= targetRefusalP99})
		owner := percentile(o.Owner, 95)
		out = append(out, check{fmt.Sprintf("%s owner page p95 ≤ %v", name, targetQueueP95),
			fmt.Sprintf("%s ms", ms(owner)), len(o.Owner) > 0 && owner <= targetQueueP95})
	}
	return out
}

// probeCell is the probe's "shed, p50, p99" for the report: "—" when it
// did not run, the count alone when nothing was shed.
func probeCell(p *shedProbeResult) string {
	switch {
	case p == nil:
		return "—"
	case len(p.Shed) == 0:
		return "0"
	}
	return fmt.Sprintf("%d, %s, %s", len(p.Shed), ms(percentile(p.Shed, 50)), ms(percentile(p.Shed, 99)))
}

// us formats a duration as whole microseconds.
func us(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }

// loadAverage is the 1-minute load average from /proc/loadavg, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's CPU
// times: 100 on every Linux architecture Go supports.
const clockTicks = 100

// processCPU is the user plus system CPU time the process has used, from
// /proc/PID/stat (all its threads).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime (fields 14 and 15) from a
// /proc/PID/stat line. The command name (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat: no command name")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime is field 14, stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the name", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
