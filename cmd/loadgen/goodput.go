package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The goodput scenario asks whether overload keeps accepted work flowing
// when clients do not back off. Each client sends JSON signups and, after
// a 503, sends the same signup again at once, ignoring Retry-After, as
// bots do. The levels (-goodput-levels, 32, 1,024, 2,048 and 4,096
// clients by default) run in one run against one admit, each on a fresh program, and
// are judged as ratios against the first level: goodput (accepted signups
// a second) and the accepted signups' p99, plus the refusals' p99 as
// admit's own request log times them (its handler's time, duration_ms,
// less held_ms: the time admit held the refusal on purpose, parked, which
// the report gives on its own).
// A level's clients all start at once and never stop until its end. Its
// first -warmup is the opening, when every client's first signup arrives
// together: the accepted p99 of the attempts begun then is shown, not
// judged. What is judged is the -duration after it, the overload's steady
// state: goodput is the 202s answered within it, whenever their attempt
// began, over its length. A refusal admit still holds at the level's end
// comes back after it (up to admit's longest hold later); that tail, in
// which no client sends again, is neither in the rate nor in the CPU. Each attempt's ID, which the admit started here logs as its
// request ID, says its level and whether it belongs to the opening, so
// admit's log is read for exactly the attempts measured.
// admit is pinned to one core and this program to another (taskset), so
// that refusals compete with accepted signups for admit's core alone and
// not with the load generator's.

// goodputLevels are the goodput scenario's default concurrency levels.
var goodputLevels = []int{32, 1024, 2048, 4096}

// Goodput targets, against the first level of the same run
// (docs/ARCHITECTURE.md, "Overload").
const (
	targetGoodputRatio    = 0.8
	targetAcceptedP99x    = 4.0
	targetRefusalInAdmit  = time.Millisecond
	signupRoute           = "POST /api/public/programs/{slug}/signups"
	goodputAttemptsPerMax = 100
)

// GoodputResult is one level of the goodput scenario.
type GoodputResult struct {
	Clients int
	// Elapsed is the measured window; InWindow the 202s answered within
	// it.
	Elapsed  time.Duration
	InWindow int
	// Accepted is the 202s' latencies (the accepted attempt's own),
	// Refused the 503s' as the clients saw them; both sorted.
	Accepted, Refused []time.Duration
	// RefusedInAdmit and AcceptedInAdmit are the 503s' and the 202s'
	// handler times from admit's request log, sorted; a refusal's is its
	// work, without the hold (RefusalHolds, the held_ms of each 503,
	// 0 when not held). The accepted ones are shown, not judged: what a
	// client waits beyond them is time before admit's handler ran or
	// after it answered.
	RefusedInAdmit, AcceptedInAdmit, RefusalHolds []time.Duration
	// Opening is the latencies of the accepted attempts begun in the
	// level's opening, sorted.
	Opening      []time.Duration
	Errors       int
	ErrorSamples []string
	// CPU is admit's CPU time over the level, PeakRSS its peak resident
	// set (0 when unknown): the held refusals' memory shows there.
	CPU     time.Duration
	PeakRSS int64
	LoadAvg string
	// attempts prefixes the IDs of the level's measured attempts.
	attempts string
}

// Goodput is accepted signups a second: the 202s answered within the
// measured window over its length.
func (g *GoodputResult) Goodput() float64 {
	if g.Elapsed <= 0 {
		return 0
	}
	return float64(g.InWindow) / g.Elapsed.Seconds()
}

// answered counts an answer that arrived at at, when it is a 202 within
// the measured window [from, to].
func (g *GoodputResult) answered(at time.Time, status int, from, to time.Time) {
	if status == http.StatusAccepted && !at.Before(from) && !at.After(to) {
		g.InWindow++
	}
}

// recordOpening adds the outcome of an attempt begun in the opening: its
// latency when accepted, an error as any error counts.
func (g *GoodputResult) recordOpening(lat time.Duration, status int, err error) {
	switch {
	case err == nil && status == http.StatusAccepted:
		g.Opening = append(g.Opening, lat)
	case err == nil && status == http.StatusServiceUnavailable:
	default:
		g.record(lat, status, err)
	}
}

// record adds one attempt's outcome.
func (g *GoodputResult) record(lat time.Duration, status int, err error) {
	switch {
	case err == nil && status == http.StatusAccepted:
		g.Accepted = append(g.Accepted, lat)
	case err == nil && status == http.StatusServiceUnavailable:
		g.Refused = append(g.Refused, lat)
	default:
		g.Errors++
		if err == nil {
			err = fmt.Errorf("status %d", status)
		}
		if len(g.ErrorSamples) < maxErrorSamples {
			g.ErrorSamples = append(g.ErrorSamples, err.Error())
		}
	}
}

// pinning says where admit and the load generator run.
type pinning struct {
	admitCPU, loadCPU int
	// note is why nothing was pinned, or "" when both were.
	note string
}

func (p pinning) String() string {
	if p.note != "" {
		return "not pinned: " + p.note
	}
	return fmt.Sprintf("admit pinned to CPU %d (GOMAXPROCS=1), the load generator to CPU %d (GOMAXPROCS=1), with taskset", p.admitCPU, p.loadCPU)
}

// choosePinning picks two CPUs this process may run on, or says why it
// cannot pin.
func choosePinning() pinning {
	if _, err := exec.LookPath("taskset"); err != nil {
		return pinning{note: "taskset not found"}
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return pinning{note: "affinity: " + err.Error()}
	}
	var cpus []int
	for i := 0; i < 1024 && len(cpus) < 2; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) < 2 {
		return pinning{note: "fewer than two CPUs"}
	}
	return pinning{admitCPU: cpus[0], loadCPU: cpus[1]}
}

// pinProcess moves every thread of pid to cpu.
func pinProcess(pid, cpu int) error {
	out, err := exec.Command("taskset", "-a", "-p", "-c", strconv.Itoa(cpu), strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("taskset %d: %w: %s", pid, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// pinSelf pins this process to the load generator's CPU, once.
func (r *runner) pinSelf() {
	if r.pin.note != "" {
		return
	}
	if err := pinProcess(os.Getpid(), r.pin.loadCPU); err != nil {
		r.pin.note = err.Error()
		return
	}
	runtime.GOMAXPROCS(1)
}

// goodputSignup sends one signup until it is answered otherwise than 503,
// recording each attempt: in res when it begins from measureFrom on, as
// the opening's otherwise.
func (r *runner) goodputSignup(ctx context.Context, p *program, res *GoodputResult, mu *sync.Mutex,
	measureFrom, deadline time.Time, attempts *atomic.Int64) {
	body := signupBody(p, fmt.Sprintf("goodput-%s-%d@example.test", r.runID, r.seq.Add(1)))
	limit := r.cfg.MaxRequests * goodputAttemptsPerMax
	for ctx.Err() == nil && time.Now().Before(deadline) && attempts.Add(1) <= limit {
		t0 := time.Now()
		measured := !t0.Before(measureFrom)
		n := r.seq.Add(1)
		id := fmt.Sprintf("%s%d", res.attempts, n)
		if !measured {
			id = fmt.Sprintf("%so%d", res.attempts, n)
		}
		resp, _, err := r.c.do(ctx, request{Method: http.MethodPost, Path: "/api/public/programs/" + p.Slug + "/signups",
			ContentType: "application/json", Body: body, Want: http.StatusAccepted, Attempt: id})
		lat := time.Since(t0)
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		if status == http.StatusServiceUnavailable {
			err = nil
		}
		if ctx.Err() != nil {
			return // cut by the level's end: neither answer nor error
		}
		mu.Lock()
		res.answered(t0.Add(lat), status, measureFrom, deadline)
		if measured {
			res.record(lat, status, err)
		} else {
			res.recordOpening(lat, status, err)
		}
		mu.Unlock()
		if status != http.StatusServiceUnavailable {
			return
		}
		// rule of the scenario: the same signup again at once.
	}
}

// goodputLevel runs clients clients against p without a pause: an
// opening of warmup, then dur measured. attempts prefixes the IDs of its
// measured attempts.
func (r *runner) goodputLevel(ctx context.Context, p *program, clients int, attempts string, warmup, dur time.Duration) *GoodputResult {
	res := &GoodputResult{Clients: clients, LoadAvg: loadAverage(), attempts: attempts}
	var (
		mu       sync.Mutex
		accepted atomic.Int64
		tries    atomic.Int64
		wg       sync.WaitGroup
		cpu0     time.Duration
		cpuErr   error
	)
	pid := r.srv.Pid()
	rssErr := resetPeakRSS(pid)
	begin := time.Now()
	measureFrom := begin.Add(warmup)
	deadline := measureFrom.Add(dur)
	opened := make(chan struct{})
	time.AfterFunc(warmup, func() {
		cpu0, cpuErr = processCPU(pid)
		close(opened)
	})
	// The window closes at the deadline, or earlier if every client has
	// stopped (-max-requests): its end and admit's CPU time then.
	var (
		closeOnce sync.Once
		end       time.Time
		cpu1      time.Duration
		cpu1Err   error
	)
	closeWindow := func() {
		closeOnce.Do(func() {
			end = time.Now()
			cpu1, cpu1Err = processCPU(pid)
		})
	}
	atDeadline := time.AfterFunc(time.Until(deadline), closeWindow)
	lctx, stop := context.WithDeadline(ctx, deadline.Add(10*time.Second))
	defer stop()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lctx.Err() == nil && time.Now().Before(deadline) && accepted.Add(1) <= r.cfg.MaxRequests {
				r.goodputSignup(lctx, p, res, &mu, measureFrom, deadline, &tries)
			}
		}()
	}
	wg.Wait()
	closeWindow()
	atDeadline.Stop()
	<-opened
	res.Elapsed = end.Sub(measureFrom)
	if cpu1Err == nil && cpuErr == nil {
		res.CPU = cpu1 - cpu0
	}
	if rss, err := readPeakRSS(pid); err == nil && rssErr == nil {
		res.PeakRSS = rss
	}
	slices.Sort(res.Accepted)
	slices.Sort(res.Refused)
	slices.Sort(res.Opening)
	return res
}

// goodput runs the levels in order, each on a fresh program.
func (r *runner) goodput(ctx context.Context) error {
	r.progress("goodput: %s", r.pin)
	for i, clients := range r.cfg.GoodputLevels {
		slug := fmt.Sprintf("bench-goodput-%d-%d-%s", i+1, clients, r.runID)
		p, err := createProgram(ctx, r.c, r.owner, slug)
		if err != nil {
			return fmt.Errorf("create program %s: %w", slug, err)
		}
		r.progress("goodput: %d clients retrying at once, %v measured after a %v opening", clients, r.cfg.Duration, r.cfg.Warmup)
		profDone := r.profileAsync(ctx, fmt.Sprintf("goodput %d", clients), r.cfg.Warmup+r.cfg.Duration)
		res := r.goodputLevel(ctx, p, clients, fmt.Sprintf("goodput%d-", i+1), r.cfg.Warmup, r.cfg.Duration)
		<-profDone
		r.progress("  accepted %d (%.0f/s, p99 %s ms; opening p99 %s ms), refused %d (client p99 %s ms), errors %d, load %s",
			res.InWindow, res.Goodput(), ms(percentile(res.Accepted, 99)), ms(percentile(res.Opening, 99)), len(res.Refused),
			ms(percentile(res.Refused, 99)), res.Errors, res.LoadAvg)
		for _, e := range res.ErrorSamples {
			r.progress("  error: %s", e)
		}
		r.goodputs = append(r.goodputs, res)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// readRefusalTimes fills each level's times in admit from admit's log at
// path (the server has stopped, so its log is complete).
func readRefusalTimes(path string, levels []*GoodputResult) error {
	for _, g := range levels {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		g.AcceptedInAdmit, g.RefusedInAdmit, g.RefusalHolds = signupTimes(f, g.attempts)
		f.Close()
	}
	return nil
}

// signupTimes reads the handler times of the JSON signup route's 202s
// and 503s from request log lines whose request ID is a measured
// attempt's of the level with prefix attempts (a number after it), and
// the 503s' holds, each sorted; a 503's time is its duration less its
// hold.
func signupTimes(log io.Reader, attempts string) (accepted, refused, holds []time.Duration) {
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l, ok := parseRequestLine(sc.Text())
		if !ok || l.route != signupRoute || !measuredAttempt(l.id, attempts) {
			continue
		}
		switch l.status {
		case http.StatusAccepted:
			accepted = append(accepted, l.took)
		case http.StatusServiceUnavailable:
			refused = append(refused, l.took-l.held)
			holds = append(holds, l.held)
		}
	}
	slices.Sort(accepted)
	slices.Sort(refused)
	slices.Sort(holds)
	return accepted, refused, holds
}

// measuredAttempt reports whether id is prefix followed by digits only:
// a measured attempt of that level, not one of its opening ("o" first)
// nor another level's.
func measuredAttempt(id, prefix string) bool {
	n, found := strings.CutPrefix(id, prefix)
	if !found || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// requestLine is what the goodput report reads from one line of admit's
// request log.
type requestLine struct {
	route, id  string
	status     int
	took, held time.Duration
}

// parseRequestLine reads admit's access-log line (slog's text format, msg
// "request"): the route, the request ID, the status, duration_ms and
// held_ms (0 when the line has none).
func parseRequestLine(line string) (requestLine, bool) {
	f := logFields(line)
	if f["msg"] != "request" {
		return requestLine{}, false
	}
	status, err := strconv.Atoi(f["status"])
	if err != nil {
		return requestLine{}, false
	}
	msec, err := strconv.ParseFloat(f["duration_ms"], 64)
	if err != nil {
		return requestLine{}, false
	}
	l := requestLine{route: f["route"], id: f["request_id"], status: status, took: time.Duration(msec * float64(time.Millisecond))}
	if h, found := f["held_ms"]; found {
		hm, err := strconv.ParseFloat(h, 64)
		if err != nil {
			return requestLine{}, false
		}
		l.held = time.Duration(hm * float64(time.Millisecond))
	}
	return l, true
}

// logFields splits a slog text line into its key=value pairs, unquoting
// quoted values.
func logFields(line string) map[string]string {
	out := map[string]string{}
	for line != "" {
		line = strings.TrimLeft(line, " ")
		k, rest, found := strings.Cut(line, "=")
		if !found {
			break
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				break
			}
			v, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else {
			v, rest, _ = strings.Cut(rest, " ")
		}
		out[k] = v
		line = rest
	}
	return out
}

// writeGoodputReport writes the levels' table and the targets judged.
func writeGoodputReport(w io.Writer, levels []*GoodputResult, pin pinning) {
	if len(levels) == 0 {
		return
	}
	fmt.Fprintln(w, "\n### Goodput under overload (JSON signups; refused clients retry at once, ignoring Retry-After)")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s.\n\n", pin)
	fmt.Fprintln(w, "| clients | accepted | accepted/s | × first | accepted p99 ms | × first | accepted p99 in admit ms | refused (503) | refusal p99 in admit ms | refusal hold p50, p99 ms | refusal p99 at the client ms | errors | admit CPU µs per accepted | opening's accepted p99 ms (not judged) | admit peak RSS MiB | load avg (1 min) |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	base := levels[0]
	for _, g := range levels {
		cpu := time.Duration(0)
		if g.InWindow > 0 {
			cpu = g.CPU / time.Duration(g.InWindow)
		}
		rss := "—"
		if g.PeakRSS > 0 {
			rss = mib(g.PeakRSS)
		}
		fmt.Fprintf(w, "| %d | %d | %.0f | %s | %s | %s | %s | %d | %s | %s, %s | %s | %d | %s | %s | %s | %s |\n", g.Clients, g.InWindow, g.Goodput(),
			ratioCell(g.Goodput(), base.Goodput()), ms(percentile(g.Accepted, 99)),
			ratioCell(float64(percentile(g.Accepted, 99)), float64(percentile(base.Accepted, 99))),
			ms(percentile(g.AcceptedInAdmit, 99)), len(g.Refused), ms(percentile(g.RefusedInAdmit, 99)),
			ms(percentile(g.RefusalHolds, 50)), ms(percentile(g.RefusalHolds, 99)), ms(percentile(g.Refused, 99)),
			g.Errors, us(cpu), openingCell(g.Opening), rss, g.LoadAvg)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | measured | met |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, c := range evaluateGoodput(levels) {
		v := "yes"
		if !c.Met {
			v = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", c.Target, c.Got, v)
	}
}

// openingCell is the opening's accepted p99, "—" when there was none.
func openingCell(opening []time.Duration) string {
	if len(opening) == 0 {
		return "—"
	}
	return ms(percentile(opening, 99))
}

// ratioCell is a/b with two decimals, "—" when b is 0.
func ratioCell(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// evaluateGoodput judges the levels against the first: no error at any
// level; at every later level goodput at least targetGoodputRatio of the
// first's and the accepted p99 at most targetAcceptedP99x the first's; at
// every level the refusals' p99 in admit's own log within
// targetRefusalInAdmit (met when nothing was refused).
func evaluateGoodput(levels []*GoodputResult) []check {
	if len(levels) == 0 {
		return nil
	}
	var out []check
	base := levels[0]
	baseP99 := percentile(base.Accepted, 99)
	for i, g := range levels {
		name := fmt.Sprintf("%d clients:", g.Clients)
		out = append(out, check{name + " errors = 0", fmt.Sprint(g.Errors), g.Errors == 0})
		if i > 0 {
			first := fmt.Sprintf("%d clients'", base.Clients)
			rate := check{Target: fmt.Sprintf("%s goodput ≥ %.1f × %s", name, targetGoodputRatio, first),
				Got: "no signup accepted at the first level"}
			if base.Goodput() > 0 {
				x := g.Goodput() / base.Goodput()
				rate.Got = fmt.Sprintf("%.2f × (%.0f/s against %.0f/s)", x, g.Goodput(), base.Goodput())
				rate.Met = x >= targetGoodputRatio
			}
			p99 := percentile(g.Accepted, 99)
			lat := check{Target: fmt.Sprintf("%s accepted p99 ≤ %.0f × %s", name, targetAcceptedP99x, first),
				Got: "no signup accepted"}
			if len(g.Accepted) > 0 && baseP99 > 0 {
				x := float64(p99) / float64(baseP99)
				lat.Got = fmt.Sprintf("%.2f × (%s ms against %s ms)", x, ms(p99), ms(baseP99))
				lat.Met = x <= targetAcceptedP99x
			}
			out = append(out, rate, lat)
		}
		refusal := check{Target: fmt.Sprintf("%s refusal p99 in admit, its hold excluded, ≤ %v", name, targetRefusalInAdmit), Got: "none refused", Met: true}
		switch {
		case len(g.RefusedInAdmit) > 0:
			p := percentile(g.RefusedInAdmit, 99)
			refusal.Got = fmt.Sprintf("%s ms (%d in the log)", ms(p), len(g.RefusedInAdmit))
			refusal.Met = p <= targetRefusalInAdmit
		case len(g.Refused) > 0:
			refusal.Got, refusal.Met = fmt.Sprintf("%d refused, none in admit's log", len(g.Refused)), false
		}
		out = append(out, refusal)
	}
	return out
}
