package admission

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"admit/internal/testutil"
)

// idleCPU is a CPU never busy: the bound follows the answer rate alone.
var idleCPU = CPUMeter{Used: func() time.Duration { return 0 }, Cores: func() int { return 1 }}

// fakeCPU is CPU time a test spends by hand, on cores CPUs.
type fakeCPU struct {
	used  time.Duration
	cores int
}

func (c *fakeCPU) meter() CPUMeter {
	return CPUMeter{Used: func() time.Duration { return c.used }, Cores: func() int { return c.cores }}
}

// answerWithCPU runs n signups through l one after another, each answered
// at rate a second on clock while the process uses busy of all cpu's cores
// (cpu nil: no CPU is counted).
func answerWithCPU(l *Limiter, clock *testutil.Clock, cpu *fakeCPU, n int, rate, busy float64) {
	gap := time.Duration(float64(time.Second) / rate)
	for range n {
		done, ok := l.Start()
		if !ok {
			panic("one signup at a time was refused")
		}
		clock.Add(gap)
		if cpu != nil {
			cpu.used += time.Duration(busy * float64(cpu.cores) * float64(gap))
		}
		done()
	}
}

// answerAt runs n signups through l, each answered at rate a second on
// clock.
func answerAt(l *Limiter, clock *testutil.Clock, n int, rate float64) {
	answerWithCPU(l, clock, nil, n, rate, 0)
}

func TestSignupLimiter_BoundFollowsTheAnswerRate(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	l := NewLimiter(1000, clock.Now, idleCPU)
	if got := l.Bound(); got != 1000 {
		t.Fatalf("bound before any answer=%d, want the maximum 1000", got)
	}
	// 4,000 answers a second: a third of 100 ms of them (the mean aimed
	// at) is 133.
	answerAt(l, clock, 4000, 4000)
	if got := l.Bound(); got != 133 {
		t.Fatalf("bound at 4,000/s=%d, want 133", got)
	}
	// Slower: 1,500 a second averages down towards 50.
	answerAt(l, clock, 4500, 1500)
	if got := l.Bound(); got < 49 || got > 53 {
		t.Fatalf("bound at 1,500/s=%d, want about 50", got)
	}
	// A slow or busy machine: at 500 a second a third of 100 ms is 16,
	// below a batch's worth, so the floor holds.
	answerAt(l, clock, 5000, 500)
	if got := l.Bound(); got != MinInProgress {
		t.Fatalf("bound at 500/s=%d, want the floor %d", got, MinInProgress)
	}
	// 3,000 a second again: about 100.
	answerAt(l, clock, 15000, 3000)
	if got := l.Bound(); got < 98 || got > 102 {
		t.Fatalf("bound at 3,000/s=%d, want about 100", got)
	}
	// Fast again: never above the maximum.
	answerAt(l, clock, 40000, 40000)
	if got := l.Bound(); got != 1000 {
		t.Fatalf("bound at 40,000/s=%d, want the maximum 1000", got)
	}
}

func TestSignupLimiter_ACPUBoundWindowAimsAtAQuarterOfTheMean(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	cpu := &fakeCPU{cores: 2}
	l := NewLimiter(1000, clock.Now, cpu.meter())
	steps := []struct {
		what string
		rate float64
		busy float64 // of both cores
		want int
	}{
		// 10,000 answers a second: a third of 100 ms of them is 333, a
		// quarter of that 83.
		{"both cores busy", 10000, 1, 83},
		{"half of each core", 10000, 0.5, 333},
		{"one core busy and the other idle", 10000, 0.5, 333},
		{"just over nine tenths", 10000, 0.91, 83},
		{"just under nine tenths", 10000, 0.89, 333},
		// A quarter of 2,000 a second's third of 100 ms is 16: the floor.
		{"a slow machine's busy cores", 2000, 1, MinInProgress},
		{"a slow machine's idle cores", 2000, 0.2, 66},
	}
	for i, st := range steps {
		if i > 0 && st.rate != steps[i-1].rate {
			// The rate is a running average: let it settle on the new one.
			answerWithCPU(l, clock, cpu, int(st.rate)*5, st.rate, 0)
		}
		// Two windows at the step's rate, so the rate's average is it.
		answerWithCPU(l, clock, cpu, int(st.rate/2), st.rate, st.busy)
		if got := l.Bound(); got != st.want {
			t.Fatalf("%s at %.0f/s: bound %d, want %d", st.what, st.rate, got, st.want)
		}
		// Refusals are paced from the answers' rate, whatever the bound.
		want := time.Duration(answersPerRefusal * float64(time.Second) / st.rate)
		if got := l.RefusalInterval(); got < want-want/1000 || got > want+want/1000 {
			t.Fatalf("%s at %.0f/s: refusal interval %v, want one per %d answers, %v", st.what, st.rate, got, answersPerRefusal, want)
		}
	}
}

func TestProcessCPUMeter_CountsThisProcesssWorkOnItsCores(t *testing.T) {
	if got, want := ProcessCPUMeter.Cores(), runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("cores %d, want GOMAXPROCS %d", got, want)
	}
	start := ProcessCPUMeter.Used()
	if start <= 0 {
		t.Fatalf("CPU used so far %v: the system did not say", start)
	}
	// Work until the process has used 20 ms more; a meter that did not
	// count it would end the test at its guard.
	guard := time.Now().Add(time.Minute)
	x := uint64(1)
	for ProcessCPUMeter.Used()-start < 20*time.Millisecond {
		for range 100000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if time.Now().After(guard) {
			t.Fatalf("a minute of work counted %v of CPU", ProcessCPUMeter.Used()-start)
		}
	}
	_ = x
}

func TestSignupLimiter_RefusesExactlyPastTheBound(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	const n, max = 500, 100
	l := NewLimiter(max, clock.Now, idleCPU)
	var mu sync.Mutex
	var dones []func()
	var refused int
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, ok := l.Start()
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
	if done, ok := l.Start(); !ok {
		t.Fatal("a place was not given back")
	} else {
		done()
	}
	if got := l.Bound(); got != max {
		t.Fatalf("answers all at one instant moved the bound to %d, want %d: no window closed", got, max)
	}
}

// pace switches l's pacing of refusals on, as a window of refusals far
// outnumbering answers would.
func pace(l *Limiter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pacing = true
}

// refuseAll refuses n signups on l at one instant and returns each hold.
func refuseAll(l *Limiter, n int) (holds []time.Duration, sents []func()) {
	for range n {
		rf := l.Refuse(nil)
		hold, sent := rf.Hold, rf.Sent
		holds = append(holds, hold)
		if sent != nil {
			sents = append(sents, sent)
		}
	}
	return holds, sents
}

func TestSignupLimiter_RefusalsLeaveAtTheAnswerRateAndNeverWaitPastTheLongestHold(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	l := NewLimiter(1000, clock.Now, idleCPU)
	answerAt(l, clock, 4000, 4000) // 4,000 answers a second
	pace(l)
	interval := answersPerRefusal * time.Second / 4000
	if got := l.RefusalInterval(); got != interval {
		t.Fatalf("refusal interval %v at 4,000 answers a second, want %v", got, interval)
	}
	// Refusals no faster than that pace are never held.
	for i := range 50 {
		if rf := l.Refuse(nil); rf.Hold != 0 || rf.Sent != nil {
			t.Fatalf("refusal %d, one every interval, held %v", i, rf.Hold)
		}
		clock.Add(interval)
	}
	// A burst at one instant leaves one per interval, in order of arrival.
	holds, sents := refuseAll(l, 10)
	for i, hold := range holds {
		if want := time.Duration(i) * interval; hold != want {
			t.Fatalf("refusal %d of a burst held %v, want %v", i, hold, want)
		}
	}
	if got, want := l.RefusalsHeld(), 9; got != want || len(sents) != want {
		t.Fatalf("%d held (%d to send), want %d: the first leaves at once", got, len(sents), want)
	}
	for _, sent := range sents {
		sent()
	}
	if got := l.RefusalsHeld(); got != 0 {
		t.Fatalf("%d still held after all were sent", got)
	}

	// With no answer counted the pace is the floor's: 32 answers per mean
	// target.
	slow := NewLimiter(MinInProgress, clock.Now, idleCPU)
	pace(slow)
	if got, want := slow.RefusalInterval(), answersPerRefusal*signupMeanTarget/MinInProgress; got != want {
		t.Fatalf("refusal interval at the floor %v, want %v", got, want)
	}
	const n = 3000
	holds, sents = refuseAll(slow, n)
	capped := 0
	for i, hold := range holds {
		want := min(time.Duration(i)*slow.RefusalInterval(), MaxFloodHold)
		if hold != want {
			t.Fatalf("refusal %d held %v, want %v", i, hold, want)
		}
		if hold == MaxFloodHold {
			capped++
		}
	}
	// 3,000 at once against one every 8.33 ms: from the 1,200th on
	// (10 s / 8.33 ms) they would wait ten seconds or more, so they wait
	// exactly that.
	if want := n - int((MaxFloodHold+slow.RefusalInterval()-1)/slow.RefusalInterval()); capped != want || want < 500 {
		t.Fatalf("%d refusals held the longest hold, want %d", capped, want)
	}
	for _, sent := range sents {
		sent()
	}
	// Once the burst is over the pace starts afresh.
	clock.Add(2 * MaxFloodHold)
	if rf := slow.Refuse(nil); rf.Hold != 0 {
		t.Fatalf("a refusal after a quiet spell held %v", rf.Hold)
	}
}

// TestSignupLimiter_HoldsAtMostMaxRefusalsHeldAtOnce: three times the
// most refusals that may be held arrive at one instant, each from a
// goroutine of its own. The first leaves at once, as the pace has nothing
// scheduled; exactly MaxRefusalsHeld are held, none past the longest
// hold; every later one leaves at once and closes its connection, and
// takes no place in the pace: once held ones are sent, the next refusal
// is held again, no longer than the longest hold.
func TestSignupLimiter_HoldsAtMostMaxRefusalsHeldAtOnce(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	const n = 3 * MaxRefusalsHeld
	l := NewLimiter(1000, clock.Now, idleCPU)
	pace(l)
	holds, sents, closes := refuseEach(l, make([]*Conn, n))
	atOnce := 0
	for _, hold := range holds {
		if hold == 0 {
			atOnce++
		}
	}
	if longest := holds[n-1]; longest > MaxFloodHold {
		t.Errorf("held %v, past the longest hold", longest)
	}
	if len(sents) != MaxRefusalsHeld || l.RefusalsHeld() != MaxRefusalsHeld {
		t.Fatalf("%d held (limiter says %d), want %d", len(sents), l.RefusalsHeld(), MaxRefusalsHeld)
	}
	if want := n - MaxRefusalsHeld; atOnce != want || closes != want-1 {
		t.Fatalf("%d at once, %d of them closing their connection; want %d and %d (all but the first)",
			atOnce, closes, want, want-1)
	}
	for _, sent := range sents[:10] {
		sent()
	}
	if rf := l.Refuse(nil); rf.Hold == 0 || rf.Hold > MaxFloodHold || rf.Sent == nil || rf.CloseConn {
		t.Fatalf("with places among the held free again, a refusal in the burst was held %v (closing its connection: %v)",
			rf.Hold, rf.CloseConn)
	} else {
		rf.Sent()
	}
	for _, sent := range sents[10:] {
		sent()
	}
	if got := l.RefusalsHeld(); got != 0 {
		t.Fatalf("%d still held after all were sent", got)
	}
}

// window closes one rate window on l: answers signups answered (a
// divisor of the window's 250 ms, so that the last closes it) and
// refusals refused within it.
func window(l *Limiter, clock *testutil.Clock, answers, refusals int) {
	step := signupRateWindow / time.Duration(answers)
	for i := range answers {
		for range refusals / answers {
			if rf := l.Refuse(nil); rf.Sent != nil {
				rf.Sent()
			}
		}
		if i == 0 {
			for range refusals % answers {
				if rf := l.Refuse(nil); rf.Sent != nil {
					rf.Sent()
				}
			}
		}
		done, ok := l.Start()
		if !ok {
			panic("no place for an answer")
		}
		clock.Add(step)
		done()
	}
}

func TestSignupLimiter_PacesOnlyWhileRefusalsFarOutnumberAnswers(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	l := NewLimiter(1000, clock.Now, idleCPU)
	pacing := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.pacing
	}
	// Clients waiting their Retry-After: as many refusals as answers, even
	// twice as many, are never held.
	for _, refusals := range []int{100, 200} {
		window(l, clock, 100, refusals)
		if pacing() {
			t.Fatalf("%d refusals against 100 answers started pacing", refusals)
		}
	}
	holds, _ := refuseAll(l, 50)
	for i, h := range holds {
		if h != 0 {
			t.Fatalf("refusal %d held %v while not pacing", i, h)
		}
	}
	// One more than twice the answers: paced from the next refusal on.
	window(l, clock, 100, 201)
	if !pacing() {
		t.Fatal("201 refusals against 100 answers did not start pacing")
	}
	holds, sents := refuseAll(l, 2)
	if holds[1] != l.RefusalInterval() || len(sents) != 1 {
		t.Fatalf("two refusals at once while pacing held %v, want the second held one interval", holds)
	}
	sents[0]()
	// Paced clients come back at the pace, an eighth of the answers or
	// more: still paced, and at 7 (7 × 16 ≥ 100) too. Fewer than a
	// sixteenth (6) stops it only after calmWindows such windows in a row,
	// longer than the longest hold: clients still held do not count.
	for _, refusals := range []int{13, 7, 0, 0, 0, 0, 7} {
		window(l, clock, 100, refusals)
		if !pacing() {
			t.Fatalf("%d refusals against 100 answers stopped pacing", refusals)
		}
	}
	if calmWindows != 41 {
		t.Fatalf("calmWindows=%d, want 41 (ten seconds and a window)", calmWindows)
	}
	for i := range calmWindows {
		window(l, clock, 100, 6)
		if got, want := pacing(), i < calmWindows-1; got != want {
			t.Fatalf("after %d calm windows pacing=%v, want %v", i+1, got, want)
		}
	}
}

// refuseEach refuses one signup on each of conns (nil: no record), all at
// once from a goroutine each, and returns the holds, sorted, the sent
// funcs of those held and how many refusals were to close their
// connection.
func refuseEach(l *Limiter, conns []*Conn) (holds []time.Duration, sents []func(), closes int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rf := l.Refuse(c)
			mu.Lock()
			defer mu.Unlock()
			holds = append(holds, rf.Hold)
			if rf.CloseConn {
				closes++
			}
			if rf.Sent != nil {
				sents = append(sents, rf.Sent)
			}
		}()
	}
	wg.Wait()
	slices.Sort(holds)
	return holds, sents, closes
}

func TestSignupLimiter_PacesResendsOnTheirConnectionBeforeTheirRetryAfter(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	l := NewLimiter(1000, clock.Now, idleCPU)
	answerAt(l, clock, 4000, 4000) // the bound at 133, a refusal interval of 2 ms
	interval := l.RefusalInterval()
	const n = 100
	conns := make([]*Conn, n)
	for i := range conns {
		conns[i] = &Conn{}
	}
	wantAtOnce := func(what string, holds []time.Duration, sents []func()) {
		t.Helper()
		for i, h := range holds {
			if h != 0 {
				t.Fatalf("%s: refusal %d held %v", what, i, h)
			}
		}
		if len(sents) != 0 || l.RefusalsHeld() != 0 {
			t.Fatalf("%s: %d held", what, l.RefusalsHeld())
		}
	}
	// Refusals overall are not paced: a first refusal on each of 100
	// connections at one instant leaves at once, and so does one on no
	// connection.
	holds, sents, _ := refuseEach(l, conns)
	wantAtOnce("first refusals", holds, sents)
	holds, sents, _ = refuseEach(l, []*Conn{nil, nil})
	wantAtOnce("refusals with no connection", holds, sents)

	// Each connection sends again at once: paced, one per interval in order
	// of arrival, the first at once.
	holds, sents, _ = refuseEach(l, conns)
	for k, h := range holds {
		if want := time.Duration(k) * interval; h != want {
			t.Fatalf("the %d-th resend held %v, want %v", k, h, want)
		}
	}
	if len(sents) != n-1 || l.RefusalsHeld() != n-1 {
		t.Fatalf("%d resends held (limiter says %d), want %d", len(sents), l.RefusalsHeld(), n-1)
	}
	for _, sent := range sents {
		sent()
	}
	// Each connection's Retry-After runs from when its refusal left: the
	// last left 99 intervals from now. Until a second after that it is
	// resending early, then not.
	early := func(at time.Time) (n int) {
		for _, c := range conns {
			if c.resendsBefore(at) {
				n++
			}
		}
		return n
	}
	lastEnds := clock.Now().Add((n-1)*interval + RetryWait)
	if got := early(lastEnds.Add(-interval)); got != 1 {
		t.Fatalf("%d connections resend early an interval before the last Retry-After ends, want 1", got)
	}
	if got := early(lastEnds.Add(-time.Nanosecond)); got != 1 {
		t.Fatalf("%d connections resend early just before the last Retry-After ends, want 1", got)
	}
	// Signups are answered meanwhile, 4,000 a second as before, so that
	// refusals overall stay far fewer than the answers.
	wait := (n-1)*interval + RetryWait
	answerAt(l, clock, int(wait.Seconds()*4000), 4000)
	clock.Set(lastEnds)
	if got := early(clock.Now()); got != 0 {
		t.Fatalf("%d connections still resend early once every Retry-After has passed", got)
	}
	holds, sents, _ = refuseEach(l, conns)
	wantAtOnce("signups after their Retry-After", holds, sents)
}

// TestSignupLimiter_AResendAloneWaitsAtMostItsRetryAfterAFloodLonger:
// 1,000 connections resend at one instant, each before its Retry-After,
// while refusals overall are not paced: at one every 8.33 ms (the
// floor's pace) the later ones would wait up to 8.3 s, but a resend alone
// waits at most its Retry-After. Once refusals overall are paced, the
// same burst waits as the pace says, within MaxFloodHold.
func TestSignupLimiter_AResendAloneWaitsAtMostItsRetryAfterAFloodLonger(t *testing.T) {
	const n = 1000
	for _, flood := range []bool{false, true} {
		clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
		l := NewLimiter(MinInProgress, clock.Now, idleCPU)
		conns := make([]*Conn, n)
		for i := range conns {
			conns[i] = &Conn{}
			conns[i].refusedAt(clock.Now())
		}
		if flood {
			pace(l)
		}
		holds, sents, _ := refuseEach(l, conns)
		longest := MaxRefusalHold
		if flood {
			longest = time.Duration(n-1) * l.RefusalInterval()
		}
		if got := holds[n-1]; got != longest {
			t.Fatalf("flood=%v: the longest of %d resends held %v, want %v", flood, n, got, longest)
		}
		if len(sents) != n-1 {
			t.Fatalf("flood=%v: %d held, want %d", flood, len(sents), n-1)
		}
		for _, sent := range sents {
			sent()
		}
	}
}

// TestSignupLimiter_RefusalsAloneStartThePacing: while no signup is
// answered (every place held by signups that do not finish), refusals
// still close the window, and a window of refusals with no answer starts
// the pacing: the next burst is held one interval apart.
func TestSignupLimiter_RefusalsAloneStartThePacing(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	l := NewLimiter(MinInProgress, clock.Now, idleCPU)
	if holds, sents := refuseAll(l, 3); holds[2] != 0 || len(sents) != 0 {
		t.Fatalf("before any window closed, refusals held %v", holds)
	}
	clock.Add(signupRateWindow)
	holds, sents := refuseAll(l, 3)
	if holds[1] != l.RefusalInterval() || holds[2] != 2*l.RefusalInterval() || len(sents) != 2 {
		t.Fatalf("after a window of refusals alone, a burst held %v; want paced", holds)
	}
	for _, sent := range sents {
		sent()
	}
}
