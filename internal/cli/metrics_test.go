package cli

import (
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Write-lock holds and commit times told from many goroutines at once: each
// histogram counts each once, in the right bucket around the 50 ms line,
// and its gauge is the longest of them.
func TestMetrics_WriteLockHoldAndCommitHistogramsAndLongest(t *testing.T) {
	for _, tc := range []struct {
		hist, longest string
		observe       func(*metrics, time.Duration)
	}{
		{"admit_store_write_lock_hold_seconds", "admit_store_write_lock_hold_max_seconds", (*metrics).WriteLockHeld},
		{"admit_store_commit_seconds", "admit_store_commit_max_seconds", (*metrics).WriteCommit},
	} {
		t.Run(tc.hist, func(t *testing.T) {
			m := newMetrics()
			const workers, each = 64, 100
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						// 1..100 ms: i < 50 is at most 50 ms.
						tc.observe(m, time.Duration(i+1)*time.Millisecond)
						if w == 17 && i == 3 {
							tc.observe(m, 1234*time.Millisecond)
						}
					}
				}()
			}
			wg.Wait()
			fams, err := m.reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var hist *dto.Histogram
			longest := -1.0
			for _, f := range fams {
				switch f.GetName() {
				case tc.hist:
					hist = f.Metric[0].Histogram
				case tc.longest:
					longest = f.Metric[0].Gauge.GetValue()
				}
			}
			if hist == nil {
				t.Fatalf("no %s", tc.hist)
			}
			if got := hist.GetSampleCount(); got != workers*each+1 {
				t.Errorf("%d observations counted, want exactly %d", got, workers*each+1)
			}
			found := false
			for _, b := range hist.Bucket {
				if b.GetUpperBound() == 0.05 {
					found = true
					if b.GetCumulativeCount() != workers*50 {
						t.Errorf("%d of at most 50 ms, want exactly %d", b.GetCumulativeCount(), workers*50)
					}
				}
			}
			if !found {
				t.Error("the histogram has no 0.05 s bucket")
			}
			if longest != 1.234 {
				t.Errorf("longest %v s, want 1.234", longest)
			}
		})
	}
}
