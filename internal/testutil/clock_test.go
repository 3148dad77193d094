package testutil

import (
	"sync"
	"testing"
	"time"
)

func TestClock_ConcurrentAddsAllCount(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := NewClock(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now=%v, want %v", got, start)
	}
	const n = 64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() { defer wg.Done(); c.Add(time.Second) }()
	}
	wg.Wait()
	if got, want := c.Now(), start.Add(n*time.Second); !got.Equal(want) {
		t.Fatalf("after %d concurrent Adds: Now=%v, want %v", n, got, want)
	}
	c.Set(start)
	if got, want := c.Add(time.Hour), start.Add(time.Hour); !got.Equal(want) {
		t.Fatalf("Add after Set returned %v, want %v", got, want)
	}
}

func TestClock_StepAdvancesEveryReadingUntilStopped(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := NewClock(start)
	c.Step(time.Millisecond)
	const n = 32
	seen := make(chan time.Time, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() { defer wg.Done(); seen <- c.Now() }()
	}
	wg.Wait()
	close(seen)
	distinct := map[time.Time]bool{}
	for at := range seen {
		distinct[at] = true
	}
	if got := len(distinct); got != n {
		t.Fatalf("%d concurrent readings gave %d distinct instants, want %d", n, got, n)
	}
	c.Step(0)
	if got, want := c.Now(), start.Add(n*time.Millisecond); !got.Equal(want) {
		t.Fatalf("after the step stopped: Now=%v, want %v", got, want)
	}
	if got, want := c.Now(), start.Add(n*time.Millisecond); !got.Equal(want) {
		t.Fatalf("a second reading without a step moved the clock to %v, want %v", got, want)
	}
}
