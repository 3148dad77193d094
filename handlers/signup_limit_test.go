package handlers

import (
	"sync"
	"testing"
	"time"

	"admit/internal/testutil"
)

// answerAt runs n signups through l, each answered at rate a second on
// clock, and returns how many were refused.
func answerAt(l *signupLimiter, clock *testutil.Clock, n int, rate float64) (refused int) {
	gap := time.Duration(float64(time.Second) / rate)
	for range n {
		done, ok := l.start()
		if !ok {
			refused++
			continue
		}
		clock.Add(gap)
		done()
	}
	return refused
}

func TestSignupLimiter_BoundFollowsTheAnswerRate(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	l := newSignupLimiter(1000, clock.Now)
	if got := l.bound(); got != 1000 {
		t.Fatalf("bound before any answer=%d, want the maximum 1000", got)
	}
	// 4,000 answers a second: a third of 100 ms of them (the mean aimed
	// at) is 133.
	answerAt(l, clock, 4000, 4000)
	if got := l.bound(); got != 133 {
		t.Fatalf("bound at 4,000/s=%d, want 133", got)
	}
	// Slower: 1,500 a second averages down towards 50.
	answerAt(l, clock, 4500, 1500)
	if got := l.bound(); got < 49 || got > 53 {
		t.Fatalf("bound at 1,500/s=%d, want about 50", got)
	}
	// A slow or busy machine: at 500 a second a third of 100 ms is 16,
	// below a batch's worth, so the floor holds.
	answerAt(l, clock, 5000, 500)
	if got := l.bound(); got != minSignupsInProgress {
		t.Fatalf("bound at 500/s=%d, want the floor %d", got, minSignupsInProgress)
	}
	// 3,000 a second again: about 100.
	answerAt(l, clock, 15000, 3000)
	if got := l.bound(); got < 98 || got > 102 {
		t.Fatalf("bound at 3,000/s=%d, want about 100", got)
	}
	// Fast again: never above the maximum.
	answerAt(l, clock, 40000, 40000)
	if got := l.bound(); got != 1000 {
		t.Fatalf("bound at 40,000/s=%d, want the maximum 1000", got)
	}
}

func TestSignupLimiter_RefusesExactlyPastTheBound(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	const n, max = 500, 100
	l := newSignupLimiter(max, clock.Now)
	var mu sync.Mutex
	var dones []func()
	var refused int
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, ok := l.start()
			mu.Lock()
			defer mu.Unlock()
			if !ok {
				refused++
				return
			}
			dones = append(dones, done)
		}()
	}
	wg.Wait()
	if len(dones) != max || refused != n-max {
		t.Fatalf("%d started and %d refused, want %d and %d", len(dones), refused, max, n-max)
	}
	for _, done := range dones {
		done()
	}
	if done, ok := l.start(); !ok {
		t.Fatal("a place was not given back")
	} else {
		done()
	}
	if got := l.bound(); got != max {
		t.Fatalf("answers all at one instant moved the bound to %d, want %d: no window closed", got, max)
	}
}
