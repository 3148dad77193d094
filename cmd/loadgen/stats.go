package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Result is one scenario's measurements.
type Result struct {
	Name    string
	Clients int
	// Elapsed is the wall time from the first request to the last answer.
	Elapsed time.Duration
	// Latencies are every request's time, sorted ascending.
	Latencies []time.Duration
	// Errors counts transport failures and unexpected statuses.
	Errors int
	// ErrorSamples holds the first few error messages.
	ErrorSamples []string
	// PeakRSS is the server's peak resident set during the scenario, in
	// bytes; 0 when the scenario does not run against the server.
	PeakRSS int64
	// DBBytes and WALBytes are the database and WAL file sizes afterwards.
	DBBytes, WALBytes int64
	// ServerCPU is the server's CPU time (user + system, /proc/PID/stat)
	// over the measured loop; 0 when not measured.
	ServerCPU time.Duration
}

// CPUPerRequest is the server's CPU time per completed request.
func (r *Result) CPUPerRequest() time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	return r.ServerCPU / time.Duration(len(r.Latencies))
}

// Requests is the number of completed requests, failed ones included.
func (r *Result) Requests() int { return len(r.Latencies) }

// Throughput is completed requests per second of wall time.
func (r *Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(len(r.Latencies)) / r.Elapsed.Seconds()
}

// Percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of the
// latencies: the smallest value that at least p% of requests did not exceed.
func (r *Result) Percentile(p float64) time.Duration { return percentile(r.Latencies, p) }

// percentile is the nearest-rank percentile of an ascending slice; 0 for
// an empty one.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// maxErrorSamples bounds the error messages a scenario keeps.
const maxErrorSamples = 5

// op is one request of a scenario: worker is the client's index, seq a
// number unique across the run. A nil error counts as a success.
type op func(ctx context.Context, worker int, seq int64) error

// load drives a closed loop: clients workers each send one request after
// the other until dur has passed or maxRequests were started, whichever
// comes first. Every request also has its own timeout, so the run ends
// within dur plus one request timeout.
type load struct {
	Clients     int
	Duration    time.Duration
	MaxRequests int64
	// RequestTimeout bounds each request.
	RequestTimeout time.Duration
	// seq numbers requests across runs so that every request is distinct.
	seq *atomic.Int64
}

// run executes the loop and returns the measurements, latencies sorted.
func (l load) run(ctx context.Context, name string, fn op) *Result {
	if l.seq == nil {
		l.seq = new(atomic.Int64)
	}
	res := &Result{Name: name, Clients: l.Clients}
	var (
		mu      sync.Mutex
		started atomic.Int64
		wg      sync.WaitGroup
	)
	perWorker := make([][]time.Duration, l.Clients)
	begin := time.Now()
	deadline := begin.Add(l.Duration)
	for w := range l.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1024)
			for ctx.Err() == nil && time.Now().Before(deadline) && started.Add(1) <= l.MaxRequests {
				seq := l.seq.Add(1)
				rctx, cancel := context.WithTimeout(ctx, l.RequestTimeout)
				t0 := time.Now()
				err := fn(rctx, w, seq)
				lat = append(lat, time.Since(t0))
				cancel()
				if err != nil {
					mu.Lock()
					res.Errors++
					if len(res.ErrorSamples) < maxErrorSamples {
						res.ErrorSamples = append(res.ErrorSamples, err.Error())
					}
					mu.Unlock()
				}
			}
			perWorker[w] = lat
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(begin)
	for _, lat := range perWorker {
		res.Latencies = append(res.Latencies, lat...)
	}
	slices.Sort(res.Latencies)
	return res
}

// ms formats a duration as milliseconds with two decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

// mib formats a byte count in MiB with one decimal.
func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }
