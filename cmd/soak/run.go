package main

import (
	"context"
	"fmt"
	"io"
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
	// Rejected counts signups answered neither 202 nor not at all.
	Rejected int
}

// Clean reports whether no restore point was corrupt and the replica always
// caught up with every acknowledged signup.
func (s Summary) Clean() bool { return s.Corrupt == 0 && s.LatestBad == 0 && s.Rejected == 0 }

// cycleResult is one cycle's line of the report.
type cycleResult struct {
	Cycle     int
	Rate      float64
	Acked     int
	Restart   time.Duration
	Points    pointsResult
	CatchUp   time.Duration
	Lacking   int
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

// run performs the soak and writes its report to out.
func run(ctx context.Context, cfg Config, out io.Writer) (Summary, error) {
	var sum Summary
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "admit-soak-")
		if err != nil {
			return sum, err
		}
		dir = d
	}
	if cfg.Keep {
		fmt.Fprintf(out, "work directory: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	data, replica, scratch := filepath.Join(dir, "data"), filepath.Join(dir, "replica"), filepath.Join(dir, "scratch")
	for _, d := range []string{data, replica, scratch} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return sum, err
		}
	}
	lsConfig := filepath.Join(dir, "litestream.yml")
	if err := os.WriteFile(lsConfig, []byte(litestreamYAML(filepath.Join(data, "admit.db"), replica)), 0o600); err != nil {
		return sum, err
	}
	bin := cfg.Bin
	if bin == "" {
		var err error
		if bin, err = buildAdmit(ctx, cfg.Src, dir, os.Stderr); err != nil {
			return sum, err
		}
	}
	logPath := filepath.Join(dir, "admit.log")
	addr, err := freeLoopbackAddr()
	if err != nil {
		return sum, err
	}
	base := "http://" + addr
	env := serverEnv(addr, data, lsConfig)
	srv, err := startServer(ctx, bin, dir, env, logPath)
	if err != nil {
		return sum, err
	}
	defer func() {
		if srv != nil {
			srv.kill()
		}
	}()
	hc := newHTTPClient(cfg.Clients)
	prog, err := createProgram(ctx, base, "soak")
	if err != nil {
		return sum, err
	}
	l := newLedger()
	chk := &checker{replica: replica, scratch: scratch, ledger: l}
	fmt.Fprintf(out, "soak: %d cycles of %s signup load from %d clients (rates %v a second, 0 = max), SIGKILL under load, restart at once, %s more load; every restore point checked\n",
		cfg.Cycles, cfg.Load, cfg.Clients, cfg.Rates, cfg.Load)

	wait := func(d time.Duration) {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	for cycle := 1; cycle <= cfg.Cycles+1; cycle++ {
		final := cycle > cfg.Cycles
		rate := cfg.Rates[(cycle-1)%len(cfg.Rates)]
		_, ackedBefore, _ := l.counts()
		loadCtx, stopLoad := context.WithCancel(ctx)
		rejectedc := make(chan int, 1)
		go func() { rejectedc <- signupLoad(loadCtx, hc, base, prog, cfg.Clients, rate, cycle, l) }()
		wait(cfg.Load)
		var res cycleResult
		res.Cycle, res.Rate = cycle, rate
		if final {
			// The run ends with a clean shutdown under load: its final
			// sync must leave the replica holding every acknowledged signup.
			if err := srv.stop(); err != nil {
				stopLoad()
				<-rejectedc
				return sum, fmt.Errorf("stop admit: %w", err)
			}
			srv = nil
			stopLoad()
			res.Rejected = <-rejectedc
		} else {
			// SIGKILL under load and restart at once; the clients keep
			// trying and go on once it listens again.
			srv.kill()
			start := time.Now()
			srv, err = startServer(ctx, bin, dir, env, logPath)
			if err != nil {
				stopLoad()
				<-rejectedc
				return sum, fmt.Errorf("restart after cycle %d: %w", cycle, err)
			}
			res.Restart = time.Since(start)
			wait(cfg.Load)
			stopLoad()
			res.Rejected = <-rejectedc
		}
		if ctx.Err() != nil {
			return sum, ctx.Err()
		}
		_, ackedAfter, _ := l.counts()
		res.Acked = ackedAfter - ackedBefore

		// The replica catches up within a few sync intervals of the restart.
		start := time.Now()
		for {
			lacking, ps, err := chk.latestHoldsAcked(ctx)
			if err != nil {
				return sum, err
			}
			res.CatchUp, res.Lacking = time.Since(start), lacking
			if ps.Corrupt() {
				res.LatestErr = ps.Problems[0]
				break
			}
			if lacking == 0 || time.Since(start) > cfg.CatchUp {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if res.Points, err = chk.scanNew(ctx); err != nil {
			return sum, err
		}
		fmt.Fprintln(out, res.line())
		for _, d := range res.Points.Details {
			fmt.Fprintln(out, "           ", d)
		}
		sum.add(res)
	}
	sum.Sent, sum.Acked, sum.Unanswered = l.counts()
	fmt.Fprintln(out, sum.report(chk))
	return sum, nil
}

func (s *Summary) add(r cycleResult) {
	s.Cycles++
	s.Points += r.Points.Points
	s.Corrupt += r.Points.Corrupt
	if r.Points.Corrupt > 0 {
		s.CorruptCycles++
	}
	if r.LatestErr != "" || r.Lacking > 0 {
		s.LatestBad++
	}
	s.Rejected += r.Rejected
}

func (s Summary) report(c *checker) string {
	verdict := "CLEAN"
	if !s.Clean() {
		verdict = "FAILED"
	}
	r := fmt.Sprintf("total: %d SIGKILL cycles + 1 clean stop; signups sent %d, acknowledged %d, unanswered (server killed or restarting) %d, rejected %d\n"+
		"total: restore points checked %d, corrupt %d (in %d cycles); latest state bad after catch-up %d times — %s",
		s.Cycles-1, s.Sent, s.Acked, s.Unanswered, s.Rejected, s.Points, s.Corrupt, s.CorruptCycles, s.LatestBad, verdict)
	if c != nil && c.FirstBad != 0 {
		r += fmt.Sprintf("\ntotal: first corrupt restore point: txid %s", c.FirstBad)
	}
	return r
}
