package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// warmupMaxRequests bounds each unmeasured warm-up.
const warmupMaxRequests = 2000

// mixedPool is how many addresses the mixed scenario signs up beforehand,
// for its duplicates.
const mixedPool = 200

// runner holds what the scenarios share.
type runner struct {
	cfg     *Config
	work    string
	dataDir string
	logPath string
	bin     string
	srv     *server
	c       *client
	owner   *session
	seq     atomic.Int64
	// runID keeps this run's addresses apart from any earlier run's.
	runID   string
	log     io.Writer
	results []*Result
	// ceiling is the raw FULL-transaction ceiling, when it was measured.
	ceiling *Result
	// ready holds every start-to-ready measurement with the seeded database.
	ready []time.Duration
	// timings holds the signup timing comparisons.
	timings []*TimingResult
	// overloads holds the overload sweep's levels.
	overloads []*OverloadResult
	// goodputs holds the goodput scenario's levels; pin is where it runs
	// admit and this program.
	goodputs []*GoodputResult
	pin      pinning
}

// run executes the chosen scenarios and writes the report to stdout;
// progress goes to stderr.
func run(ctx context.Context, cfg *Config, stdout, stderr io.Writer) error {
	if cfg.Scale != nil {
		return runScale(ctx, cfg, stdout, stderr)
	}
	r := &runner{cfg: cfg, log: stderr, runID: uuid.NewString()[:8], pin: pinning{note: "the goodput scenario did not run"}}
	switch {
	case cfg.wants("goodput") && cfg.Pin:
		r.pin = choosePinning()
	case cfg.wants("goodput"):
		r.pin = pinning{note: "-pin=false"}
	}
	cleanup, err := r.prepareWork()
	if err != nil {
		return err
	}
	defer cleanup()
	if err := r.launch(ctx); err != nil {
		return err
	}
	defer func() {
		if r.srv != nil {
			r.srv.stop()
		}
	}()
	progs, reader, err := r.setup(ctx)
	if err != nil {
		return err
	}
	if err := r.scenarios(ctx, progs, reader); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("run cut short: %w", err)
	}
	r.report(stdout)
	return nil
}

// prepareWork makes the work directory (kept or removed by the returned
// cleanup), its data directory and the profile directory.
func (r *runner) prepareWork() (cleanup func(), err error) {
	if r.cfg.Dir != "" {
		r.work, err = filepath.Abs(r.cfg.Dir)
		if err == nil {
			err = os.MkdirAll(r.work, 0o700)
		}
	} else {
		r.work, err = os.MkdirTemp("", "admit-loadgen-")
	}
	if err != nil {
		return nil, err
	}
	cleanup = func() { os.RemoveAll(r.work) }
	if r.cfg.Keep {
		cleanup = func() { fmt.Fprintf(r.log, "work dir kept: %s\n", r.work) }
	}
	r.dataDir = filepath.Join(r.work, "data")
	r.logPath = filepath.Join(r.work, "server.log")
	if err := os.MkdirAll(r.dataDir, 0o700); err != nil {
		return cleanup, err
	}
	if r.cfg.PprofDir != "" {
		if err := os.MkdirAll(r.cfg.PprofDir, 0o755); err != nil {
			return cleanup, err
		}
	}
	return cleanup, nil
}

// launch builds admit (unless -bin names one), starts it and signs the
// owner in.
func (r *runner) launch(ctx context.Context) (err error) {
	r.bin = r.cfg.Bin
	if r.bin == "" {
		r.progress("building admit from %s", r.cfg.Src)
		if r.bin, err = buildAdmit(ctx, r.cfg.Src, r.work, r.log); err != nil {
			return err
		}
	}
	if err := r.start(ctx); err != nil {
		return err
	}
	r.pinSelf()
	r.c = newClient(r.srv.BaseURL, r.srv.DevSignInKey(), r.conns())
	if r.owner, err = r.c.signIn(ctx, ownerEmail); err != nil {
		return fmt.Errorf("owner sign-in: %w", err)
	}
	return nil
}

// setup creates each chosen scenario's program through the owner API, and
// the redeemed recipient the private reads need, before anything is
// measured.
func (r *runner) setup(ctx context.Context) (progs map[string]*program, reader *session, err error) {
	progs = map[string]*program{}
	for _, name := range []string{"signup", "form", "mixed", "queue", "private", "timing"} {
		if !r.cfg.wants(name) {
			continue
		}
		slug := "bench-" + name + "-" + r.runID
		if progs[name], err = createProgram(ctx, r.c, r.owner, slug); err != nil {
			return nil, nil, fmt.Errorf("create program %s: %w", slug, err)
		}
	}
	if r.cfg.wants("private") {
		r.progress("setting up a redeemed recipient")
		if reader, err = setupRecipient(ctx, r.c, r.owner, progs["private"], "reader-"+r.runID+"@example.test"); err != nil {
			return nil, nil, fmt.Errorf("recipient setup: %w", err)
		}
	}
	return progs, reader, nil
}

// scenarios runs the chosen scenarios in order.
func (r *runner) scenarios(ctx context.Context, progs map[string]*program, reader *session) error {
	cfg := r.cfg
	if cfg.wants("ceiling") {
		if err := r.measureCeiling(ctx); err != nil {
			return err
		}
	}
	if p := progs["signup"]; p != nil {
		r.measure(ctx, "a. signup JSON", cfg.Clients, cfg.Duration, r.jsonSignup(p, "json"))
	}
	if p := progs["form"]; p != nil {
		r.measure(ctx, "a. signup HTML form", cfg.Clients, cfg.Duration, r.formSignup(p))
	}
	if p := progs["mixed"]; p != nil {
		if err := r.measureMixed(ctx, p); err != nil {
			return err
		}
	}
	if p := progs["timing"]; p != nil {
		if err := r.timing(ctx, p, cfg.TimingPairs); err != nil {
			return fmt.Errorf("timing: %w", err)
		}
	}
	if p := progs["queue"]; p != nil {
		if err := r.queue(ctx, p); err != nil {
			return err
		}
	}
	if p := progs["private"]; p != nil {
		if err := r.measurePrivate(ctx, p, reader); err != nil {
			return err
		}
	}
	if cfg.wants("overload") {
		if err := r.overload(ctx); err != nil {
			return err
		}
	}
	if cfg.wants("goodput") {
		return r.goodput(ctx)
	}
	return nil
}

// measureCeiling measures raw single-row FULL transactions on the same disk.
func (r *runner) measureCeiling(ctx context.Context) error {
	r.progress("ceiling: raw BEGIN IMMEDIATE INSERT, synchronous=FULL, %v", r.cfg.Duration)
	path := filepath.Join(r.work, "ceiling.db")
	res, err := ceiling(ctx, path, r.cfg.Duration, r.cfg.MaxRequests)
	if err != nil {
		return fmt.Errorf("ceiling: %w", err)
	}
	res.DBBytes, res.WALBytes = fileSize(path), fileSize(path+"-wal")
	r.ceiling = res
	r.results = append(r.results, res)
	return nil
}

// measureMixed signs up the pool the duplicates come from, then measures
// the mixed public traffic.
func (r *runner) measureMixed(ctx context.Context, p *program) error {
	pool := make([]string, mixedPool)
	for i := range pool {
		pool[i] = fmt.Sprintf("pool-%s-%d@example.test", r.runID, i)
		if err := signup(ctx, r.c, p, pool[i]); err != nil {
			return fmt.Errorf("mixed pool: %w", err)
		}
	}
	r.measure(ctx, "b. mixed 70/20/10", r.cfg.Clients, r.cfg.Duration, r.mixed(p, pool))
	return nil
}

// measurePrivate checks the recipient can read, then measures private
// reads through the API and the page.
func (r *runner) measurePrivate(ctx context.Context, p *program, reader *session) error {
	base := "/api/me/early-access/" + p.Slug
	if _, _, err := r.c.do(ctx, request{Method: http.MethodGet, Path: base, Session: reader, Want: http.StatusOK}); err != nil {
		return fmt.Errorf("the recipient cannot read: %w", err)
	}
	r.measure(ctx, "d. private read API", r.cfg.ReadClients, r.cfg.ReadDuration, r.get(reader, base))
	r.measure(ctx, "d. private read HTML", r.cfg.ReadClients, r.cfg.ReadDuration, r.get(reader, "/early-access/"+p.Slug))
	return nil
}

// report stops the server (so its log is complete) and writes the report.
func (r *runner) report(stdout io.Writer) {
	stopErr := r.srv.stop()
	r.srv = nil
	if stopErr != nil {
		fmt.Fprintf(r.log, "admit stop: %v\n", stopErr)
	}
	if len(r.results) > 0 {
		writeReport(stdout, r.cfg, machineInfo(r.work), r.results, r.ceiling, r.ready, serverErrors(r.logPath))
	}
	writeTimingReport(stdout, r.timings)
	writeOverloadReport(stdout, r.overloads)
	if err := readRefusalTimes(r.logPath, r.goodputs); err != nil {
		fmt.Fprintf(r.log, "admit's request log: %v\n", err)
	}
	writeGoodputReport(stdout, r.goodputs, r.pin)
}

// conns is how many keep-alive connections the client pool keeps: one for
// every request the scenarios may have in flight at once.
func (r *runner) conns() int {
	n := 2 * max(r.cfg.Clients, r.cfg.OwnerClients, r.cfg.ReadClients)
	if r.cfg.wants("overload") {
		n = max(n, slices.Max(r.cfg.Sweep)+r.cfg.OwnerClients)
	}
	if r.cfg.wants("goodput") {
		n = max(n, slices.Max(r.cfg.GoodputLevels))
	}
	return n
}

// progress prints a progress line to stderr.
func (r *runner) progress(format string, a ...any) {
	fmt.Fprintf(r.log, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

// start starts admit on the data directory.
func (r *runner) start(ctx context.Context) error {
	env := []string{"ADMIT_REQUEST_ID_HEADER=" + attemptHeader}
	if r.pin.note == "" {
		env = append(env, "GOMAXPROCS=1")
	}
	srv, err := startServer(ctx, r.bin, r.dataDir, r.logPath, r.cfg.PprofDir != "", r.cfg.WriteQueue, env...)
	if err != nil {
		return err
	}
	r.srv = srv
	if r.pin.note == "" {
		if err := pinProcess(srv.Pid(), r.pin.admitCPU); err != nil {
			r.pin.note = err.Error()
		}
	}
	r.progress("admit pid %d at %s, ready in %s ms", srv.Pid(), srv.BaseURL, ms(srv.StartToReady))
	return nil
}

// measure runs one scenario against the server: an unmeasured warm-up,
// then the measured loop, with the server's peak RSS taken over the loop
// and the database size after it.
func (r *runner) measure(ctx context.Context, name string, clients int, dur time.Duration, fn op) *Result {
	if r.cfg.Warmup > 0 {
		l := load{Clients: clients, Duration: r.cfg.Warmup, MaxRequests: warmupMaxRequests, RequestTimeout: 10 * time.Second, seq: &r.seq}
		l.run(ctx, name+" (warm-up)", fn)
	}
	pid := r.srv.Pid()
	if err := resetPeakRSS(pid); err != nil {
		r.progress("cannot reset the peak RSS mark (%v): the figure is the process's lifetime peak", err)
	}
	profDone := r.profileAsync(ctx, name, dur)
	r.progress("%s: %d clients, %v", name, clients, dur)
	cpu0, cpuErr := processCPU(pid)
	l := load{Clients: clients, Duration: dur, MaxRequests: r.cfg.MaxRequests, RequestTimeout: 10 * time.Second, seq: &r.seq}
	res := l.run(ctx, name, fn)
	if cpu1, err := processCPU(pid); err == nil && cpuErr == nil {
		res.ServerCPU = cpu1 - cpu0
	}
	<-profDone
	if rss, err := readPeakRSS(pid); err == nil {
		res.PeakRSS = rss
	}
	dbPath := filepath.Join(r.dataDir, "admit.db")
	res.DBBytes, res.WALBytes = fileSize(dbPath), fileSize(dbPath+"-wal")
	r.progress("  %.0f req/s, p50 %s ms, p95 %s ms, p99 %s ms, %d errors, peak RSS %s MiB, server CPU %s µs/req",
		res.Throughput(), ms(res.Percentile(50)), ms(res.Percentile(95)), ms(res.Percentile(99)), res.Errors, mib(res.PeakRSS),
		us(res.CPUPerRequest()))
	for _, e := range res.ErrorSamples {
		r.progress("  error: %s", e)
	}
	r.results = append(r.results, res)
	return res
}

// profileAsync starts a CPU profile of the server over dur when -pprof-dir
// asks for one; the channel closes when it is saved (at once without one).
func (r *runner) profileAsync(ctx context.Context, name string, dur time.Duration) <-chan struct{} {
	done := make(chan struct{})
	if r.cfg.PprofDir == "" {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		if err := r.profile(ctx, name, dur); err != nil {
			r.progress("pprof %s: %v", name, err)
		}
	}()
	return done
}

// profile saves a CPU profile of the server taken over dur.
func (r *runner) profile(ctx context.Context, name string, dur time.Duration) error {
	secs := max(1, int(dur.Seconds()))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.srv.PprofURL+"/debug/pprof/profile?seconds="+strconv.Itoa(secs), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	f, err := os.Create(filepath.Join(r.cfg.PprofDir, fileName(name)+".pprof"))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fileName turns a scenario name into a file name.
func fileName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// jsonSignup posts a distinct JSON signup per request; 202 is success.
func (r *runner) jsonSignup(p *program, tag string) op {
	path := "/api/public/programs/" + p.Slug + "/signups"
	return func(ctx context.Context, _ int, seq int64) error {
		email := fmt.Sprintf("%s-%s-%d@example.test", tag, r.runID, seq)
		_, _, err := r.c.do(ctx, request{Method: http.MethodPost, Path: path, ContentType: "application/json",
			Body: signupBody(p, email), Want: http.StatusAccepted})
		return err
	}
}

// formSignup posts a distinct signup through the no-JavaScript form.
func (r *runner) formSignup(p *program) op {
	path := "/waitlist/" + p.Slug
	version := strconv.Itoa(p.CurrentNoticeVersion)
	return func(ctx context.Context, _ int, seq int64) error {
		form := url.Values{"requestKey": {uuid.NewString()}, "email": {fmt.Sprintf("form-%s-%d@example.test", r.runID, seq)},
			"noticeVersion": {version}, "permission": {"yes"}, "website": {""}}
		_, _, err := r.c.do(ctx, request{Method: http.MethodPost, Path: path, ContentType: "application/x-www-form-urlencoded",
			Body: []byte(form.Encode()), Want: http.StatusAccepted})
		return err
	}
}

// mixedKind is what the seq-th mixed request sends: 7 in 10 new, 2 in 10
// a duplicate of a listed address, 1 in 10 invalid.
func mixedKind(seq int64) string {
	switch seq % 10 {
	case 7, 8:
		return "duplicate"
	case 9:
		return "invalid"
	}
	return "new"
}

// mixed is public signup traffic: new addresses and duplicates get 202 (a
// duplicate's answer is indistinguishable), an invalid address 400.
func (r *runner) mixed(p *program, pool []string) op {
	path := "/api/public/programs/" + p.Slug + "/signups"
	return func(ctx context.Context, _ int, seq int64) error {
		email, want := fmt.Sprintf("mixed-%s-%d@example.test", r.runID, seq), http.StatusAccepted
		switch mixedKind(seq) {
		case "duplicate":
			email = pool[seq%int64(len(pool))]
		case "invalid":
			email, want = fmt.Sprintf("mixed-%d-at-example.test", seq), http.StatusBadRequest
		}
		_, _, err := r.c.do(ctx, request{Method: http.MethodPost, Path: path, ContentType: "application/json",
			Body: signupBody(p, email), Want: want})
		return err
	}
}

// get reads path with the session; 200 is success.
func (r *runner) get(s *session, path string) op {
	return func(ctx context.Context, _ int, _ int64) error {
		_, _, err := r.c.do(ctx, request{Method: http.MethodGet, Path: path, Session: s, Want: http.StatusOK})
		return err
	}
}

// queue seeds the queue program with cfg.Entries entries while admit is
// stopped, measures start-to-ready with that database, and then the owner
// queue pages: first page, a deep cursor page and a state filter, as HTML
// and as JSON.
func (r *runner) queue(ctx context.Context, p *program) error {
	r.progress("stopping admit to seed %d entries", r.cfg.Entries)
	if err := r.srv.stop(); err != nil {
		return fmt.Errorf("stop admit: %w", err)
	}
	r.srv = nil
	t0 := time.Now()
	if err := seedQueue(ctx, filepath.Join(r.dataDir, "admit.db"), p.ID, r.cfg.Entries); err != nil {
		return fmt.Errorf("seed queue: %w", err)
	}
	r.progress("seeded in %s", time.Since(t0).Round(time.Millisecond))
	for i := range r.cfg.Restarts {
		if i > 0 {
			if err := r.srv.stop(); err != nil {
				return fmt.Errorf("stop admit: %w", err)
			}
			r.srv = nil
		}
		if err := r.start(ctx); err != nil {
			return err
		}
		r.ready = append(r.ready, r.srv.StartToReady)
	}
	r.c.http.CloseIdleConnections() // they led to the stopped process
	r.c = newClient(r.srv.BaseURL, r.srv.DevSignInKey(), r.conns())

	depth := r.cfg.Entries * 9 / 10
	r.progress("walking the API to entry %d for a deep cursor", depth)
	cursor, err := deepCursor(ctx, r.c, r.owner, p, depth)
	if err != nil {
		return fmt.Errorf("deep cursor: %w", err)
	}
	html := "/owner/programs/" + p.ID + "/entries"
	api := "/api/owner/programs/" + p.ID + "/entries"
	deep := "?cursor=" + url.QueryEscape(cursor)
	n := r.cfg.OwnerClients
	d := r.cfg.ReadDuration
	r.measure(ctx, "c. queue HTML first page", n, d, r.get(r.owner, html))
	r.measure(ctx, "c. queue HTML deep page", n, d, r.get(r.owner, html+deep))
	r.measure(ctx, "c. queue HTML state=selected", n, d, r.get(r.owner, html+"?state=selected"))
	r.measure(ctx, "c. queue API first page", n, d, r.get(r.owner, api))
	r.measure(ctx, "c. queue API deep page", n, d, r.get(r.owner, api+deep))
	r.measure(ctx, "c. queue API state=selected", n, d, r.get(r.owner, api+"?state=selected"))
	// The program page at a glance (counts, seats, 30 days, funnel) and its
	// JSON: counters and bounded reads, whatever the queue's size.
	r.measure(ctx, "c. program page HTML", n, d, r.get(r.owner, "/owner/programs/"+p.ID))
	r.measure(ctx, "c. program stats API", n, d, r.get(r.owner, "/api/owner/programs/"+p.ID+"/stats"))

	// Search (docs/console.md#the-queue): one exact address deep in the
	// queue, a prefix matching 1,000 entries, and a prefix matching every
	// entry; each answers one page through an index.
	exact := "?q=" + url.QueryEscape(fmt.Sprintf("seed-%06d@example.test", depth))
	r.measure(ctx, "c. queue API search exact address", n, d, r.get(r.owner, api+exact))
	r.measure(ctx, "c. queue API search prefix (1,000 match)", n, d, r.get(r.owner, api+"?q=seed-0450"))
	r.measure(ctx, "c. queue API search prefix (all match)", n, d, r.get(r.owner, api+"?q=SEED"))
	r.measure(ctx, "c. queue HTML search prefix (1,000 match)", n, d, r.get(r.owner, html+"?q=seed-0450"))
	return nil
}

// median is the middle value (the lower of the two middles).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
