package systemtest

import (
	"math"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"testing"
)

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

// gcPercent and gcMemoryLimit are the collector settings admit serves
// with when GOGC and GOMEMLIMIT are unset (README.md#configuration).
const (
	gcPercent     = 400
	gcMemoryLimit = 64 << 20
)

func TestRun_ServeTunesTheGarbageCollector(t *testing.T) {
	resetGC(t)
	srv := MustRunServe(t, map[string]string{"ADMIT_DATA": t.TempDir()})
	if p, l := gcSettings(); p != gcPercent || l != gcMemoryLimit {
		t.Errorf("serving: GOGC %d, memory limit %d; want %d, %d", p, l, gcPercent, gcMemoryLimit)
	}
	if err := srv.Stop(t); err != nil {
		t.Fatal(err)
	}
}
