// Command loadgen measures admit's speed and cost: it builds the real binary,
// starts it on a temporary data directory (development identity, loopback
// only) and drives it over HTTP, scenario by scenario, reporting throughput,
// p50/p95/p99 latency, errors, the server's peak RSS and the database size.
//
//	go run ./cmd/loadgen [flags]        (or: just bench)
//
// Scenarios (docs/PERFORMANCE.md#current-figures):
//
//	ceiling  single-row BEGIN IMMEDIATE INSERT transactions with
//	         synchronous=FULL on the same disk: the fsync-bound ceiling
//	signup   distinct JSON signups from -clients clients
//	form     the same through the HTML form (urlencoded)
//	mixed    public traffic: 70% new, 20% duplicate, 10% invalid signups
//	queue    the owner queue (HTML and API) at -entries entries: first page,
//	         a deep cursor page, a state filter, a search by exact address
//	         and by local-part prefix; plus start-to-ready time
//	private  private-content reads (HTML and API) by a redeemed recipient
//	overload (only when named) JSON signups at each -sweep concurrency
//	         level, past what the writer commits: accepted and shed (503)
//	         counts and latencies, the owner queue page's p95 alongside,
//	         and the server's CPU time per accepted signup
//	goodput  (only when named) JSON signups from each -goodput-levels
//	         level, clients retrying at once after a 503, with admit and
//	         loadgen pinned to a core each (taskset): goodput and accepted
//	         p99 as ratios against the first level, refusals' p99 from
//	         admit's own request log, less any hold (goodput.go)
//	timing   (only when named) one request at a time, signups of new and of
//	         listed addresses interleaved (-timing-pairs of each, JSON and
//	         form): the Mann-Whitney z of their latencies, which must stay
//	         within ±3 so that timing does not tell who is listed
//
// With -scale 10000,100000,1000000 it runs the scale mode instead
// (scale.go): for each size a fresh database of that many entries over
// several programs, with a file replica; the owner pages of the largest
// program, its CSV export, the retention sweep at start, its retirement,
// their longest write-lock holds, and `admit backup verify` and
// `admit restore` (docs/PERFORMANCE.md#the-scale-run).
//
// Every loop is bounded in count (-max-requests) and time (-duration,
// -read-duration); the whole run is bounded by -timeout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"admit/store"
)

// Config is the load run's configuration, from the command line.
type Config struct {
	// Src is the admit module directory that is built; Bin, when set, is a
	// prebuilt admit binary used instead.
	Src, Bin string
	// Dir is the work directory (temporary when empty); Keep leaves it.
	Dir  string
	Keep bool
	// Duration bounds each write scenario and the ceiling; ReadDuration
	// each read scenario; Warmup runs before each, unmeasured.
	Duration, ReadDuration, Warmup time.Duration
	// Clients drive the signup scenarios, OwnerClients the owner queue,
	// ReadClients the private reads.
	Clients, OwnerClients, ReadClients int
	// Entries is how many entries the queue scenario seeds.
	Entries int
	// Restarts is how often start-to-ready is measured.
	Restarts int
	// MaxRequests bounds each scenario's request count.
	MaxRequests int64
	// Timeout bounds the whole run.
	Timeout time.Duration
	// Scenarios lists the scenarios to run, in the order of allScenarios.
	Scenarios []string
	// PprofDir, when set, receives a CPU profile of the server for each
	// scenario (needs an admit that honours ADMIT_PPROF_ADDR).
	PprofDir string
	// SelfProfile, when set, receives a CPU profile of loadgen itself.
	SelfProfile string
	// TimingPairs is how many new and how many listed signups the timing
	// scenario sends per route.
	TimingPairs int
	// Sweep lists the overload scenario's concurrency levels.
	Sweep []int
	// GoodputLevels lists the goodput scenario's concurrency levels; the
	// first is the one the others are judged against.
	GoodputLevels []int
	// Pin pins admit and loadgen to a CPU each when the goodput scenario
	// runs (taskset).
	Pin bool
	// WriteQueue, when not 0, is the server's ADMIT_WRITE_QUEUE.
	WriteQueue int
	// Scale, when set, runs the scale mode (scale.go) for each entry count
	// instead of the scenarios.
	Scale []int
}

// allScenarios are the scenario names in the order they run.
var allScenarios = []string{"ceiling", "signup", "form", "mixed", "timing", "queue", "private", "overload", "goodput"}

// defaultScenarios run when -scenarios is not given: timing and the
// overload sweep are checks of their own (just bench-timing,
// just bench-overload), not throughput figures.
var defaultScenarios = []string{"ceiling", "signup", "form", "mixed", "queue", "private"}

// maxQueueEntries is the largest queue a program may hold.
const maxQueueEntries = store.MaxProgramCap

// parseFlags reads the command line into a Config and checks its bounds.
func parseFlags(args []string, stderr io.Writer) (*Config, error) {
	c := &Config{}
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scen, sweep, goodput := c.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	errs := c.checkBounds()
	var err error
	if c.Scenarios, err = parseScenarios(*scen); err != nil {
		errs = append(errs, err)
	}
	if c.Sweep, err = parseSweep(*sweep); err != nil {
		errs = append(errs, err)
	}
	if c.GoodputLevels, err = parseSweep(*goodput); err != nil {
		errs = append(errs, fmt.Errorf("-goodput-levels: %w", err))
	}
	return c, errors.Join(errs...)
}

// register defines every flag on fs, filling c, and returns the
// -scenarios, -sweep and -goodput-levels lists, which parseScenarios and
// parseSweep read.
func (c *Config) register(fs *flag.FlagSet) (scenarios, sweep, goodput *string) {
	fs.StringVar(&c.Src, "src", ".", "admit module `dir` to build")
	fs.StringVar(&c.Bin, "bin", "", "prebuilt admit `binary` (skips the build)")
	fs.StringVar(&c.Dir, "dir", "", "work `dir` for the database and ceiling file (default: a new temp dir)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the work dir afterwards")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "length of each write scenario and of the ceiling")
	fs.DurationVar(&c.ReadDuration, "read-duration", 5*time.Second, "length of each read scenario")
	fs.DurationVar(&c.Warmup, "warmup", time.Second, "unmeasured warm-up before each scenario (0 for none)")
	fs.IntVar(&c.Clients, "clients", 32, "concurrent clients for signup, form and mixed")
	fs.IntVar(&c.OwnerClients, "owner-clients", 4, "concurrent clients for the owner queue")
	fs.IntVar(&c.ReadClients, "read-clients", 16, "concurrent clients for private reads")
	fs.IntVar(&c.Entries, "entries", maxQueueEntries, "entries seeded for the queue scenario")
	fs.IntVar(&c.Restarts, "restarts", 5, "start-to-ready measurements with the seeded database")
	fs.Int64Var(&c.MaxRequests, "max-requests", 90000, "upper bound on requests per scenario")
	fs.DurationVar(&c.Timeout, "timeout", 10*time.Minute, "upper bound on the whole run")
	fs.StringVar(&c.PprofDir, "pprof-dir", "", "write a server CPU profile per scenario to `dir` (needs ADMIT_PPROF_ADDR support)")
	fs.StringVar(&c.SelfProfile, "self-cpuprofile", "", "write loadgen's own CPU profile to `file`")
	fs.IntVar(&c.TimingPairs, "timing-pairs", 1000, "new and listed signups per route in the timing scenario")
	fs.Func("scale", "scale mode: comma-separated entry `counts` (e.g. 10000,100000,1000000), each seeded and measured in turn", func(v string) (err error) {
		c.Scale, err = parseScale(v)
		return err
	})
	fs.BoolVar(&c.Pin, "pin", true, "with the goodput scenario, pin admit and loadgen to a CPU each (taskset, GOMAXPROCS=1)")
	fs.IntVar(&c.WriteQueue, "write-queue", 0, "the server's ADMIT_WRITE_QUEUE (0: admit's default)")
	return fs.String("scenarios", strings.Join(defaultScenarios, ","), "comma-separated scenarios: "+strings.Join(allScenarios, ", ")),
		fs.String("sweep", joinInts(sweepLevels), "comma-separated concurrency levels of the overload scenario (1 to 4096 each)"),
		fs.String("goodput-levels", joinInts(goodputLevels), "comma-separated concurrency levels of the goodput scenario; the first is the reference (1 to 4096 each)")
}

// joinInts lists ns separated by commas.
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// parseSweep reads -sweep: concurrency levels from 1 to 4096, in the
// order given.
func parseSweep(list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 4096 {
			return nil, fmt.Errorf("-sweep: %q is not a concurrency level from 1 to 4096", s)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("-sweep names no level")
	}
	return out, nil
}

// checkBounds checks every numeric flag against its range, one error per
// flag out of range.
func (c *Config) checkBounds() []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"duration", c.Duration}, {"read-duration", c.ReadDuration}} {
		if d.v < 100*time.Millisecond || d.v > 10*time.Minute {
			bad("-%s=%v must be from 100ms to 10m", d.name, d.v)
		}
	}
	if c.Warmup < 0 || c.Warmup > time.Minute {
		bad("-warmup=%v must be from 0 to 1m", c.Warmup)
	}
	if c.Timeout < time.Second || c.Timeout > time.Hour {
		bad("-timeout=%v must be from 1s to 1h", c.Timeout)
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"clients", c.Clients}, {"owner-clients", c.OwnerClients}, {"read-clients", c.ReadClients}} {
		if n.v < 1 || n.v > 1024 {
			bad("-%s=%d must be from 1 to 1024", n.name, n.v)
		}
	}
	if c.Entries < 1000 || c.Entries > maxQueueEntries {
		bad("-entries=%d must be from 1000 to %d (a program's queue cap)", c.Entries, maxQueueEntries)
	}
	if c.TimingPairs < 10 || c.TimingPairs > 20000 {
		bad("-timing-pairs=%d must be from 10 to 20000", c.TimingPairs)
	}
	if c.WriteQueue < 0 || c.WriteQueue > 100000 {
		bad("-write-queue=%d must be from 0 (admit's default) to 100000", c.WriteQueue)
	}
	if c.Restarts < 1 || c.Restarts > 50 {
		bad("-restarts=%d must be from 1 to 50", c.Restarts)
	}
	// Each signup scenario has its own program with queue and hourly caps of
	// 100000; a few entries are made outside the measured loop.
	if c.MaxRequests < 1 || c.MaxRequests > 95000 {
		bad("-max-requests=%d must be from 1 to 95000 (a program's caps are 100000)", c.MaxRequests)
	}
	return errs
}

// parseScenarios reads -scenarios: known names, each once, returned in the
// canonical order (allScenarios) whatever order they were named in.
func parseScenarios(list string) ([]string, error) {
	var out []string
	var errs []error
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
		case !slices.Contains(allScenarios, s):
			errs = append(errs, fmt.Errorf("-scenarios: unknown scenario %q (want %s)", s, strings.Join(allScenarios, ", ")))
		case !slices.Contains(out, s):
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		errs = append(errs, errors.New("-scenarios names no scenario"))
	}
	slices.SortFunc(out, func(a, b string) int {
		return slices.Index(allScenarios, a) - slices.Index(allScenarios, b)
	})
	return out, errors.Join(errs...)
}

// wants reports whether the scenario was chosen.
func (c *Config) wants(name string) bool { return slices.Contains(c.Scenarios, name) }

func main() {
	runShedProbeIfAsked()
	runEnginesIfAsked()
	os.Exit(loadgen())
}

// loadgen runs the tool and returns its exit status, after its deferred
// work (the CPU profile's write included) is done.
func loadgen() (status int) {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if cfg.SelfProfile != "" {
		f, err := os.Create(cfg.SelfProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			return 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			fmt.Fprintln(os.Stderr, "loadgen: CPU profile:", err)
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "loadgen: write CPU profile:", err)
				status = 1
			}
		}()
	}
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		status = 1
	}
	return status
}
