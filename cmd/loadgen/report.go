package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Targets on the 2-core machine (issue 7).
const (
	targetSignupFraction = 0.5
	targetSignupP99      = 25 * time.Millisecond
	targetQueueP95       = 15 * time.Millisecond
	targetPrivateRate    = 5000.0
	targetPeakRSS        = 80 << 20
	targetStartToReady   = 200 * time.Millisecond
)

// machine describes where the run happened.
type machine struct {
	CPUs      int
	CPUModel  string
	Disk      string
	GoVersion string
	Kernel    string
}

// machineInfo reads the CPU model and the file system under dir.
func machineInfo(dir string) machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), CPUModel: "unknown", Disk: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPUModel = cpuModel(string(b))
	}
	if b, err := os.ReadFile("/proc/mounts"); err == nil {
		m.Disk = mountOf(string(b), dir)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// cpuModel is the first "model name" in /proc/cpuinfo text.
func cpuModel(cpuinfo string) string {
	for _, line := range strings.Split(cpuinfo, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// mountOf names the device and file system of the longest mount point
// that contains dir, from /proc/mounts text.
func mountOf(mounts, dir string) string {
	best, bestLen := "unknown", -1
	for _, line := range strings.Split(mounts, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		mp := f[1]
		if dir == mp || strings.HasPrefix(dir, strings.TrimSuffix(mp, "/")+"/") {
			if len(mp) > bestLen {
				best, bestLen = fmt.Sprintf("%s (%s on %s, %s)", f[0], f[2], mp, f[3]), len(mp)
			}
		}
	}
	return best
}

// serverErrors counts ERROR lines in the server's log.
func serverErrors(logPath string) int {
	f, err := os.Open(logPath)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "level=ERROR") {
			n++
		}
	}
	return n
}

// check is one target's verdict.
type check struct {
	Target string
	Got    string
	Met    bool
}

// evaluate compares the results with the targets.
func evaluate(results []*Result, ceil *Result, ready []time.Duration) []check {
	var out []check
	find := func(name string) *Result {
		for _, r := range results {
			if r.Name == name {
				return r
			}
		}
		return nil
	}
	for _, name := range []string{"a. signup JSON", "a. signup HTML form"} {
		r := find(name)
		if r == nil {
			continue
		}
		if ceil != nil && ceil.Throughput() > 0 {
			f := r.Throughput() / ceil.Throughput()
			out = append(out, check{fmt.Sprintf("%s ≥ %.0f%% of the raw FULL ceiling", name, targetSignupFraction*100),
				fmt.Sprintf("%.0f%% (%.0f of %.0f /s)", f*100, r.Throughput(), ceil.Throughput()), f >= targetSignupFraction})
		}
		out = append(out, check{fmt.Sprintf("%s p99 ≤ %v", name, targetSignupP99), ms(r.Percentile(99)) + " ms",
			r.Percentile(99) <= targetSignupP99})
		out = append(out, check{name + " errors = 0", fmt.Sprint(r.Errors), r.Errors == 0})
	}
	if r := find("b. mixed 70/20/10"); r != nil {
		out = append(out, check{"b. mixed errors = 0", fmt.Sprint(r.Errors), r.Errors == 0})
	}
	for _, r := range results {
		if (strings.HasPrefix(r.Name, "c. queue") && !strings.Contains(r.Name, "state=")) || strings.HasPrefix(r.Name, "c. program") {
			out = append(out, check{fmt.Sprintf("%s p95 ≤ %v", r.Name, targetQueueP95), ms(r.Percentile(95)) + " ms",
				r.Percentile(95) <= targetQueueP95 && r.Errors == 0})
		}
	}
	for _, r := range results {
		if strings.HasPrefix(r.Name, "d. private") {
			out = append(out, check{fmt.Sprintf("%s ≥ %.0f/s", r.Name, targetPrivateRate), fmt.Sprintf("%.0f/s", r.Throughput()),
				r.Throughput() >= targetPrivateRate && r.Errors == 0})
		}
	}
	var peak int64
	peakOf := ""
	for _, r := range results {
		if r.PeakRSS > peak {
			peak, peakOf = r.PeakRSS, r.Name
		}
	}
	if peak > 0 {
		out = append(out, check{"peak RSS ≤ 80 MiB in every scenario", fmt.Sprintf("%s MiB (%s)", mib(peak), peakOf), peak <= targetPeakRSS})
	}
	if len(ready) > 0 {
		worst := slices.Max(ready)
		out = append(out, check{fmt.Sprintf("start to ready ≤ %v with the seeded queue", targetStartToReady),
			fmt.Sprintf("median %s ms, max %s ms (%d starts)", ms(median(ready)), ms(worst), len(ready)), worst <= targetStartToReady})
	}
	return out
}

// writeReport prints the run as Markdown, ready for docs/PERFORMANCE.md.
func writeReport(w io.Writer, cfg *Config, m machine, results []*Result, ceil *Result, ready []time.Duration, serverErrs int) {
	fmt.Fprintf(w, "## Load run %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "- machine: %d CPUs, %s; kernel %s\n", m.CPUs, m.CPUModel, m.Kernel)
	fmt.Fprintf(w, "- disk: %s\n", m.Disk)
	fmt.Fprintf(w, "- %s; write scenarios %v with %d clients, owner queue %v with %d clients, private reads %v with %d clients; warm-up %v; %d seeded entries\n\n",
		m.GoVersion, cfg.Duration, cfg.Clients, cfg.ReadDuration, cfg.OwnerClients, cfg.ReadDuration, cfg.ReadClients, cfg.Warmup, cfg.Entries)
	fmt.Fprintln(w, "| scenario | clients | requests | req/s | p50 ms | p95 ms | p99 ms | max ms | errors | peak RSS MiB | DB MiB + WAL MiB | server CPU µs/req |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		rss := "—"
		if r.PeakRSS > 0 {
			rss = mib(r.PeakRSS)
		}
		slowest := time.Duration(0)
		if n := len(r.Latencies); n > 0 {
			slowest = r.Latencies[n-1]
		}
		cpu := "—"
		if r.ServerCPU > 0 {
			cpu = us(r.CPUPerRequest())
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.0f | %s | %s | %s | %s | %d | %s | %s + %s | %s |\n", r.Name, r.Clients, r.Requests(),
			r.Throughput(), ms(r.Percentile(50)), ms(r.Percentile(95)), ms(r.Percentile(99)), ms(slowest), r.Errors, rss,
			mib(r.DBBytes), mib(r.WALBytes), cpu)
	}
	if len(ready) > 0 {
		parts := make([]string, len(ready))
		for i, d := range ready {
			parts[i] = ms(d)
		}
		fmt.Fprintf(w, "\nStart to ready (process start → first 200 from /readyz) with the seeded database: %s ms.\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "\nServer log lines at level ERROR: %d.\n\n", serverErrs)
	fmt.Fprintln(w, "| target | measured | met |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, c := range evaluate(results, ceil, ready) {
		v := "yes"
		if !c.Met {
			v = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", c.Target, c.Got, v)
	}
}
