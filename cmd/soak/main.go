// Command soak checks that admit's continuous backup survives crashes: it
// builds the real binary, starts it on a temporary data directory with a file
// replica in its litestream.yml, drives signups from many clients, kills the
// server with SIGKILL under load and restarts it at once while the load goes
// on, cycle after cycle. After every restart (and a few seconds more load) it
// pauses the load and restores the replica's latest state and every transaction
// ID (restore point) the replica gained since the previous check, runs
// integrity_check on each and compares the rows with what the server
// acknowledged:
//
//   - every restore point passes integrity_check and foreign_key_check;
//   - no entry present at one point is missing at a later one;
//   - every entry was an attempted signup, and has its signup receipt;
//   - entry_state_counts agrees with the entries;
//   - every entry has exactly one signup event, and every signup event its
//     entry;
//   - once the replica has caught up after a restart, its latest state
//     holds every signup answered 202 and not removed, and none whose
//     removal was answered 200;
//   - by then neither the database file nor its WAL holds a removed
//     address in any page version (the eraser's flush, across crashes).
//
// Every tenth acknowledged signup of each client is removed at once with its
// private link (-remove-every), so erasures and their flushes run under the
// load and across the kills.
//
// It prints each cycle's counts and the totals, and exits 1 when any restore
// point is corrupt, any acknowledged signup is missing or any removed one
// is still held.
//
//	go run ./cmd/soak [flags]        (or: just soak)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Config is the soak's configuration, from the command line.
type Config struct {
	// Src is the admit module directory that is built; Bin, when set, is a
	// prebuilt admit binary used instead.
	Src, Bin string
	// Dir is the work directory (temporary when empty); Keep leaves it.
	Dir  string
	Keep bool
	// Cycles is how many times the server is killed and restarted.
	Cycles int
	// Load is how long signups run before each kill, and again after each
	// restart (the load does not pause for the restart).
	Load time.Duration
	// Clients is how many clients send signups concurrently.
	Clients int
	// Rates cap the signups sent per second, all clients together, cycle
	// by cycle in turn; zero means as fast as the server answers. Slow and
	// fast cycles end in different WAL states at the kill.
	Rates []float64
	// CatchUp bounds the wait for the replica to hold every acknowledged
	// signup after a restart.
	CatchUp time.Duration
	// RemoveEvery makes each client remove every RemoveEvery-th of its
	// acknowledged signups at once with its private link; 0 removes none.
	RemoveEvery int
	// Timeout bounds the whole run.
	Timeout time.Duration
}

func parseFlags(args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := Config{}
	fs.StringVar(&c.Src, "src", ".", "admit module directory to build")
	fs.StringVar(&c.Bin, "bin", "", "use this prebuilt admit binary instead of building one")
	fs.StringVar(&c.Dir, "dir", "", "work directory (default: a new temporary directory)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the work directory (database, replica, logs) afterwards")
	fs.IntVar(&c.Cycles, "cycles", 20, "SIGKILL-and-restart cycles")
	fs.DurationVar(&c.Load, "load", 2*time.Second, "signup load before each kill and again after each restart")
	fs.IntVar(&c.Clients, "clients", 32, "concurrent signup clients")
	rates := fs.String("rate", "25,50,0", "signups per second, all clients together, for each cycle in turn (0: as fast as the server answers)")
	fs.DurationVar(&c.CatchUp, "catch-up", 30*time.Second, "how long the replica may take to hold every acknowledged signup after a restart")
	fs.IntVar(&c.RemoveEvery, "remove-every", 10, "each client removes every Nth of its acknowledged signups with its private link (0: none)")
	fs.DurationVar(&c.Timeout, "timeout", 30*time.Minute, "bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if c.Rates, err = parseRates(*rates); err != nil {
		return c, err
	}
	switch {
	case c.Cycles < 1:
		return c, fmt.Errorf("-cycles must be at least 1")
	case c.Clients < 1:
		return c, fmt.Errorf("-clients must be at least 1")
	case c.RemoveEvery < 0:
		return c, fmt.Errorf("-remove-every must be 0 or more")
	case c.Load <= 0 || c.CatchUp <= 0 || c.Timeout <= 0:
		return c, fmt.Errorf("-load, -catch-up and -timeout must be positive")
	}
	return c, nil
}

// parseRates reads a comma-separated list of non-negative rates.
func parseRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || r < 0 || math.IsInf(r, 0) {
			return nil, fmt.Errorf("-rate: %q is not a number of signups per second", f)
		}
		out = append(out, r)
	}
	return out, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	// Litestream's restore logs at Info and Debug; keep its warnings.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	sum, err := run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	if !sum.Clean() {
		os.Exit(1)
	}
}
