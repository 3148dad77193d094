package cli

import (
	"runtime/debug"

	"admit/internal/config"
)

// The garbage collector's pacing while admit serves.
//
// What is live in admit's heap is a few MiB: whatever a request builds is
// garbage once its answer is written. Go's default (GOGC=100) starts a
// collection each time the heap doubles, and at the latest once it holds
// 4 MiB, so a full signup load ran about twenty collections a second, each
// a mark phase on the cores the writer and the handlers share. gcPercent
// lets the heap grow to five times what is live (at least 16 MiB) before
// the next one: a quarter of the collections, for about 11 MiB more resident
// memory. gcMemoryLimit keeps a larger live heap, such as a thousand
// connections' buffers under overload, from multiplying as well: near the
// limit the collector runs as often as staying under it takes
// (docs/PERFORMANCE.md#garbage-collection).
const (
	gcPercent     = 400
	gcMemoryLimit = 64 << 20
)

// tuneGC sets gcPercent and gcMemoryLimit, each unless the operator chose
// their own with GOGC or GOMEMLIMIT, which the Go runtime has applied at
// start.
func tuneGC(gc config.GC) {
	if !gc.GOGCSet {
		debug.SetGCPercent(gcPercent)
	}
	if !gc.GOMEMLIMITSet {
		debug.SetMemoryLimit(gcMemoryLimit)
	}
}
