package cli

import (
	"math"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"testing"
)

func TestTuneGC_SetsEachUnlessTheOperatorChoseIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		percent uint64
		limit   uint64
	}{
		{"neither set", nil, gcPercent, gcMemoryLimit},
		{"GOGC set", map[string]string{"GOGC": "150"}, 100, gcMemoryLimit},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, gcPercent, math.MaxInt64},
		{"both set", map[string]string{"GOGC": "off", "GOMEMLIMIT": "1GiB"}, 100, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resetGC(t)
			tuneGC(mustLoadConfig(t, tc.env).GC)
			if p, l := gcSettings(); p != tc.percent || l != tc.limit {
				t.Errorf("GOGC %d, memory limit %d; want %d, %d", p, l, tc.percent, tc.limit)
			}
		})
	}
}

// gcSettings reads the collector's target and memory limit as the runtime
// applies them.
func gcSettings() (percent, limit uint64) {
	s := []rtmetrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// resetGC puts Go's defaults back, now and when the test ends.
func resetGC(tb testing.TB) {
	reset := func() {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	}
	reset()
	tb.Cleanup(reset)
}
