package main

// The scale mode (-scale 10000,100000,1000000) measures what a database's
// size costs: for each size it builds a fresh data directory, seeds that
// many entries over several programs while admit is stopped, and measures
// with admit replicating to a file replica: start-to-ready and the
// retention sweep at start, the owner pages of the largest program, the
// CSV export's time and memory, a retirement of the largest program, the
// longest write-lock hold of the sweep and the retirement (from admit's
// metrics), then, admit stopped, `admit backup verify` and `admit restore`.

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"admit/internal/proc"
	"admit/store"
)

// Scale bounds.
const (
	minScale = 1000
	maxScale = 2000000
	// scaleProgramMax is the most entries a program other than the
	// largest gets (a program's queue cap is at most MaxProgramCap).
	scaleProgramMax = store.MaxProgramCap
	// scaleSeedChunk is how many entries one seeding transaction writes.
	scaleSeedChunk = 50000
	// scaleReadyTimeout bounds a start with a large database.
	scaleReadyTimeout = 10 * time.Minute
)

// parseScale reads -scale: comma-separated entry counts, ascending.
func parseScale(list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < minScale || n > maxScale {
			return nil, fmt.Errorf("-scale: %q must be a count from %d to %d", s, minScale, maxScale)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("-scale: sizes must ascend, %d after %d", n, out[len(out)-1])
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("-scale names no size")
	}
	return out, nil
}

// scaleSplit divides n entries over programs: the largest holds half, the
// rest is spread evenly over at least two programs of at most
// scaleProgramMax each.
func scaleSplit(n int) []int {
	big := n / 2
	rest := n - big
	k := max(2, (rest+scaleProgramMax-1)/scaleProgramMax)
	out := []int{big}
	for i := range k {
		out = append(out, rest/k+boolInt(i < rest%k))
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scaleDueFifth: the declined and withdrawn entries among the oldest
// fifth of each program are already due for erasure, so the sweep at start
// has real work (5% of a fifth: 1% of the entries).
const scaleDueFifth = 5

// scaleEntry is the i-th seeded entry of a program of n: its state and
// whether it is already due for erasure.
func scaleEntry(i, n int) (state string, due bool) {
	state = seedState(i)
	due = (state == "declined" || state == "withdrawn") && i < n/scaleDueFifth
	return state, due
}

// holds summarizes admit's write-lock holds from its metrics.
type holds struct {
	// Count is the write transactions; Over is those that held the lock
	// longer than 50 ms; Max is the longest hold since start.
	Count, Over int64
	Max         time.Duration
	// CommitOver is the commits (WAL writes and fsync, a part of a hold)
	// that took longer than 50 ms; CommitMax is the longest since start.
	CommitOver int64
	CommitMax  time.Duration
}

// sinceHolds is the holds between two scrapes. Max is the later scrape's
// longest hold since start when it rose in between (it is then the longest
// of these); otherwise it is negated: these holds were at most that long.
// CommitMax is the same for the commits.
func sinceHolds(after, before holds) holds {
	longest := func(a, b time.Duration) time.Duration {
		if a <= b {
			return -a
		}
		return a
	}
	return holds{Count: after.Count - before.Count, Over: after.Over - before.Over, Max: longest(after.Max, before.Max),
		CommitOver: after.CommitOver - before.CommitOver, CommitMax: longest(after.CommitMax, before.CommitMax)}
}

// scaleResult is one size's measurements.
type scaleResult struct {
	N, Programs, Largest int
	Seed                 time.Duration
	// DBBytes is the seeded, checkpointed database file.
	DBBytes int64
	// FirstReady is the first start after seeding; Ready the later ones.
	FirstReady time.Duration
	Ready      []time.Duration
	// FirstSync is from the first start until the replica held everything.
	FirstSync time.Duration
	// The sweep at the first start.
	SweepErased int
	SweepTook   time.Duration
	SweepHolds  holds
	// Pages are the read loops, by name.
	Pages map[string]*Result
	// The largest program's CSV export.
	ExportTook            time.Duration
	ExportBytes           int64
	ExportRows            int
	ExportBase, ExportRSS int64
	ExportHolds           holds
	// The largest program's retirement.
	RetireTook  time.Duration
	RetireErr   string
	RetireHolds holds
	// Stop is the longest stop, SIGTERM to exit (final replica sync included).
	Stop time.Duration
	// Scrape is how long one metrics scrape took.
	Scrape time.Duration
	// Disk is how the data directory's disk answered fsync before seeding.
	Disk fsyncProbe
	// Backup verify and restore with admit stopped: wall time, CPU time
	// (user and system: on a loaded machine the wall time is mostly
	// waiting for a core) and peak RSS.
	Verify, Restore       time.Duration
	VerifyCPU, RestoreCPU time.Duration
	VerifyRSS, RestoreRSS int64
	RestoredBytes         int64
}

// scalePages are the read loops in report order.
var scalePages = []string{"queue HTML first page", "queue HTML deep page", "queue HTML state=selected",
	"queue API first page", "queue API deep page", "queue API state=selected",
	"email search HTML", "email search API", "prefix search HTML", "prefix search API", "program page HTML", "program API"}

// runScale measures every size in cfg.Scale and writes the report.
func runScale(ctx context.Context, cfg *Config, stdout, stderr io.Writer) error {
	base := &runner{cfg: cfg, log: stderr, runID: uuid.NewString()[:8]}
	cleanup, err := base.prepareWork()
	if err != nil {
		return err
	}
	defer cleanup()
	bin := cfg.Bin
	if bin == "" {
		base.progress("building admit from %s", cfg.Src)
		if bin, err = buildAdmit(ctx, cfg.Src, base.work, stderr); err != nil {
			return err
		}
	}
	var results []*scaleResult
	for _, n := range cfg.Scale {
		s := &scaler{runner: &runner{cfg: cfg, log: stderr, runID: base.runID, bin: bin,
			work: filepath.Join(base.work, fmt.Sprintf("scale-%d", n))}}
		res, err := s.measure(ctx, n)
		if s.srv != nil {
			s.srv.stop()
		}
		if err != nil {
			return fmt.Errorf("scale %d: %w", n, err)
		}
		results = append(results, res)
		// A size's files go before the next is built: a million entries
		// and their replica are gigabytes.
		if !cfg.Keep {
			os.RemoveAll(s.work)
		}
	}
	writeScaleReport(stdout, machineInfo(base.work), results)
	return nil
}

// fsyncProbeLength is how long each size probes the disk's fsync.
const fsyncProbeLength = 10 * time.Second

// scaler measures one size.
type scaler struct {
	*runner
	replica, config, metricsURL string
	// longestStop is the longest time from SIGTERM to exit.
	longestStop time.Duration
}

// measure runs every step for n entries.
func (s *scaler) measure(ctx context.Context, n int) (*scaleResult, error) {
	res := &scaleResult{N: n, Pages: map[string]*Result{}}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	s.progress("probing the disk's fsync for %s", fsyncProbeLength)
	disk, err := probeFsync(s.dataDir, fsyncProbeLength)
	if err != nil {
		return nil, err
	}
	res.Disk = disk
	split := scaleSplit(n)
	res.Programs, res.Largest = len(split), split[0]
	progs, err := s.createPrograms(ctx, split)
	if err != nil {
		return nil, err
	}
	if err := s.stopServer(); err != nil {
		return nil, err
	}
	s.progress("seeding %d entries in %d programs", n, len(split))
	t0 := time.Now()
	dbPath := filepath.Join(s.dataDir, "admit.db")
	if err := seedScale(ctx, dbPath, progs, split, time.Now().UTC()); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	res.Seed = time.Since(t0)
	res.DBBytes = fileSize(dbPath)
	s.progress("seeded in %s: %s MiB", res.Seed.Round(time.Millisecond), mib(res.DBBytes))

	if err := s.firstStart(ctx, res); err != nil {
		return nil, err
	}
	for range max(0, s.cfg.Restarts-1) {
		if err := s.stopServer(); err != nil {
			return nil, err
		}
		if err := s.startScale(ctx); err != nil {
			return nil, err
		}
		res.Ready = append(res.Ready, s.srv.StartToReady)
	}
	big := progs[0]
	if err := s.pages(ctx, big, res); err != nil {
		return nil, err
	}
	if err := s.export(ctx, big, res); err != nil {
		return nil, err
	}
	if err := s.retire(ctx, big, res); err != nil {
		return nil, err
	}
	if err := s.stopServer(); err != nil {
		return nil, err
	}
	res.Stop = s.longestStop
	if err := checkRetired(ctx, dbPath, big.ID); err != nil {
		return nil, err
	}
	return res, s.recover(ctx, res)
}

// prepare makes the size's directories and its Litestream configuration:
// a file replica next to the data directory.
func (s *scaler) prepare() error {
	s.dataDir = filepath.Join(s.work, "data")
	s.logPath = filepath.Join(s.work, "server.log")
	s.replica = filepath.Join(s.work, "replica")
	s.config = filepath.Join(s.work, "litestream.yml")
	for _, d := range []string{s.dataDir, s.replica} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	conf := fmt.Sprintf("dbs:\n  - path: %s\n    replica:\n      type: file\n      path: %s\nsnapshot:\n  interval: 24h\n  retention: 24h\n",
		filepath.Join(s.dataDir, "admit.db"), s.replica)
	return os.WriteFile(s.config, []byte(conf), 0o600)
}

// env is admit's environment in the scale mode: serverEnv with the file
// replica, metrics on a loopback port and no restore drills (a drill is a
// full restore in the background; backup verify measures the same work).
func (s *scaler) env(metricsAddr string) []string {
	return append(serverEnv(s.dataDir, "", s.cfg.WriteQueue), "ADMIT_LITESTREAM_CONFIG="+s.config,
		"ADMIT_METRICS_ADDR="+metricsAddr, "ADMIT_BACKUP_DRILL_INTERVAL=off")
}

// startScale starts admit and waits until it is ready.
func (s *scaler) startScale(ctx context.Context) error {
	addr, err := proc.FreeLoopbackAddr()
	if err != nil {
		return err
	}
	proc.ReadyTimeout = scaleReadyTimeout
	srv, err := proc.Start(ctx, s.bin, s.work, s.env(addr), s.logPath)
	if err != nil {
		return err
	}
	s.srv = &server{Server: srv}
	s.metricsURL = "http://" + addr + "/metrics"
	if s.c != nil {
		s.c.http.CloseIdleConnections() // they led to the stopped process
	}
	s.c = newClient(srv.BaseURL, srv.DevSignInKey(), 2*s.cfg.OwnerClients+2)
	s.progress("admit pid %d, ready in %s ms", srv.Pid(), ms(srv.StartToReady))
	return nil
}

// scaleStopTimeout bounds a stop: admit's final replica sync after a large
// sweep or retirement takes longer than loadgen's usual 15 seconds.
const scaleStopTimeout = 3 * time.Minute

// stopServer stops admit (SIGTERM) and keeps the longest stop.
func (s *scaler) stopServer() error {
	if s.srv == nil {
		return nil
	}
	t0 := time.Now()
	err := s.srv.Stop(scaleStopTimeout)
	s.longestStop = max(s.longestStop, time.Since(t0))
	s.srv = nil
	if err != nil {
		return fmt.Errorf("stop admit: %w", err)
	}
	return nil
}

// createPrograms starts admit on the empty data directory, signs the owner
// in and creates one program per part of the split through the API.
func (s *scaler) createPrograms(ctx context.Context, split []int) ([]*program, error) {
	if err := s.startScale(ctx); err != nil {
		return nil, err
	}
	var err error
	if s.owner, err = s.c.signIn(ctx, ownerEmail); err != nil {
		return nil, fmt.Errorf("owner sign-in: %w", err)
	}
	progs := make([]*program, len(split))
	for i := range split {
		slug := fmt.Sprintf("scale-%s-%d", s.runID, i)
		if progs[i], err = createProgram(ctx, s.c, s.owner, slug); err != nil {
			return nil, fmt.Errorf("create program %s: %w", slug, err)
		}
	}
	return progs, nil
}

// firstStart starts admit on the seeded database and waits for the
// retention sweep at start and for the replica's first full sync.
func (s *scaler) firstStart(ctx context.Context, res *scaleResult) error {
	logStart := fileSize(s.logPath)
	began := time.Now()
	if err := s.startScale(ctx); err != nil {
		return err
	}
	res.FirstReady = s.srv.StartToReady
	deadline := time.Now().Add(scaleReadyTimeout)
	// The log is read every 50 ms; the metrics once a second, since a
	// scrape counts every program's entries (see the scrape row).
	var lastScrape time.Time
	for res.SweepTook == 0 || res.FirstSync == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("no sweep or first replica sync within %v", scaleReadyTimeout)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if res.SweepTook == 0 {
			var err error
			if res.SweepErased, res.SweepTook, err = sweepLine(s.logPath, logStart); err != nil {
				return err
			}
		}
		if res.FirstSync == 0 && time.Since(lastScrape) >= time.Second {
			lastScrape = time.Now()
			text, err := scrapeText(ctx, s.metricsURL)
			if err != nil {
				return err
			}
			if v, _ := metricValue(text, "admit_backup_last_sync_timestamp_seconds"); v > 0 {
				res.FirstSync = time.Since(began)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t0 := time.Now()
	h, err := s.holds(ctx)
	if err != nil {
		return err
	}
	res.Scrape = time.Since(t0)
	res.SweepHolds = h
	s.progress("sweep erased %d in %s; replica synced %s after start; longest write hold %s ms, %d of %d over 50 ms",
		res.SweepErased, res.SweepTook, res.FirstSync.Round(time.Millisecond), ms(h.Max), h.Over, h.Count)
	// The owner's session is in the database: it survives the restart.
	return nil
}

// sweepRe matches the sweep's log line (text format).
var sweepRe = regexp.MustCompile(`msg="retention sweep erased entries" count=(\d+) took=(\S+)`)

// sweepLine finds the sweep's line in the server log after offset.
func sweepLine(path string, offset int64) (int, time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "retention sweep failed") {
			return 0, 0, fmt.Errorf("the sweep failed: %s", sc.Text())
		}
		if m := sweepRe.FindStringSubmatch(sc.Text()); m != nil {
			n, _ := strconv.Atoi(m[1])
			d, err := time.ParseDuration(m[2])
			if err != nil {
				return 0, 0, fmt.Errorf("sweep line: %w", err)
			}
			return n, max(d, time.Nanosecond), nil
		}
	}
	return 0, 0, sc.Err()
}

// holds reads the write-lock hold metrics.
func (s *scaler) holds(ctx context.Context) (holds, error) {
	text, err := scrapeText(ctx, s.metricsURL)
	if err != nil {
		return holds{}, err
	}
	return parseHolds(text)
}

// parseHolds reads the write-lock hold and commit histograms and gauges
// from metrics text.
func parseHolds(text string) (holds, error) {
	count, err1 := metricValue(text, "admit_store_write_lock_hold_seconds_count")
	under, err2 := metricValue(text, `admit_store_write_lock_hold_seconds_bucket{le="0.05"}`)
	longest, err3 := metricValue(text, "admit_store_write_lock_hold_max_seconds")
	commits, err4 := metricValue(text, "admit_store_commit_seconds_count")
	commitsUnder, err5 := metricValue(text, `admit_store_commit_seconds_bucket{le="0.05"}`)
	longestCommit, err6 := metricValue(text, "admit_store_commit_max_seconds")
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return holds{}, err
	}
	return holds{Count: int64(count), Over: int64(count - under), Max: time.Duration(longest * float64(time.Second)),
		CommitOver: int64(commits - commitsUnder), CommitMax: time.Duration(longestCommit * float64(time.Second))}, nil
}

// metricValue is the value of the sample line that starts with name (name
// and labels exactly as exposed).
func metricValue(text, name string) (float64, error) {
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, name+" ")
		if !ok {
			continue
		}
		return strconv.ParseFloat(strings.TrimSpace(rest), 64)
	}
	return 0, fmt.Errorf("no %s in the metrics", name)
}

// scrapeText fetches the metrics text.
func scrapeText(ctx context.Context, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("scrape metrics: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("scrape metrics: status %d", resp.StatusCode)
	}
	return string(b), nil
}

// pages measures the largest program's owner pages.
func (s *scaler) pages(ctx context.Context, p *program, res *scaleResult) error {
	depth := res.Largest * 9 / 10
	s.progress("walking the API to entry %d for a deep cursor", depth)
	cursor, err := deepCursor(ctx, s.c, s.owner, p, depth)
	if err != nil {
		return fmt.Errorf("deep cursor: %w", err)
	}
	html := "/owner/programs/" + p.ID + "/entries"
	api := "/api/owner/programs/" + p.ID + "/entries"
	deep := "?cursor=" + url.QueryEscape(cursor)
	paths := map[string]string{
		"queue HTML first page": html, "queue HTML deep page": html + deep, "queue HTML state=selected": html + "?state=selected",
		"queue API first page": api, "queue API deep page": api + deep, "queue API state=selected": api + "?state=selected",
		"program page HTML": "/owner/programs/" + p.ID, "program API": "/api/owner/programs/" + p.ID,
	}
	// An address in the middle of the largest program, and a prefix that
	// every entry's address starts with: the search whose page merges the
	// most ranges (one per state).
	q := "?q=" + url.QueryEscape(scaleEmail(0, res.Largest/2))
	prefix := "?q=scale"
	switch ok, err := s.searches(ctx, api); {
	case err != nil:
		return err
	case ok:
		paths["email search HTML"], paths["email search API"] = html+q, api+q
		paths["prefix search HTML"], paths["prefix search API"] = html+prefix, api+prefix
	default:
		s.progress("the queue has no search (?q=): no search rows")
	}
	for _, name := range scalePages {
		if path, ok := paths[name]; ok {
			res.Pages[name] = s.runner.measure(ctx, name, s.cfg.OwnerClients, s.cfg.ReadDuration, s.get(s.owner, path))
		}
	}
	return nil
}

// searches reports whether the queue API filters by ?q=: an address that
// is not listed must find nothing.
func (s *scaler) searches(ctx context.Context, api string) (bool, error) {
	var page queuePage
	if _, _, err := s.c.do(ctx, request{Method: http.MethodGet, Path: api + "?q=" + url.QueryEscape("nobody-listed@example.test"),
		Session: s.owner, Want: http.StatusOK, Into: &page}); err != nil {
		return false, fmt.Errorf("search probe: %w", err)
	}
	return len(page.Entries) == 0, nil
}

// export streams the largest program's CSV export to nowhere, timing it
// and reading admit's peak RSS over it.
func (s *scaler) export(ctx context.Context, p *program, res *scaleResult) error {
	before, err := s.holds(ctx)
	if err != nil {
		return err
	}
	pid := s.srv.Pid()
	if err := resetPeakRSS(pid); err != nil {
		return fmt.Errorf("reset peak RSS: %w", err)
	}
	base, err := readPeakRSS(pid)
	if err != nil {
		return err
	}
	s.progress("exporting %d entries as CSV", res.Largest)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.c.base+"/api/owner/programs/"+p.ID+"/export.csv", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Cookie", s.owner.Cookie)
	t0 := time.Now()
	resp, err := s.c.http.Do(req)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("export: status %d", resp.StatusCode)
	}
	lines := &lineCounter{}
	n, err := io.Copy(io.MultiWriter(io.Discard, lines), resp.Body)
	res.ExportTook = time.Since(t0)
	if err != nil {
		return fmt.Errorf("export: read: %w", err)
	}
	peak, err := readPeakRSS(pid)
	if err != nil {
		return err
	}
	res.ExportBytes, res.ExportRows, res.ExportBase, res.ExportRSS = n, lines.n-1, base, peak
	after, err := s.holds(ctx)
	if err != nil {
		return err
	}
	res.ExportHolds = sinceHolds(after, before)
	s.progress("  %d rows, %s MiB in %s; peak RSS %s MiB (from %s)", res.ExportRows, mib(n), res.ExportTook.Round(time.Millisecond), mib(peak), mib(base))
	return nil
}

// lineCounter counts newlines written to it.
type lineCounter struct{ n int }

func (l *lineCounter) Write(b []byte) (int, error) {
	for _, c := range b {
		if c == '\n' {
			l.n++
		}
	}
	return len(b), nil
}

// retire retires the largest program through the API, which answers once
// the retirement has taken effect, waits for the retirer to finish its
// chunked bookkeeping, and reads the write-lock holds it took.
func (s *scaler) retire(ctx context.Context, p *program, res *scaleResult) error {
	base := "/api/owner/programs/" + p.ID
	if _, _, err := s.c.do(ctx, request{Method: http.MethodGet, Path: base, Session: s.owner, Want: http.StatusOK, Into: p}); err != nil {
		return err
	}
	before, err := s.holds(ctx)
	if err != nil {
		return err
	}
	s.progress("retiring the program of %d entries", res.Largest)
	// The API answers at the retirement's commit; the bookkeeping runs in
	// admit's background retirer. So the end is read from the database
	// itself: the program's pending mark, read-only beside the running
	// admit. (Before the retirer, the answer came after the last step and
	// was lost past admit's 30 s write timeout; the generous client
	// timeout stays for such a build.)
	long := &client{base: s.c.base, http: &http.Client{Transport: s.c.http.Transport, Timeout: scaleReadyTimeout,
		CheckRedirect: s.c.http.CheckRedirect}}
	t0 := time.Now()
	_, _, err = long.do(ctx, request{Method: http.MethodPost, Path: base + "/retire", Session: s.owner,
		ContentType: "application/json", Want: http.StatusOK,
		Body: jsonBody(map[string]any{"expectedRevision": p.Revision, "confirm": p.Slug})})
	if err != nil {
		res.RetireErr = err.Error()
		s.progress("  retire answered after %s: %v", time.Since(t0).Round(time.Millisecond), err)
	}
	if err := waitRetired(ctx, filepath.Join(s.dataDir, "admit.db"), p.ID, scaleReadyTimeout); err != nil {
		return err
	}
	res.RetireTook = time.Since(t0)
	after, err := s.holds(ctx)
	if err != nil {
		return err
	}
	res.RetireHolds = sinceHolds(after, before)
	s.progress("  retired in %s: %d write transactions, %d over 50 ms", res.RetireTook.Round(time.Millisecond),
		res.RetireHolds.Count, res.RetireHolds.Over)
	return nil
}

// waitRetired polls the database, read-only, until the program's
// retirement is no longer pending.
func waitRetired(ctx context.Context, dbPath, programID string, within time.Duration) error {
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(within)
	for {
		var pending int
		if err := db.QueryRowContext(ctx, `SELECT retire_pending FROM programs WHERE id = ?`, programID).Scan(&pending); err != nil {
			return fmt.Errorf("read the retirement: %w", err)
		}
		if pending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the retirement still pending after %v", within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkRetired checks, admit stopped, that the retirement left nothing
// pending and set every entry's erasure date.
func checkRetired(ctx context.Context, dbPath, programID string) error {
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	if err != nil {
		return err
	}
	defer db.Close()
	var pending, undated int
	if err := db.QueryRowContext(ctx, `SELECT retire_pending FROM programs WHERE id = ?`, programID).Scan(&pending); err != nil {
		return fmt.Errorf("read the retirement: %w", err)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM entries WHERE program_id = ? AND erase_after IS NULL AND erased_at IS NULL`,
		programID).Scan(&undated); err != nil {
		return fmt.Errorf("read the retirement: %w", err)
	}
	if pending != 0 || undated != 0 {
		return fmt.Errorf("the retirement is not finished: pending %d, %d entries without an erasure date", pending, undated)
	}
	return nil
}

// recover times `admit backup verify` and `admit restore` with admit
// stopped, as a self-hoster recovering would run them.
func (s *scaler) recover(ctx context.Context, res *scaleResult) error {
	env := append(serverEnv(s.dataDir, "", s.cfg.WriteQueue), "ADMIT_LITESTREAM_CONFIG="+s.config)
	s.progress("admit backup verify")
	verify, err := s.admitCmd(ctx, env, "backup", "verify")
	if err != nil {
		return err
	}
	res.Verify, res.VerifyCPU, res.VerifyRSS = verify.wall, verify.cpu, verify.rss
	out := filepath.Join(s.work, "restored.db")
	s.progress("admit restore")
	restore, err := s.admitCmd(ctx, env, "restore", "-o", out)
	if err != nil {
		return err
	}
	res.Restore, res.RestoreCPU, res.RestoreRSS, res.RestoredBytes = restore.wall, restore.cpu, restore.rss, fileSize(out)
	s.progress("  verify %s (CPU %s, peak RSS %s MiB), restore %s (CPU %s, %s MiB, peak RSS %s MiB)",
		res.Verify.Round(time.Millisecond), res.VerifyCPU.Round(time.Millisecond), mib(res.VerifyRSS),
		res.Restore.Round(time.Millisecond), res.RestoreCPU.Round(time.Millisecond), mib(res.RestoredBytes), mib(res.RestoreRSS))
	return nil
}

// cmdCost is what one admit command took.
type cmdCost struct {
	wall, cpu time.Duration
	rss       int64
}

// admitCmd runs an admit command in the work directory and returns its
// wall time, CPU time and peak RSS.
//
// The peak RSS is the command's own VmHWM, read from /proc every 20 ms while
// it runs (the mark only rises, so only a peak in its last 20 ms could be
// missed). The rusage Wait reports is no use here: Go starts a command from
// a child that shares loadgen's memory until exec, and Linux carries that
// memory's peak into the command's ru_maxrss, so it would report loadgen's
// own RSS (over 500 MiB after seeding a million entries).
func (s *scaler) admitCmd(ctx context.Context, env []string, args ...string) (cmdCost, error) {
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Dir = s.work
	cmd.Env = env
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return cmdCost{}, fmt.Errorf("admit %s: %w", strings.Join(args, " "), err)
	}
	peak := make(chan int64, 1)
	done := make(chan struct{})
	go func() {
		var max int64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss, err := readPeakRSS(cmd.Process.Pid); err == nil && rss > max {
				max = rss
			}
			select {
			case <-done:
				peak <- max
				return
			case <-tick.C:
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	c := cmdCost{wall: time.Since(t0), rss: <-peak}
	if err != nil {
		return c, fmt.Errorf("admit %s: %w: %s", strings.Join(args, " "), err, snippet([]byte(out.String())))
	}
	c.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return c, nil
}

// scaleEmail is the address of the i-th entry of the p-th program.
func scaleEmail(p, i int) string { return fmt.Sprintf("scale-%d-%07d@example.test", p, i) }

// seedScale writes each program's entries, split[pi] for the pi-th, in
// transactions of scaleSeedChunk entries, with the state mix of seedState
// and the due entries of scaleEntry (seedEntries).
func seedScale(ctx context.Context, dbPath string, progs []*program, split []int, now time.Time) error {
	seeds := make([]seedProgram, len(progs))
	for pi, p := range progs {
		n := split[pi]
		seeds[pi] = seedProgram{ID: p.ID, N: n,
			Email: func(i int) string { return scaleEmail(pi, i) },
			Entry: func(i int) (string, bool) { return scaleEntry(i, n) }}
	}
	return seedEntries(ctx, dbPath, now, scaleSeedChunk, seeds...)
}
