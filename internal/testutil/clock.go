package testutil

import (
	"sync"
	"time"
)

// Clock is a controllable clock for the store (store.Options.Now) and the
// identity provider's token checks (identity.ClerkConfig.Now). It is
// safe for concurrent use, so a test may advance it while another
// goroutine's transaction waits.
type Clock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's current instant, first advancing it by the step
// (Step), if one is set.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

// Step makes every later reading advance the clock by d before it
// answers, so no two readings are equal; 0 stops it again. A test uses
// it to tell how many times, and in what order, the clock was read.
func (c *Clock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step = d
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Add advances the clock by d and returns the new instant.
func (c *Clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}
