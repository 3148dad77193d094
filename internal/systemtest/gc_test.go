package systemtest

import (
	"testing"

	"admit/internal/testutil"
)

// gcPercent and gcMemoryLimit are the collector settings admit serves
// with when GOGC and GOMEMLIMIT are unset (README.md#configuration).
const (
	gcPercent     = 400
	gcMemoryLimit = 64 << 20
)

func TestRun_ServeTunesTheGarbageCollector(t *testing.T) {
	testutil.ResetGC(t)
	srv := MustRunServe(t, map[string]string{"ADMIT_DATA": t.TempDir()})
	if p, l := testutil.GCSettings(); p != gcPercent || l != gcMemoryLimit {
		t.Errorf("serving: GOGC %d, memory limit %d; want %d, %d", p, l, gcPercent, gcMemoryLimit)
	}
	if err := srv.Stop(t); err != nil {
		t.Fatal(err)
	}
}
