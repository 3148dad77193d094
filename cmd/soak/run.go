package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Summary totals a soak run.
type Summary struct {
	Cycles int
	// Points and Corrupt count the restore points checked and the corrupt ones.
	Points, Corrupt int
	// CorruptCycles counts the cycles that found a corrupt restore point.
	CorruptCycles int
	// LatestBad counts the checks whose latest replica state was corrupt or
	// lacked an acknowledged signup once the catch-up wait was over.
	LatestBad int
	// Sent, Acked and Unanswered count the signups.
	Sent, Acked, Unanswered int
	// Rejected counts signups answered neither 202 nor not at all, and
	// removals answered neither 200 nor not at all.
	Rejected int
	// RemovalsSent and Removed count the removals sent and answered 200.
	RemovalsSent, Removed int
	// OnDiskBad counts the checks that found a removed address still in
	// the WAL or in the database file outside a b-tree page's gap.
	OnDiskBad int
	// GapMax is the most removed addresses one check found only in the
	// unallocated gap of a b-tree page (reported, not a failure: see
	// onDisk.Gap).
	GapMax int
}

// Clean reports whether no restore point was corrupt and the replica always
// caught up with every acknowledged signup.
func (s Summary) Clean() bool {
	return s.Corrupt == 0 && s.LatestBad == 0 && s.Rejected == 0 && s.OnDiskBad == 0
}

// cycleResult is one cycle's line of the report.
type cycleResult struct {
	Cycle   int
	Rate    float64
	Acked   int
	Restart time.Duration
	Points  pointsResult
	CatchUp time.Duration
	Lacking int
	// Unerased counts removed entries the latest state still held.
	Unerased int
	// OnDisk counts the removed addresses the data files still held.
	OnDisk    onDisk
	LatestErr string
	Rejected  int
}

func (r cycleResult) line() string {
	latest := fmt.Sprintf("latest ok after %s", r.CatchUp.Round(100*time.Millisecond))
	switch {
	case r.LatestErr != "":
		latest = "latest CORRUPT: " + r.LatestErr
	case r.Lacking > 0:
		latest = fmt.Sprintf("latest LACKS %d acknowledged signups", r.Lacking)
	case r.Unerased > 0:
		latest = fmt.Sprintf("latest HOLDS %d removed entries", r.Unerased)
	}
	if r.OnDisk.WAL > 0 || r.OnDisk.Live > 0 {
		latest += fmt.Sprintf("  data files HOLD removed addresses: %d in the WAL, %d in the database", r.OnDisk.WAL, r.OnDisk.Live)
	}
	if r.OnDisk.Gap > 0 {
		latest += fmt.Sprintf("  (%d only in b-tree page gaps)", r.OnDisk.Gap)
	}
	rate := "max"
	if r.Rate > 0 {
		rate = fmt.Sprintf("%g/s", r.Rate)
	}
	s := fmt.Sprintf("cycle %3d  rate %5s  acked %6d  restart %5s  points %3d  corrupt %3d  %s",
		r.Cycle, rate, r.Acked, r.Restart.Round(time.Millisecond), r.Points.Points, r.Points.Corrupt, latest)
	if r.Rejected > 0 {
		s += fmt.Sprintf("  rejected %d", r.Rejected)
	}
	return s
}

// soak is one run's state: the work directory, the admit it drives and
// restarts, the load's clients and the ledger of what was acknowledged.
type soak struct {
	cfg     Config
	out     io.Writer
	dir     string
	bin     string
	env     []string
	logPath string
	base    string
	srv     *server
	hc      *http.Client
	prog    *soakProgram
	ledger  *ledger
	chk     *checker
}

// run performs the soak and writes its report to out.
func run(ctx context.Context, cfg Config, out io.Writer) (Summary, error) {
	var sum Summary
	s := &soak{cfg: cfg, out: out}
	cleanup, err := s.prepare(ctx)
	if err != nil {
		return sum, err
	}
	defer cleanup()
	if err := s.launch(ctx); err != nil {
		return sum, err
	}
	defer func() {
		if s.srv != nil {
			s.srv.kill()
		}
	}()
	fmt.Fprintf(out, "soak: %d cycles of %s signup load from %d clients (rates %v a second, 0 = max), SIGKILL under load, restart at once, %s more load; every restore point checked\n",
		cfg.Cycles, cfg.Load, cfg.Clients, cfg.Rates, cfg.Load)
	for cycle := 1; cycle <= cfg.Cycles+1; cycle++ {
		res, err := s.cycle(ctx, cycle)
		if err != nil {
			return sum, err
		}
		fmt.Fprintln(out, res.line())
		for _, d := range res.Points.Details {
			fmt.Fprintln(out, "           ", d)
		}
		sum.add(res)
	}
	sum.Sent, sum.Acked, sum.Unanswered = s.ledger.counts()
	sum.RemovalsSent, sum.Removed = s.ledger.removals()
	fmt.Fprintln(out, sum.report(s.chk))
	return sum, nil
}

// prepare makes the work directory (removed by the returned cleanup unless
// kept), the data, replica and scratch directories and Litestream's
// configuration, and builds admit unless -bin names one.
func (s *soak) prepare(ctx context.Context) (cleanup func(), err error) {
	s.dir = s.cfg.Dir
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "admit-soak-"); err != nil {
			return nil, err
		}
	}
	cleanup = func() { os.RemoveAll(s.dir) }
	if s.cfg.Keep {
		fmt.Fprintf(s.out, "work directory: %s\n", s.dir)
		cleanup = func() {}
	}
	data, replica, scratch := filepath.Join(s.dir, "data"), filepath.Join(s.dir, "replica"), filepath.Join(s.dir, "scratch")
	for _, d := range []string{data, replica, scratch} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return cleanup, err
		}
	}
	lsConfig := filepath.Join(s.dir, "litestream.yml")
	if err := os.WriteFile(lsConfig, []byte(litestreamYAML(filepath.Join(data, "admit.db"), replica)), 0o600); err != nil {
		return cleanup, err
	}
	s.bin = s.cfg.Bin
	if s.bin == "" {
		if s.bin, err = buildAdmit(ctx, s.cfg.Src, s.dir, os.Stderr); err != nil {
			return cleanup, err
		}
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return cleanup, err
	}
	s.base, s.env = "http://"+addr, serverEnv(addr, data, lsConfig)
	s.logPath = filepath.Join(s.dir, "admit.log")
	s.ledger = newLedger()
	s.chk = &checker{replica: replica, scratch: scratch, ledger: s.ledger}
	return cleanup, nil
}

// launch starts admit and creates the program the load signs up to.
func (s *soak) launch(ctx context.Context) (err error) {
	if s.srv, err = startServer(ctx, s.bin, s.dir, s.env, s.logPath); err != nil {
		return err
	}
	s.hc = newHTTPClient(s.cfg.Clients)
	s.prog, err = createProgram(ctx, s.base, s.srv.DevSignInKey(), "soak")
	return err
}

// wait sleeps for d or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// cycle is one round: load, then SIGKILL under load and a restart at once
// with more load (the final round instead stops admit cleanly under load),
// then the replica's checks.
func (s *soak) cycle(ctx context.Context, cycle int) (res cycleResult, err error) {
	res.Cycle, res.Rate = cycle, s.cfg.Rates[(cycle-1)%len(s.cfg.Rates)]
	_, ackedBefore, _ := s.ledger.counts()
	loadCtx, stopLoad := context.WithCancel(ctx)
	rejectedc := make(chan int, 1)
	go func() {
		rejectedc <- signupLoad(loadCtx, s.hc, s.base, s.prog, s.cfg.Clients, res.Rate, cycle, s.cfg.RemoveEvery, s.ledger)
	}()
	wait(ctx, s.cfg.Load)
	if cycle > s.cfg.Cycles {
		err = s.stopUnderLoad()
	} else {
		res.Restart, err = s.killAndRestart(ctx, cycle)
	}
	stopLoad()
	res.Rejected = <-rejectedc
	if err != nil {
		return res, err
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	_, ackedAfter, _ := s.ledger.counts()
	res.Acked = ackedAfter - ackedBefore
	if err := s.awaitCatchUp(ctx, &res); err != nil {
		return res, err
	}
	if err := s.awaitErasedOnDisk(ctx, &res); err != nil {
		return res, err
	}
	res.Points, err = s.chk.scanNew(ctx)
	return res, err
}

// stopUnderLoad ends the run with a clean shutdown under load: its final
// sync must leave the replica holding every acknowledged signup.
func (s *soak) stopUnderLoad() error {
	err := s.srv.stop()
	s.srv = nil
	if err != nil {
		return fmt.Errorf("stop admit: %w", err)
	}
	return nil
}

// killAndRestart sends SIGKILL under load and restarts at once; the
// clients keep trying and go on once it listens again, for another load
// period.
func (s *soak) killAndRestart(ctx context.Context, cycle int) (time.Duration, error) {
	s.srv.kill()
	start := time.Now()
	srv, err := startServer(ctx, s.bin, s.dir, s.env, s.logPath)
	if err != nil {
		s.srv = nil
		return 0, fmt.Errorf("restart after cycle %d: %w", cycle, err)
	}
	s.srv = srv
	restart := time.Since(start)
	wait(ctx, s.cfg.Load)
	return restart, nil
}

// erasedOnDiskWithin is how long after the replica caught up the data
// files may still hold a removed address: the eraser flushes within
// seconds of an erasure's commit (docs/erasure.md).
const erasedOnDiskWithin = 10 * time.Second

// awaitErasedOnDisk waits, up to erasedOnDiskWithin, until neither the
// WAL nor the database file (outside b-tree page gaps) holds an address
// whose removal was answered 200, and records what was still found.
func (s *soak) awaitErasedOnDisk(ctx context.Context, res *cycleResult) error {
	removed := s.ledger.removedSnapshot()
	deadline := time.Now().Add(erasedOnDiskWithin)
	for {
		d, err := removedOnDisk(filepath.Join(s.dir, "data"), removed)
		if err != nil {
			return err
		}
		res.OnDisk = d
		if d.WAL == 0 && d.Live == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// awaitCatchUp waits, up to the catch-up bound, for the replica's latest
// state to hold every acknowledged signup, recording how long it took and
// what it lacked or found corrupt.
func (s *soak) awaitCatchUp(ctx context.Context, res *cycleResult) error {
	start := time.Now()
	for {
		lacking, unerased, ps, err := s.chk.latestHoldsAcked(ctx)
		if err != nil {
			return err
		}
		res.CatchUp, res.Lacking, res.Unerased = time.Since(start), lacking, unerased
		if ps.Corrupt() {
			res.LatestErr = ps.Problems[0]
			return nil
		}
		if lacking == 0 && unerased == 0 || time.Since(start) > s.cfg.CatchUp {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (s *Summary) add(r cycleResult) {
	s.Cycles++
	s.Points += r.Points.Points
	s.Corrupt += r.Points.Corrupt
	if r.Points.Corrupt > 0 {
		s.CorruptCycles++
	}
	if r.LatestErr != "" || r.Lacking > 0 || r.Unerased > 0 {
		s.LatestBad++
	}
	if r.OnDisk.WAL > 0 || r.OnDisk.Live > 0 {
		s.OnDiskBad++
	}
	s.GapMax = max(s.GapMax, r.OnDisk.Gap)
	s.Rejected += r.Rejected
}

func (s Summary) report(c *checker) string {
	verdict := "CLEAN"
	if !s.Clean() {
		verdict = "FAILED"
	}
	r := fmt.Sprintf("total: %d SIGKILL cycles + 1 clean stop; signups sent %d, acknowledged %d, unanswered (server killed or restarting) %d, rejected %d; removals sent %d, answered 200 %d\n"+
		"total: restore points checked %d, corrupt %d (in %d cycles); latest state bad after catch-up %d times; removed addresses left in the data files %d times (at most %d only in b-tree page gaps) — %s",
		s.Cycles-1, s.Sent, s.Acked, s.Unanswered, s.Rejected, s.RemovalsSent, s.Removed, s.Points, s.Corrupt, s.CorruptCycles, s.LatestBad, s.OnDiskBad, s.GapMax, verdict)
	if c != nil && c.FirstBad != 0 {
		r += fmt.Sprintf("\ntotal: first corrupt restore point: txid %s", c.FirstBad)
	}
	return r
}
