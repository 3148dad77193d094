// Package admission is the admission control for public signups: the
// bound on signups in progress, the pacing of refusals for load, and the
// record of each client connection that tells a resend from a new signup
// (docs/ARCHITECTURE.md#the-write-path, docs/PERFORMANCE.md#overload).
package admission

import (
	"runtime"
	"sync"
	"time"
)

// Limiter bounds the signups in progress, from a request's arrival
// to its answer. The bound adapts to how fast signups are being answered
// (Little's law): signupMeanTarget's worth of them at the rate of the last
// window, never more than max (ADMIT_WRITE_QUEUE) and never fewer than a
// batch's worth (MinInProgress). On a machine whose CPU, not
// its disk, is the limit, signups wait mostly before the writer's queue, so
// a bound on that queue alone would let their latency grow; a fixed count
// would suit only one machine's speed. When the last window kept every CPU
// admit may use busy, the mean aimed at is a quarter as long
// (cpuBoundDivisor): signups beyond what keeps the CPU busy would only
// wait for it, while a disk-bound machine, whose CPU idles through each
// commit's fsync, needs the larger bound for large commit batches
// (docs/PERFORMANCE.md#the-bound-on-signups-in-progress).
type Limiter struct {
	max, min int
	// maxHeld is how many refusals may be held at once (MaxRefusalsHeld).
	maxHeld int
	target  time.Duration
	now     func() time.Time
	cpu     CPUMeter

	mu       sync.Mutex
	inFlight int
	limit    int
	// window counts the answers since windowStart; rate is the answers a
	// second over recent windows (0 until the first window closes).
	windowStart time.Time
	window      int
	rate        float64
	// refused counts the refusals since windowStart; pacing is whether
	// refusals are paced (refuse), decided as each window closes, and
	// calm how many windows in a row have had few refusals.
	refused int
	pacing  bool
	calm    int
	// nextRefusal is the earliest time the next refusal may leave, and
	// held how many refusals are being held now (refuse).
	nextRefusal time.Time
	held        int
	// cpuAt is the CPU time used when the window started.
	cpuAt time.Duration
}

// CPUMeter tells how busy admit's CPUs are: used is the CPU time the
// process has used so far, user and system, and cores how many CPUs it may
// use at once.
type CPUMeter struct {
	Used  func() time.Duration
	Cores func() int
}

// ProcessCPUMeter measures admit's own process: its CPU time from the
// system and its CPUs from GOMAXPROCS, which Go sets from the CPUs the
// process may run on and any container CPU limit.
var ProcessCPUMeter = CPUMeter{Used: processCPU, Cores: func() int { return runtime.GOMAXPROCS(0) }}

const (
	// signupLatencyTarget is the time a signup's answer should take at
	// most, waiting included.
	signupLatencyTarget = 100 * time.Millisecond
	// signupMeanTarget is the mean time in progress the bound aims at.
	// Little's law makes the bound's worth of time the mean, not the
	// slowest: with the writer saturated the slowest answers (p99) took
	// about 1.7 times the mean on a calm disk but up to four and a half
	// times it while the disk's fsync stalled. With the mean at half the
	// target, the p99 at 256 and 1,024 clients passed 100 ms in nine of
	// ten levels on a stalling disk; at a third, it stayed at 64–97 ms in
	// all ten, for about 5% fewer signups a second
	// (docs/PERFORMANCE.md#the-bound-on-signups-in-progress).
	signupMeanTarget = signupLatencyTarget / 3
	// signupRateWindow is how often the rate, and so the bound, is updated.
	signupRateWindow = 250 * time.Millisecond
	// MinInProgress keeps the bound at a batch's worth of signups
	// at least, so that group commit keeps sharing its commits. It is low
	// enough that on a slow or busy machine (a few hundred signups a
	// second) the bound still follows the target: a floor of 64 held
	// more than 100 ms of signups below 640 a second, while 16 made
	// batches so small that each signup cost half as much CPU again
	// (docs/PERFORMANCE.md#the-bound-on-signups-in-progress).
	MinInProgress = 32
	// MaxRefusalHold is the longest a resend on its connection is held
	// before its refusal is sent (what its Retry-After asks), and
	// MaxFloodHold the longest a refusal is held while refusals overall
	// are paced: long enough that the pace, not the longest hold, sets
	// how often a few thousand clients resending at once are refused
	// (4,096 of them at one refusal every 2 ms wait 8 s), and well
	// within the minute proxies wait for an answer. MaxRefusalsHeld is how
	// many may be held at once. A refusal held in its handler keeps what
	// net/http keeps of a request while its handler runs, about 8 KB (6
	// of heap and a 2 KB goroutine that watches for the client going
	// away), on top of the about 18 KB the open connection costs anyway;
	// a parked one (Server.parkRefusal) keeps its connection's socket, a
	// timer and its answer's headers. Past MaxRefusalsHeld a refusal
	// leaves at once and closes its connection (refuse;
	// docs/PERFORMANCE.md#paced-refusals).
	MaxRefusalHold  = RetryWait
	MaxFloodHold    = 10 * time.Second
	MaxRefusalsHeld = 8192
	// answersPerRefusal paces the refusals for load: one may leave per
	// eight answers at the recent answer rate. A parked refusal costs
	// admit about two thirds of an accepted signup's CPU once its
	// connection's accept, request and close are counted (about 145
	// against 215 µs at 2,048 clients resending at once), so at this pace
	// refusals take at most about a tenth as much again as the accepted
	// work; at one per four they took 12% of admit's core and goodput
	// 0.86–0.88 of 32 clients' (docs/PERFORMANCE.md#overload-figures).
	answersPerRefusal = 8
	// Refusals are paced from a window in which they outnumbered the
	// answers pacingFrom times — clients resending at once, not clients
	// waiting their Retry-After — until they have been fewer than a
	// sixteenth of the answers (refused * pacingUntil < answers), below the
	// pace itself, for calmWindows windows in a row: longer than the
	// longest hold, so that clients still held do not switch it off.
	pacingFrom  = 2
	pacingUntil = 2 * answersPerRefusal
	calmWindows = int(MaxFloodHold/signupRateWindow) + 1
	// A window in which admit used cpuBoundFrom of all its CPUs' time
	// is CPU-bound, and the bound that follows it aims at a mean of
	// signupMeanTarget/cpuBoundDivisor. With the database on tmpfs (the
	// CPU the limit), the accepted signups' p99 inside admit at 512 and
	// 1,024 clients fell from 93–111 ms to 14–17 ms with the quarter, for
	// smaller commit batches; on the disk, where admit used half its CPU
	// or less, goodput did not change beyond the disk's own swings
	// (docs/PERFORMANCE.md#the-bound-on-signups-in-progress).
	cpuBoundFrom    = 0.9
	cpuBoundDivisor = 4
)

func NewLimiter(max int, now func() time.Time, cpu CPUMeter) *Limiter {
	if max < 1 {
		max = 1
	}
	return &Limiter{max: max, min: min(MinInProgress, max), maxHeld: MaxRefusalsHeld, target: signupMeanTarget, now: now,
		cpu: cpu, cpuAt: cpu.Used(), limit: max, windowStart: now()}
}

// start takes a place among the signups in progress, or reports that none
// is free.
func (l *Limiter) Start() (done func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight >= l.limit {
		return nil, false
	}
	l.inFlight++
	return l.done, true
}

// done gives the place back, counts the answer and, once a window is
// over, closes it (closeWindow).
func (l *Limiter) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight--
	l.window++
	l.closeWindow(l.now())
}

// closeWindow, once the window is over at now, sets the bound from the
// answers' rate and how busy the CPUs were, and whether refusals are
// paced. Answers and refusals both close it: in a flood that leaves no
// answer for a while, the refusals still start the pacing.
func (l *Limiter) closeWindow(now time.Time) {
	elapsed := now.Sub(l.windowStart)
	if elapsed < signupRateWindow {
		return
	}
	r := float64(l.window) / elapsed.Seconds()
	if l.rate == 0 {
		l.rate = r
	} else {
		l.rate = (l.rate + r) / 2
	}
	switch {
	case l.refused > pacingFrom*l.window:
		l.pacing, l.calm = true, 0
	case l.refused*pacingUntil < l.window:
		if l.calm++; l.calm >= calmWindows {
			l.pacing = false
		}
	default:
		l.calm = 0
	}
	used := l.cpu.Used()
	cpuBound := float64(used-l.cpuAt) >= cpuBoundFrom*float64(l.cpu.Cores())*float64(elapsed)
	l.window, l.refused, l.windowStart, l.cpuAt = 0, 0, now, used
	target := l.target
	if cpuBound {
		target = l.target / cpuBoundDivisor
	}
	l.limit = min(l.max, max(l.min, int(l.rate*target.Seconds())))
}

// refuse paces the refusals for load that come from clients ignoring
// Retry-After: all of them while refusals arrive far faster than the
// answers (pacing), and otherwise those resent on conn before the
// Retry-After of the refusal before ended (Conn; nil: no record).
// Paced refusals leave in order of arrival, no more than one per
// refusalInterval, and none is held longer than MaxFloodHold (while
// pacing) or MaxRefusalHold (a resend alone); any other
// leaves at once. It reports how long this one is held before it is sent
// (0: at once; the caller then gets no sent func) and, when held, sent,
// which the caller calls once it has waited. Clients that send again as
// soon as they are refused (bots ignore Retry-After) are then refused no
// more often than that pace, or each once per longest hold, whichever is more
// often; a refusal arriving slower than the pace is never held. At most
// maxHeld are held at once; a refusal that would be held past that
// leaves at once and ends its connection (closeConn): the client pays a
// new connection before it can resend, and admit sheds that connection's
// memory instead of adding a hold's (docs/PERFORMANCE.md#paced-refusals).
func (l *Limiter) Refuse(conn *Conn) Refusal {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.closeWindow(now)
	l.refused++
	if !l.pacing && !conn.resendsBefore(now) {
		conn.refusedAt(now)
		return Refusal{}
	}
	at := l.nextRefusal
	if at.Before(now) {
		at = now
	}
	longest := MaxRefusalHold
	if l.pacing {
		longest = MaxFloodHold
	}
	hold := at.Sub(now)
	if hold > longest {
		hold, at = longest, now.Add(longest)
	}
	if hold > 0 && l.held >= l.maxHeld {
		// rule: the holds are bounded; this refusal takes no place in the
		// pace, as it is not held.
		conn.refusedAt(now)
		return Refusal{CloseConn: true}
	}
	l.nextRefusal = at.Add(l.RefusalInterval())
	conn.refusedAt(at)
	if hold <= 0 {
		return Refusal{}
	}
	l.held++
	return Refusal{Hold: hold, Sent: l.Sent, Flood: l.pacing}
}

// Refusal is how one refusal for load leaves (Limiter.refuse).
type Refusal struct {
	// hold is how long it is held before it is sent; 0 is at once.
	Hold time.Duration
	// sent, when it is held, is to be called once it has waited.
	Sent func()
	// closeConn asks that its connection be closed after it: it could not
	// be held, as the most refusals that may be held are.
	CloseConn bool
	// flood is whether it is held because refusals overall are paced, not
	// only as a resend on its connection: it may then be parked
	// (Server.parkRefusal).
	Flood bool
}

// refusalInterval is the pace of refusals: one per answersPerRefusal
// answers at the rate of recent windows. Until the first window closes it
// takes the rate the bound implies (bound/target, the bound then its
// maximum); the measured rate is what counts later, as the bound may be
// held at its floor or cut for a busy CPU.
func (l *Limiter) RefusalInterval() time.Duration {
	if l.rate > 0 {
		return time.Duration(answersPerRefusal * float64(time.Second) / l.rate)
	}
	return answersPerRefusal * l.target / time.Duration(l.limit)
}

// sent counts a held refusal as sent.
func (l *Limiter) Sent() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held--
}

// bound is the current bound, for tests.
func (l *Limiter) Bound() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// inProgress is how many places are taken now, for tests.
func (l *Limiter) InProgress() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inFlight
}

// refusalsHeld is how many refusals are held now, for tests.
func (l *Limiter) RefusalsHeld() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

// SetPacing sets whether refusals are paced now, as a window of many
// refusals would, for tests.
func (l *Limiter) SetPacing(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pacing = on
}

// SetMaxHeld sets how many refusals may be held at once, for tests.
func (l *Limiter) SetMaxHeld(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.maxHeld = n
}

// SetHeld sets how many refusals count as held now, for tests.
func (l *Limiter) SetHeld(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = n
}
