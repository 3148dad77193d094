package testutil

import (
	"math"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"testing"
)

// GCSettings reads the collector's target and memory limit as the runtime
// applies them.
func GCSettings() (percent, limit uint64) {
	s := []rtmetrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// ResetGC puts Go's collector defaults back, now and when the test ends.
func ResetGC(tb testing.TB) {
	reset := func() {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	}
	reset()
	tb.Cleanup(reset)
}
