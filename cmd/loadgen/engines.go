package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"admit/internal/config"
	"admit/internal/pgtest"
)

// The engines mode (`go run ./cmd/loadgen engines`, docs/PERFORMANCE.md)
// compares, in one run on one machine under the same load, durable
// signups a second and their p99 on three setups: one admit on its SQLite
// file, one admit on PostgreSQL, and two admits on the same PostgreSQL
// database, each taking half the clients. Every admit runs with
// GOMAXPROCS=1 pinned to the same CPU (taskset) and the load generator to
// another, so the setups differ in the store alone; PostgreSQL itself is
// the server already running at -pg, not pinned, with synchronous_commit
// as reported. A signup counts once answered 202, which admit sends only
// after its commit returned; a 503 (shed load) is retried at once with the
// same request, as the goodput scenario's clients do.

// enginesConfig is the engines mode's command line.
type enginesConfig struct {
	src, bin, pgServer string
	clients            int
	duration, warmup   time.Duration
	rounds             int
	timeout            time.Duration
}

// engineSetup is one setup the engines mode measures.
type engineSetup struct {
	name     string
	postgres bool
	servers  int
}

var engineSetups = []engineSetup{
	{"SQLite, one admit", false, 1},
	{"PostgreSQL, one admit", true, 1},
	{"PostgreSQL, two admits", true, 2},
}

// engineResult is one setup's measurement, summed over the rounds.
type engineResult struct {
	setup    engineSetup
	accepted []time.Duration // sorted
	elapsed  time.Duration
	shed     int64
	errors   int64
	samples  []string
}

func (r *engineResult) throughput() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(len(r.accepted)) / r.elapsed.Seconds()
}

// runEnginesIfAsked runs the engines mode when it is the first argument,
// and exits.
func runEnginesIfAsked() {
	if len(os.Args) < 2 || os.Args[1] != "engines" {
		return
	}
	os.Exit(enginesMain(os.Args[2:], os.Stdout, os.Stderr))
}

// enginesMain parses the engines mode's flags, runs it and returns the
// exit status.
func enginesMain(args []string, stdout, stderr io.Writer) int {
	c := enginesConfig{}
	fs := flag.NewFlagSet("loadgen engines", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.src, "src", ".", "admit module `dir` to build")
	fs.StringVar(&c.bin, "bin", "", "prebuilt admit `binary` (skips the build)")
	fs.StringVar(&c.pgServer, "pg", os.Getenv(pgtest.EnvURL), "PostgreSQL server `URL` where a database is created per setup and dropped after")
	fs.IntVar(&c.clients, "clients", 32, "concurrent clients, split evenly between the admits of a setup")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured length of each setup in each round")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured load before each measurement")
	fs.IntVar(&c.rounds, "rounds", 2, "rounds; each runs every setup once, in turn")
	fs.DurationVar(&c.timeout, "timeout", 15*time.Minute, "upper bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case c.pgServer == "":
		fmt.Fprintf(stderr, "loadgen engines: -pg (or %s) must name a PostgreSQL server\n", pgtest.EnvURL)
		return 2
	case c.clients < 2 || c.clients > 1024 || c.rounds < 1 || c.rounds > 10 || c.duration < time.Second:
		fmt.Fprintln(stderr, "loadgen engines: -clients from 2 to 1024, -rounds from 1 to 10, -duration at least 1s")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	results, pin, syncCommit, err := runEngines(ctx, c, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen engines:", err)
		return 1
	}
	reportEngines(stdout, c, results, pin, syncCommit)
	return 0
}

// runEngines measures every setup once per round and returns the results
// in engineSetups' order.
func runEngines(ctx context.Context, c enginesConfig, log io.Writer) ([]*engineResult, pinning, string, error) {
	work, err := os.MkdirTemp("", "admit-engines-")
	if err != nil {
		return nil, pinning{}, "", err
	}
	defer os.RemoveAll(work)
	bin := c.bin
	if bin == "" {
		fmt.Fprintf(log, "building admit from %s\n", c.src)
		if bin, err = buildAdmit(ctx, c.src, work, log); err != nil {
			return nil, pinning{}, "", err
		}
	}
	pin := choosePinning()
	if pin.note == "" {
		if err := pinProcess(os.Getpid(), pin.loadCPU); err != nil {
			pin.note = err.Error()
		} else {
			runtime.GOMAXPROCS(1)
		}
	}
	results := make([]*engineResult, len(engineSetups))
	for i, s := range engineSetups {
		results[i] = &engineResult{setup: s}
	}
	syncCommit := ""
	for round := range c.rounds {
		for i, s := range engineSetups {
			fmt.Fprintf(log, "%s  round %d: %s\n", time.Now().Format("15:04:05"), round+1, s.name)
			sc, err := measureSetup(ctx, c, bin, filepath.Join(work, fmt.Sprintf("r%d-s%d", round, i)), s, pin, results[i])
			if err != nil {
				return nil, pin, "", fmt.Errorf("%s: %w", s.name, err)
			}
			if sc != "" {
				syncCommit = sc
			}
		}
	}
	for _, r := range results {
		slices.Sort(r.accepted)
	}
	return results, pin, syncCommit, nil
}

// measureSetup starts the setup's admits on a fresh database, creates a
// program, runs the warm-up and the measured load, adds the outcome to
// res and stops everything. It returns PostgreSQL's synchronous_commit.
func measureSetup(ctx context.Context, c enginesConfig, bin, dir string, s engineSetup, pin pinning, res *engineResult) (syncCommit string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	extra := append(randomServerKeys(), "ADMIT_REQUEST_ID_HEADER="+attemptHeader)
	if pin.note == "" {
		extra = append(extra, "GOMAXPROCS=1")
	}
	if s.postgres {
		dbURL, drop, err := pgtest.Create(ctx, c.pgServer)
		if err != nil {
			return "", fmt.Errorf("create a database: %w", err)
		}
		defer func() { err = errors.Join(err, drop()) }()
		extra = append(extra, "ADMIT_DATABASE_URL="+dbURL)
		if syncCommit, err = showSynchronousCommit(ctx, dbURL); err != nil {
			return "", err
		}
	}
	var servers []*server
	defer func() {
		for _, srv := range servers {
			err = errors.Join(err, srv.stop())
		}
	}()
	for i := range s.servers {
		data := filepath.Join(dir, fmt.Sprintf("data%d", i))
		if err := os.MkdirAll(data, 0o700); err != nil {
			return syncCommit, err
		}
		srv, err := startServer(ctx, bin, data, filepath.Join(dir, fmt.Sprintf("admit%d.log", i)), false, 0, extra...)
		if err != nil {
			return syncCommit, err
		}
		servers = append(servers, srv)
		if pin.note == "" {
			if err := pinProcess(srv.Pid(), pin.admitCPU); err != nil {
				return syncCommit, err
			}
		}
	}
	clients := make([]*client, len(servers))
	for i, srv := range servers {
		clients[i] = newClient(srv.BaseURL, srv.DevSignInKey(), 2*c.clients)
	}
	owner, err := clients[0].signIn(ctx, ownerEmail)
	if err != nil {
		return syncCommit, fmt.Errorf("owner sign-in: %w", err)
	}
	p, err := createProgram(ctx, clients[0], owner, fmt.Sprintf("engines-%d", time.Now().UnixNano()%1e9))
	if err != nil {
		return syncCommit, err
	}
	seq := new(atomic.Int64)
	if c.warmup > 0 {
		engineLoad(ctx, clients, p, c.clients, c.warmup, seq, &engineResult{})
	}
	engineLoad(ctx, clients, p, c.clients, c.duration, seq, res)
	return syncCommit, nil
}

// engineLoad runs n clients, client i against admit i mod len(clients),
// each sending signups one after the other for dur, and adds each accepted
// signup's latency (from its first attempt to its 202) to res.
func engineLoad(ctx context.Context, clients []*client, p *program, n int, dur time.Duration, seq *atomic.Int64, res *engineResult) {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	begin := time.Now()
	deadline := begin.Add(dur)
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%len(clients)]
			var lat []time.Duration
			var shed, errs int64
			var samples []string
			for ctx.Err() == nil && time.Now().Before(deadline) {
				body := signupBody(p, fmt.Sprintf("engines-%d@example.test", seq.Add(1)))
				t0 := time.Now()
				for ctx.Err() == nil {
					resp, _, err := c.do(ctx, request{Method: http.MethodPost, Path: "/api/public/programs/" + p.Slug + "/signups",
						ContentType: "application/json", Body: body, Want: http.StatusAccepted})
					if err == nil {
						lat = append(lat, time.Since(t0))
						break
					}
					if resp != nil && resp.StatusCode == http.StatusServiceUnavailable {
						shed++
						continue
					}
					errs++
					if len(samples) < maxErrorSamples {
						samples = append(samples, err.Error())
					}
					break
				}
			}
			mu.Lock()
			res.accepted = append(res.accepted, lat...)
			res.shed += shed
			res.errors += errs
			res.samples = append(res.samples, samples...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed += time.Since(begin)
}

// randomServerKeys are ADMIT_SECRET_* lines with fresh keys, the same for
// every admit of a setup.
func randomServerKeys() []string {
	var env []string
	for _, n := range config.SecretNames {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		env = append(env, "ADMIT_SECRET_"+strings.ToUpper(n)+"="+hex.EncodeToString(b))
	}
	return env
}

// showSynchronousCommit reads the database's synchronous_commit.
func showSynchronousCommit(ctx context.Context, dbURL string) (string, error) {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v string
	if err := db.QueryRowContext(ctx, `SHOW synchronous_commit`).Scan(&v); err != nil {
		return "", fmt.Errorf("read synchronous_commit: %w", err)
	}
	return v, nil
}

// reportEngines prints each setup's durable signups a second and p99, and
// the ratios against SQLite and against one PostgreSQL admit.
func reportEngines(w io.Writer, c enginesConfig, results []*engineResult, pin pinning, syncCommit string) {
	fmt.Fprintf(w, "engines: %d clients, %d round(s) of %s per setup (after %s warm-up); %s; PostgreSQL synchronous_commit=%s (server not pinned)\n",
		c.clients, c.rounds, c.duration, c.warmup, pin, syncCommit)
	fmt.Fprintf(w, "%-24s %12s %10s %10s %8s %7s\n", "setup", "signups/s", "p50 ms", "p99 ms", "503s", "errors")
	for _, r := range results {
		fmt.Fprintf(w, "%-24s %12.0f %10s %10s %8d %7d\n", r.setup.name, r.throughput(),
			ms(percentile(r.accepted, 50)), ms(percentile(r.accepted, 99)), r.shed, r.errors)
		for _, s := range r.samples {
			fmt.Fprintf(w, "    error: %s\n", s)
		}
	}
	lite, pg1, pg2 := results[0], results[1], results[2]
	ratio := func(a, b float64) string {
		if b == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	p99 := func(r *engineResult) float64 { return float64(percentile(r.accepted, 99)) }
	fmt.Fprintf(w, "PostgreSQL / SQLite, one admit:   signups/s ×%s, p99 ×%s\n", ratio(pg1.throughput(), lite.throughput()), ratio(p99(pg1), p99(lite)))
	fmt.Fprintf(w, "two admits / one, on PostgreSQL:  signups/s ×%s, p99 ×%s\n", ratio(pg2.throughput(), pg1.throughput()), ratio(p99(pg2), p99(pg1)))
}
