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
