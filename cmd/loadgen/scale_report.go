package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Targets of the scale mode, at the largest size.
const (
	targetScalePageP95 = 15 * time.Millisecond
	targetScaleHold    = 50 * time.Millisecond
	targetScaleExport  = 80 << 20
	targetScaleRestore = 30 * time.Second
)

// writeScaleReport writes the scale tables: page p95 by size, then the
// costs by size, then the targets at the largest size.
func writeScaleReport(w io.Writer, m machine, results []*scaleResult) {
	if len(results) == 0 {
		return
	}
	fmt.Fprintf(w, "## Scale\n\n%s, %d CPUs, %s, %s; disk %s; load average %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"),
		m.CPUs, m.CPUModel, m.GoVersion, m.Disk, loadAverages())
	t := scaleTable{w: w, results: results}
	writeScalePages(t)
	fmt.Fprintln(w)
	writeScaleCosts(t)
	fmt.Fprintln(w)
	writeScaleTargets(w, results[len(results)-1])
}

// scaleTable writes a Markdown table with one column per database size.
type scaleTable struct {
	w       io.Writer
	results []*scaleResult
}

// head writes the header row, first naming the rows, then the sizes.
func (t scaleTable) head(first string) {
	fmt.Fprintf(t.w, "| %s |", first)
	for _, r := range t.results {
		fmt.Fprintf(t.w, " %s |", sizeName(r.N))
	}
	fmt.Fprint(t.w, "\n|---|")
	for range t.results {
		fmt.Fprint(t.w, "---:|")
	}
	fmt.Fprintln(t.w)
}

// row writes one row: name, then cell of each size's result.
func (t scaleTable) row(name string, cell func(*scaleResult) string) {
	fmt.Fprintf(t.w, "| %s |", name)
	for _, r := range t.results {
		fmt.Fprintf(t.w, " %s |", cell(r))
	}
	fmt.Fprintln(t.w)
}

// writeScalePages writes each owner page's p95 (and p50) by size.
func writeScalePages(t scaleTable) {
	t.head("page p95 (p50), ms")
	for _, name := range scalePages {
		if t.results[len(t.results)-1].Pages[name] == nil {
			continue
		}
		t.row(name, func(r *scaleResult) string {
			res := r.Pages[name]
			if res == nil {
				return "–"
			}
			errs := ""
			if res.Errors > 0 {
				errs = fmt.Sprintf(", %d errors", res.Errors)
			}
			return fmt.Sprintf("%s (%s)%s", ms(res.Percentile(95)), ms(res.Percentile(50)), errs)
		})
	}
}

// writeScaleCosts writes what each size costs: disk, start, sync, sweep,
// export, retirement, stop, verify, restore, scrape and seeding.
func writeScaleCosts(t scaleTable) {
	t.head("cost")
	t.row("programs (largest)", func(r *scaleResult) string { return fmt.Sprintf("%d (%d)", r.Programs, r.Largest) })
	t.row("database size per entry", func(r *scaleResult) string {
		return fmt.Sprintf("%d B (%s MiB)", r.DBBytes/int64(r.N), mib(r.DBBytes))
	})
	t.row("start to ready, first start (median of later)", func(r *scaleResult) string {
		return fmt.Sprintf("%s ms (%s ms)", ms(r.FirstReady), ms(median(r.Ready)))
	})
	t.row("replica's first full sync after start", func(r *scaleResult) string { return secs(r.FirstSync) })
	t.row("sweep at start: erased, time", func(r *scaleResult) string {
		return fmt.Sprintf("%d in %s", r.SweepErased, secs(r.SweepTook))
	})
	t.row("sweep: write txs, longest hold, > 50 ms (commits > 50 ms, longest commit)", func(r *scaleResult) string { return holdCell(r.SweepHolds) })
	t.row("CSV export of the largest: time, size", func(r *scaleResult) string {
		return fmt.Sprintf("%s, %s MiB", secs(r.ExportTook), mib(r.ExportBytes))
	})
	t.row("CSV export: admit's peak RSS (before)", func(r *scaleResult) string {
		return fmt.Sprintf("%s MiB (%s)", mib(r.ExportRSS), mib(r.ExportBase))
	})
	t.row("CSV export: write txs, longest hold, > 50 ms (commits > 50 ms, longest commit)", func(r *scaleResult) string { return holdCell(r.ExportHolds) })
	t.row("retirement of the largest: time", func(r *scaleResult) string {
		if r.RetireErr != "" {
			return secs(r.RetireTook) + " (answer lost: write timeout)"
		}
		return secs(r.RetireTook)
	})
	t.row("retirement: write txs, longest hold, > 50 ms (commits > 50 ms, longest commit)", func(r *scaleResult) string { return holdCell(r.RetireHolds) })
	t.row("longest stop, SIGTERM to exit", func(r *scaleResult) string { return secs(r.Stop) })
	t.row("`admit backup verify`: time (CPU, peak RSS)", func(r *scaleResult) string {
		return fmt.Sprintf("%s (%s, %s MiB)", secs(r.Verify), secs(r.VerifyCPU), mib(r.VerifyRSS))
	})
	t.row("`admit restore`: time (CPU, peak RSS)", func(r *scaleResult) string {
		return fmt.Sprintf("%s (%s, %s MiB)", secs(r.Restore), secs(r.RestoreCPU), mib(r.RestoreRSS))
	})
	t.row("one metrics scrape", func(r *scaleResult) string { return ms(r.Scrape) + " ms" })
	t.row("seeding (loadgen, admit stopped)", func(r *scaleResult) string { return secs(r.Seed) })
	t.row("disk before seeding: fsyncs, p50, p99, longest, > 50 ms", func(r *scaleResult) string {
		d := r.Disk
		return fmt.Sprintf("%d in %s, %s ms, %s ms, %s ms, %d", d.N, secs(d.Length), ms(d.P50), ms(d.P99), ms(d.Max), d.Over50ms)
	})
}

// writeScaleTargets says which targets the largest size meets.
func writeScaleTargets(w io.Writer, r *scaleResult) {
	fmt.Fprintf(w, "Targets at %s entries:\n\n", sizeName(r.N))
	var worst time.Duration
	worstName := ""
	for _, name := range scalePages {
		if res := r.Pages[name]; res != nil && res.Percentile(95) > worst {
			worst, worstName = res.Percentile(95), name
		}
	}
	targetLine(w, worst <= targetScalePageP95, fmt.Sprintf("every page p95 ≤ %s: worst %s ms (%s)", targetScalePageP95, ms(worst), worstName))
	hold := max(r.SweepHolds.Max, r.ExportHolds.Max, -r.ExportHolds.Max, r.RetireHolds.Max, -r.RetireHolds.Max)
	targetLine(w, r.SweepHolds.Over == 0 && r.ExportHolds.Over == 0 && r.RetireHolds.Over == 0,
		fmt.Sprintf("no write-lock hold > %s: %d in the sweep, %d in the export, %d in the retirement; longest since start %s ms",
			targetScaleHold, r.SweepHolds.Over, r.ExportHolds.Over, r.RetireHolds.Over, ms(hold)))
	targetLine(w, r.ExportRSS <= targetScaleExport, fmt.Sprintf("export peak RSS ≤ %s MiB: %s MiB", mib(targetScaleExport), mib(r.ExportRSS)))
	targetLine(w, r.Restore <= targetScaleRestore, fmt.Sprintf("restore ≤ %s: %s", targetScaleRestore, secs(r.Restore)))
	fmt.Fprintln(w)
}

// targetLine writes one target line.
func targetLine(w io.Writer, ok bool, what string) {
	mark := "met"
	if !ok {
		mark = "NOT met"
	}
	fmt.Fprintf(w, "- %s — %s\n", what, mark)
}

// holdCell is "txs, longest ms, over (commits over, longest commit)"; a
// negative Max or CommitMax means the longest
// hold since start came before, so this one's is at most that.
func holdCell(h holds) string {
	longest := func(d time.Duration) string {
		if d < 0 {
			return "≤ " + ms(-d) + " ms"
		}
		return ms(d) + " ms"
	}
	return fmt.Sprintf("%d, %s, %d (%d, %s)", h.Count, longest(h.Max), h.Over, h.CommitOver, longest(h.CommitMax))
}

// secs formats a duration in seconds.
func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// sizeName is 10k, 100k, 1M.
func sizeName(n int) string {
	switch {
	case n >= 1000000 && n%1000000 == 0:
		return fmt.Sprintf("%dM", n/1000000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// loadAverages is /proc/loadavg's three averages (1, 5 and 15 minutes).
func loadAverages() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
