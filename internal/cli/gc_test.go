package cli

import (
	"math"
	"testing"

	"admit/internal/testutil"
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
			testutil.ResetGC(t)
			tuneGC(mustLoadConfig(t, tc.env).GC)
			if p, l := testutil.GCSettings(); p != tc.percent || l != tc.limit {
				t.Errorf("GOGC %d, memory limit %d; want %d, %d", p, l, tc.percent, tc.limit)
			}
		})
	}
}
