package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"admit/internal/testutil"

	"github.com/google/uuid"
)

// pausedBatcher replaces db's signup batcher with one whose loop has not
// started: submitted signups wait in its queue until start is called, and
// the loop then takes them all as one batch.
func pausedBatcher(tb testing.TB, db *DB) (start func()) {
	tb.Helper()
	db.signups.stop()
	b := newSignupBatcher(db, cap(db.signups.slots))
	db.signups = b
	var once sync.Once
	start = func() { once.Do(func() { go b.loop() }) }
	tb.Cleanup(start) // Close waits for the loop: it must have started
	return start
}

// waitQueued waits until n signups wait in the batcher's queue.
func waitQueued(tb testing.TB, db *DB, n int) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(db.signups.calls) != n {
		if time.Now().After(deadline) {
			tb.Fatalf("%d signups queued, want %d", len(db.signups.calls), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// batchAnswer is one signup's answer.
type batchAnswer struct {
	res *SignupResult
	err error
}

// backgrounds is n contexts that never end, one per signup.
func backgrounds(n int) []context.Context {
	ctxs := make([]context.Context, n)
	for i := range ctxs {
		ctxs[i] = context.Background()
	}
	return ctxs
}

// submitInOrder submits each request from its own goroutine, one after
// another in queue order, and returns a function that waits for the answers.
func submitInOrder(tb testing.TB, db *DB, ctxs []context.Context, reqs []SignupRequest) (wait func() []batchAnswer) {
	tb.Helper()
	answers := make([]batchAnswer, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := db.Signup(ctxs[i], r)
			answers[i] = batchAnswer{res, err}
		}()
		waitQueued(tb, db, i+1)
	}
	return func() []batchAnswer { wg.Wait(); return answers }
}

func TestSignup_QueuedSignupsShareACommitAndEachIsAnsweredAsIfAlone(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	sp := mustSignupProgram(t, db, "batched", 1000, 1000)
	start := pausedBatcher(t, db)

	counter := func(bad bool) *AttemptLimit {
		return &AttemptLimit{Max: 100, Key: func(hour time.Time) []byte {
			if bad {
				return make([]byte, 31) // the counter's CHECK refuses it: this signup fails alone
			}
			return benchAttempts.Key(hour)
		}}
	}
	var reqs []SignupRequest
	for i := range 6 {
		reqs = append(reqs, sp.signupReq(fmt.Sprintf("batched-%d@example.test", i)))
	}
	bad := sp.signupReq("bad-counter@example.test")
	reqs = append(reqs,
		bad,
		sp.signupReq("batched-0@example.test"), // 7: a duplicate of 0 with a fresh key
		reqs[1],                                // 8: a same-key replay of 1
		sp.signupReq("batched-6@example.test"), // 9: after the failure, still admitted
	)
	ctxs := make([]context.Context, len(reqs))
	for i := range reqs {
		reqs[i].Attempts = counter(i == 6)
		ctxs[i] = context.Background()
	}
	wait := submitInOrder(t, db, ctxs, reqs)
	// A clock that moves on every reading: one transaction reads it once.
	clock.Step(time.Millisecond)
	start()
	answers := wait()

	for i, a := range answers {
		if i == 6 {
			if a.err == nil {
				t.Fatalf("the signup with the refused counter key got %+v, want an error", a.res)
			}
			continue
		}
		if a.err != nil {
			t.Fatalf("signup %d: %v, want a 202", i, a.err)
		}
	}
	if got := answers[7].res; got.Replay || len(got.RemovalToken) != 64 || got.RemovalToken == answers[0].res.RemovalToken {
		t.Fatalf("duplicate answered %+v, want a first 202 with its own (decoy) token", got)
	}
	if got := answers[8].res; !got.Replay || got.RemovalToken != "" {
		t.Fatalf("same-key replay answered %+v, want the stored receipt without a token", got)
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM entries WHERE program_id = ?`, sp.Program.ID), 7; got != want {
		t.Fatalf("entries=%d, want %d (the duplicate, the replay and the failure add none)", got, want)
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM audit_events WHERE program_id = ? AND event_type = 'signup'`, sp.Program.ID), 7; got != want {
		t.Fatalf("signup events=%d, want %d", got, want)
	}
	counted := mustCount(t, db, `SELECT attempts FROM network_counters WHERE key = ?`, benchAttempts.Key(hourStart(testEpoch)))
	if want := len(reqs) - 2; counted != want {
		t.Fatalf("network attempts=%d, want %d: each new key counted once, the replay not at all, the failed one rolled back", counted, want)
	}
	if got := mustCount(t, db, `SELECT count(DISTINCT created_at) FROM entries WHERE program_id = ?`, sp.Program.ID); got != 1 {
		t.Fatalf("the batch's entries have %d join times, want 1: one transaction, one Tx.Now", got)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE email_key = 'bad-counter@example.test'`); got != 0 {
		t.Fatalf("the failed signup stored %d entries", got)
	}
}

func TestSignup_CancelledWhileQueuedStoresNothing(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "cancelled", 100, 100)
	start := pausedBatcher(t, db)

	gone, cancel := context.WithCancel(context.Background())
	wait := submitInOrder(t, db, []context.Context{context.Background(), gone},
		[]SignupRequest{sp.signupReq("kept@example.test"), sp.signupReq("gone@example.test")})
	cancel()
	start()
	answers := wait()

	if answers[0].err != nil {
		t.Fatalf("kept signup: %v", answers[0].err)
	}
	if err := answers[1].err; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled signup: err=%v, want context.Canceled", err)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE email_key = 'gone@example.test'`); got != 0 {
		t.Fatalf("the cancelled signup stored %d entries", got)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE email_key = 'kept@example.test'`); got != 1 {
		t.Fatalf("the kept signup stored %d entries, want 1", got)
	}
}

func TestSignup_AfterCloseFailsInsteadOfWaiting(t *testing.T) {
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "admit.db"),
		Options{BindingKey: signupTestKey, Now: testutil.NewClock(testEpoch).Now})
	if err != nil {
		t.Fatal(err)
	}
	sp := mustSignupProgram(t, db, "closed-db", 100, 100)
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.Signup(context.Background(), sp.signupReq("late@example.test"))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errClosed) {
			t.Fatalf("signup after close: err=%v, want %v", err, errClosed)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a signup after Close is still waiting")
	}
}

// Refusals inside one batch write nothing of their own and leave the rest of
// the batch, and the attempts they counted, in the commit.
func TestSignup_RefusalsInABatchWriteNothingAndKeepTheRest(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "batch-refusals", 100, 100)
	start := pausedBatcher(t, db)
	limit := &AttemptLimit{Max: 4, Key: benchAttempts.Key}
	var reqs []SignupRequest
	for i := range 6 {
		r := sp.signupReq(fmt.Sprintf("refusals-%d@example.test", i))
		r.Attempts = limit
		reqs = append(reqs, r)
	}
	reqs[1].NoticeVersion = 99 // refused by admission: counted, nothing stored
	wait := submitInOrder(t, db, backgrounds(len(reqs)), reqs)
	start()
	answers := wait()
	want := []string{"", ECONFLICT, "", "", ERATELIMITED, ERATELIMITED}
	for i, a := range answers {
		if got := ErrorCode(a.err); got != want[i] {
			t.Errorf("signup %d: code %q (%v), want %q", i, got, a.err, want[i])
		}
	}
	if got := mustCount(t, db, `SELECT attempts FROM network_counters WHERE key = ?`, benchAttempts.Key(hourStart(testEpoch))); got != 4 {
		t.Errorf("attempts=%d, want 4: the conflict counted, the two over the limit did not", got)
	}
	for table, n := range map[string]int{"entries": 3, "signup_receipts": 3, "audit_events WHERE event_type = 'signup'": 3} {
		if got := mustCount(t, db, `SELECT count(*) FROM `+table); got != n {
			t.Errorf("%s=%d, want %d", table, got, n)
		}
	}
}

// mustCountersMatchEntries checks every counter of a program that new
// entries move against a count of its entries: occupancy, the entries per
// state, the funnel's joined and this hour's intake (intake: the entries
// that came in as signups this hour).
func mustCountersMatchEntries(tb testing.TB, db *DB, programID string, hour time.Time, intake int) {
	tb.Helper()
	for what, q := range map[string]string{
		"occupied": `SELECT (SELECT occupied FROM programs WHERE id = ?1)
			- (SELECT count(*) FROM entries WHERE program_id = ?1 AND state <> 'withdrawn')`,
		"entries per state": `SELECT count(*) FROM (
			SELECT state, count(*) AS n FROM entries WHERE program_id = ?1 GROUP BY state
			EXCEPT SELECT state, n FROM entry_state_counts WHERE program_id = ?1 AND n > 0) AS d`,
		"states counted without entries": `SELECT count(*) FROM entry_state_counts c WHERE program_id = ?1
			AND n <> (SELECT count(*) FROM entries e WHERE e.program_id = ?1 AND e.state = c.state)`,
		"funnel joined": `SELECT (SELECT joined FROM program_funnel WHERE program_id = ?1)
			- (SELECT count(*) FROM entries WHERE program_id = ?1)`,
	} {
		if got := mustCount(tb, db, q, programID); got != 0 {
			tb.Errorf("%s: off by %d", what, got)
		}
	}
	if got := hourCount(tb, db, programID, hour); got != intake {
		tb.Errorf("hour's intake=%d, want %d", got, intake)
	}
}

func TestSignup_ABatchCountsItsEntriesOnceAtTheCommit(t *testing.T) {
	for _, tc := range []struct {
		name              string
		queueCap, hourCap int
	}{
		{"queue cap", 5, 100},
		{"hourly cap", 100, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := MustOpenDB(t)
			capped := mustSignupProgram(t, db, "batch-capped", tc.queueCap, tc.hourCap)
			other := mustSignupProgram(t, db, "batch-other", 100, 100)
			// Two entries already counted before the batch.
			for i := range 2 {
				mustSignup(t, db, capped.signupReq(fmt.Sprintf("before-%d@example.test", i)))
			}
			start := pausedBatcher(t, db)
			var reqs []SignupRequest
			for i := range 6 {
				reqs = append(reqs, capped.signupReq(fmt.Sprintf("capped-%d@example.test", i)),
					other.signupReq(fmt.Sprintf("other-%d@example.test", i)))
			}
			// A signup that fails alone makes the batch run again without it:
			// nothing of the first run may be counted.
			bad := other.signupReq("bad-counter@example.test")
			bad.Attempts = &AttemptLimit{Max: 100, Key: func(time.Time) []byte { return make([]byte, 31) }}
			reqs = append(reqs[:3], append([]SignupRequest{bad}, reqs[3:]...)...)
			wait := submitInOrder(t, db, backgrounds(len(reqs)), reqs)
			start()
			answers := wait()

			admitted := map[string]int{}
			for i, a := range answers {
				switch {
				case reqs[i].RequestKey == bad.RequestKey:
					if a.err == nil {
						t.Fatalf("the signup with the refused counter key got %+v, want an error", a.res)
					}
				case a.err == nil:
					admitted[reqs[i].Slug]++
				case ErrorCode(a.err) == ERATELIMITED:
				default:
					t.Fatalf("signup %d: %v", i, a.err)
				}
			}
			// The capped program had 2 of its 5 places: the batch's first
			// three of its signups are admitted, the other three refused.
			if got, want := admitted[capped.Program.Slug], 3; got != want {
				t.Errorf("admitted to the capped program=%d, want %d", got, want)
			}
			if got, want := admitted[other.Program.Slug], 6; got != want {
				t.Errorf("admitted to the other program=%d, want %d", got, want)
			}
			for i, r := range reqs {
				if r.Slug == capped.Program.Slug && r.Email >= "capped-3" && answers[i].err == nil {
					t.Errorf("%s was admitted past the cap", r.Email)
				}
			}
			mustCountersMatchEntries(t, db, capped.Program.ID, hourStart(testEpoch), 5)
			mustCountersMatchEntries(t, db, other.Program.ID, hourStart(testEpoch), 6)
			if got, want := mustCount(t, db, `SELECT occupied FROM programs WHERE id = ?`, capped.Program.ID), 5; got != want {
				t.Errorf("capped program occupied=%d, want %d", got, want)
			}
		})
	}
}

// TestSignup_ABatchWritesItsEventsTogetherInSignupOrder: a batch's signup
// events are inserted together before the commit (queueEvent), several
// rows a statement. Batches of every size up to the largest hold one
// event per new entry — none for a duplicate, none twice when a failing
// signup makes the batch run again — with ids in the order the signups
// were admitted, the batch's time, and the fields appendEvent would write.
func TestSignup_ABatchWritesItsEventsTogetherInSignupOrder(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	sp := mustSignupProgram(t, db, "batch-events", 1000, 1000)
	ctx := context.Background()
	for _, size := range []int{1, 3, 17, 23, maxSignupBatch} {
		clock.Add(time.Minute)
		var lastID int64
		if err := db.readRow(ctx, `SELECT coalesce(max(id), 0) FROM audit_events`).Scan(&lastID); err != nil {
			t.Fatal(err)
		}
		var reqs []SignupRequest
		var want []string // the new addresses, in queue order
		for i := range size {
			email := fmt.Sprintf("events-%d-%d@example.test", size, i)
			switch {
			case size > 1 && i == size-1:
				// Fails alone after the others' events were queued: the
				// batch runs again without it, and its first run leaves
				// nothing.
				bad := sp.signupReq(email)
				bad.Attempts = &AttemptLimit{Max: 100, Key: func(time.Time) []byte { return make([]byte, 31) }}
				reqs = append(reqs, bad)
				continue
			case i == 3:
				email = want[0] // a duplicate: no entry, no event
			default:
				want = append(want, email)
			}
			reqs = append(reqs, sp.signupReq(email))
		}
		start := pausedBatcher(t, db)
		wait := submitInOrder(t, db, backgrounds(len(reqs)), reqs)
		start()
		answers := wait()
		for i, a := range answers {
			if wantErr := size > 1 && i == size-1; (a.err != nil) != wantErr {
				t.Fatalf("size %d: signup %d answered %v", size, i, a.err)
			}
		}

		rows, err := db.reader.QueryContext(ctx, db.rstmts.text(`SELECT a.id, e.email_key, a.program_id, a.actor_kind, a.actor_user_id IS NULL,
				a.event_type, a.event_at, a.details
			FROM audit_events a JOIN entries e ON e.id = a.entry_id WHERE a.id > ? ORDER BY a.id`), lastID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		var ids []int64
		for rows.Next() {
			var id, at int64
			var email, program, kind, typ, details string
			var noActor bool
			if err := rows.Scan(&id, &email, &program, &kind, &noActor, &typ, &at, &details); err != nil {
				t.Fatal(err)
			}
			if program != sp.Program.ID || kind != "public" || !noActor || typ != "signup" ||
				at != Millis(clock.Now()) || details != `{"noticeVersion":1}` {
				t.Errorf("size %d: event %d: %s %s actorless=%v %s at %d %s", size, id, program, kind, noActor, typ, at, details)
			}
			got, ids = append(got, email), append(ids, id)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if !slices.Equal(got, want) {
			t.Fatalf("size %d: events for %q, want %q in queue order", size, got, want)
		}
		if n := len(ids); n > 0 && (ids[0] != lastID+1 || ids[n-1] != lastID+int64(n)) {
			t.Fatalf("size %d: event ids %d…%d after %d, want consecutive", size, ids[0], ids[n-1], lastID)
		}
		if n := mustCount(t, db, `SELECT count(*) FROM audit_events WHERE id > ?`, lastID); n != len(want) {
			t.Fatalf("size %d: %d events, want %d", size, n, len(want))
		}
	}
}

// TestSignup_ABatchReadsEachProgramOnceAndTheNextBatchAfresh: within a
// batch the first signup of a program reads the program, and the later
// ones only their receipt and address (readSignupState); each still gets
// the answer it would get alone — a duplicate, a same-key replay, an
// unknown slug twice, two programs interleaved. The next batch reads the
// program again: a program closed between batches refuses at once.
func TestSignup_ABatchReadsEachProgramOnceAndTheNextBatchAfresh(t *testing.T) {
	db := MustOpenDB(t)
	a := mustSignupProgram(t, db, "batch-read-a", 100, 100)
	b := mustSignupProgram(t, db, "batch-read-b", 100, 100)
	unknown := a.signupReq("nobody@example.test")
	unknown.Slug = "batch-read-none"
	a2 := a.signupReq("a2@example.test")
	reqs := []SignupRequest{
		a.signupReq("a1@example.test"), // 0: new
		b.signupReq("b1@example.test"), // 1: new
		unknown,                        // 2: not found
		a2,                             // 3: new
		unknown,                        // 4: not found again
		b.signupReq("a1@example.test"), // 5: new on b (a1 is listed on a only)
		a.signupReq("a1@example.test"), // 6: a duplicate of 0, fresh key
		a2,                             // 7: a same-key replay of 3
	}
	reqs[4].RequestKey = uuid.NewString()
	start := pausedBatcher(t, db)
	wait := submitInOrder(t, db, backgrounds(len(reqs)), reqs)
	start()
	answers := wait()
	want := []string{"new", "new", ENOTFOUND, "new", ENOTFOUND, "new", "duplicate", "replay"}
	for i, ans := range answers {
		got := ErrorCode(ans.err)
		switch {
		case ans.err != nil:
		case ans.res.Replay:
			got = "replay"
		case ans.res.duplicate:
			got = "duplicate"
		default:
			got = "new"
		}
		if got != want[i] {
			t.Errorf("signup %d: %s (%v), want %s", i, got, ans.err, want[i])
		}
	}
	if n := mustCount(t, db, `SELECT count(*) FROM entries WHERE program_id = ?`, a.Program.ID); n != 2 {
		t.Errorf("program a has %d entries, want 2", n)
	}
	if n := mustCount(t, db, `SELECT count(*) FROM entries WHERE program_id = ?`, b.Program.ID); n != 2 {
		t.Errorf("program b has %d entries, want 2", n)
	}

	mustSetProgram(t, db, b.Owner, b.Program.ID, func(s *ProgramSettings) { s.SignupOpen = ptrTo(false) })
	start = pausedBatcher(t, db)
	wait = submitInOrder(t, db, backgrounds(2), []SignupRequest{a.signupReq("a3@example.test"), b.signupReq("b3@example.test")})
	start()
	answers = wait()
	if answers[0].err != nil || ErrorCode(answers[1].err) != ECONFLICT {
		t.Fatalf("after b closed: a %v, b %v; want a admitted and b refused with %s", answers[0].err, answers[1].err, ECONFLICT)
	}
}

// Signups handed over while a batch's statements run join its commit, round
// after round, up to maxSignupBatch; the rest wait for the next commit.
func TestSignup_LateSignupsJoinTheRunningBatchUpToItsBound(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first       int   // queued when the batch is taken
		late        []int // handed over each time the batch's signups have run
		failing     int   // the signup, in handover order, that fails part-way; -1 for none
		wantCommits []int // signups stored per commit, in order
	}{
		{"alone", 1, nil, -1, []int{1}},
		{"two late rounds", 3, []int{4, 2}, -1, []int{9}},
		{"past the bound", maxSignupBatch - 2, []int{5}, -1, []int{maxSignupBatch, 3}},
		{"a late one fails alone", 2, []int{3}, 3, []int{4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, clock := mustOpenDBWithClock(t)
			sp := mustSignupProgram(t, db, "late", 1000, 1000)
			start := pausedBatcher(t, db)
			n := 0
			reqs := func(k int) []SignupRequest {
				rs := make([]SignupRequest, k)
				for i := range rs {
					rs[i] = sp.signupReq(fmt.Sprintf("late-%d@example.test", n))
					if n == tc.failing {
						// The counter's CHECK refuses the key: the batch rolls
						// back and runs again without this signup.
						rs[i].Attempts = &AttemptLimit{Max: 100, Key: func(time.Time) []byte { return make([]byte, 31) }}
					}
					n++
				}
				return rs
			}
			waits := []func() []batchAnswer{submitInOrder(t, db, backgrounds(tc.first), reqs(tc.first))}
			var mu sync.Mutex
			rounds := 0
			db.signupsRan = func() {
				mu.Lock()
				defer mu.Unlock()
				if rounds < len(tc.late) {
					k := tc.late[rounds]
					waits = append(waits, submitInOrder(t, db, backgrounds(k), reqs(k)))
				}
				rounds++
			}
			pending := func(w int) func() []batchAnswer {
				mu.Lock()
				defer mu.Unlock()
				if w < len(waits) {
					return waits[w]
				}
				return nil
			}
			// Each commit's new entries, counted after it returned: a late
			// round is stamped at a later reading of the clock than the
			// batch's first signups, so the join times no longer tell
			// commits apart.
			var commits []int
			stored := 0
			db.txHeld = func(time.Duration, time.Duration) {
				var n int
				if err := db.readRow(context.Background(), `SELECT count(*) FROM entries WHERE program_id = ?`,
					sp.Program.ID).Scan(&n); err != nil {
					t.Errorf("count entries after a transaction: %v", err)
				}
				mu.Lock()
				defer mu.Unlock()
				if n > stored {
					commits, stored = append(commits, n-stored), n
				}
			}
			// A clock that moves on every reading: each transaction has its own Tx.Now.
			clock.Step(time.Millisecond)
			start()
			// The late signups are handed over before the first commit, so
			// by the time the first answers arrive waits holds them all.
			for w := 0; pending(w) != nil; w++ {
				for i, a := range pending(w)() {
					// The failing signup is handed over in the first late round.
					wantErr := tc.failing >= 0 && w == 1 && i == tc.failing-tc.first
					if (a.err != nil) != wantErr {
						t.Fatalf("handover %d, signup %d: %+v, %v", w, i, a.res, a.err)
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(commits, tc.wantCommits) {
				t.Fatalf("signups per commit %v, want %v", commits, tc.wantCommits)
			}
			// Admitted in the order handed over: the late ones after the batch's own.
			got := mustColumn[string](t, db, `SELECT e.email_key FROM audit_events a JOIN entries e ON e.id = a.entry_id
				WHERE a.program_id = ? AND a.event_type = 'signup' ORDER BY a.id`, sp.Program.ID)
			var want []string
			for i := range n {
				if i != tc.failing {
					want = append(want, fmt.Sprintf("late-%d@example.test", i))
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("signup events for %v, want %v", got, want)
			}
		})
	}
}

// A signup that joins a running batch may have arrived after the batch
// read its clock, and in the next UTC hour: it is stamped at or after its
// own arrival, and counted in its own hour — on the hour's intake (10:00's
// cap of 1 is full, and the batch read the program for 10:00 when it
// began) and on the network's counter for that hour (a limit of 1, which
// 10:00 used up). A batch that admits on both sides of the hour counts
// each entry in its own hour.
func TestSignupBatch_ALateSignupIsStampedAtOrAfterItsArrivalInItsOwnHour(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	sp := mustSignupProgram(t, db, "late-hour", 100, 1)
	other := mustSignupProgram(t, db, "late-hour-other", 100, 100)
	limit := &AttemptLimit{Max: 1, Key: benchAttempts.Key}
	before, late := sp.signupReq("before@example.test"), sp.signupReq("late@example.test")
	before.Attempts, late.Attempts = limit, limit
	clock.Set(time.Date(2025, time.March, 10, 10, 59, 59, 800_000_000, time.UTC))
	mustSignup(t, db, before) // fills 10:00's intake and the network's 10:00 attempts

	start := pausedBatcher(t, db)
	clock.Set(time.Date(2025, time.March, 10, 10, 59, 59, 900_000_000, time.UTC))
	var transactions atomic.Int32
	db.txHeld = func(time.Duration, time.Duration) { transactions.Add(1) }
	// The batch begins at 10:59:59.9 with a replay of the first signup,
	// which reads the program's state for 10:00, and a new entry of the
	// other program.
	wait := submitInOrder(t, db, backgrounds(2), []SignupRequest{before, other.signupReq("early@example.test")})
	var waitLate func() []batchAnswer
	var arrived time.Time
	db.signupsRan = func() {
		if waitLate != nil {
			return
		}
		// The late signup arrives at 11:00:00.1, while the batch runs.
		arrived = clock.Add(200 * time.Millisecond)
		waitLate = submitInOrder(t, db, backgrounds(2), []SignupRequest{late, other.signupReq("late@example.test")})
	}
	start()
	answers := append(wait(), waitLate()...)
	if a := answers[0]; a.err != nil || !a.res.Replay {
		t.Fatalf("replay: %+v, %v; want the stored 202", a.res, a.err)
	}
	for i, a := range answers[1:] {
		if a.err != nil {
			t.Fatalf("signup %d: %v, want a 202", i+1, a.err)
		}
	}
	if n := transactions.Load(); n != 1 {
		t.Fatalf("%d write transactions, want 1: the late signup joins the running batch", n)
	}

	for what, q := range map[string]string{
		"entry":   `SELECT created_at FROM entries WHERE program_id = ? AND email_key = ?`,
		"choice":  `SELECT permission_at FROM entries WHERE program_id = ? AND email_key = ?`,
		"receipt": `SELECT accepted_at FROM signup_receipts WHERE program_id = ? AND request_key = ?`,
		"event": `SELECT a.event_at FROM audit_events a JOIN entries e ON e.id = a.entry_id
			WHERE a.event_type = 'signup' AND e.program_id = ? AND e.email_key = ?`,
	} {
		args := []any{sp.Program.ID, late.Email}
		if what == "receipt" {
			args[1] = late.RequestKey
		}
		if got := int64(mustCount(t, db, q, args...)); got < Millis(arrived) {
			t.Errorf("the late signup's %s is stamped %d, before its arrival at %d", what, got, Millis(arrived))
		}
	}
	ten, eleven := hourStart(arrived).Add(-time.Hour), hourStart(arrived)
	if got := hourCount(t, db, sp.Program.ID, ten); got != 1 {
		t.Errorf("10:00 intake=%d, want 1", got)
	}
	if got := hourCount(t, db, sp.Program.ID, eleven); got != 1 {
		t.Errorf("11:00 intake=%d, want 1: the late signup is counted in its own hour", got)
	}
	for _, hour := range []time.Time{ten, eleven} {
		if got := mustCount(t, db, `SELECT attempts FROM network_counters WHERE key = ?`, benchAttempts.Key(hour)); got != 1 {
			t.Errorf("network attempts of %s=%d, want 1", hour.Format("15:04"), got)
		}
	}
	mustCountersMatchEntries(t, db, sp.Program.ID, eleven, 1)
	if got := hourCount(t, db, other.Program.ID, ten); got != 1 {
		t.Errorf("the other program's 10:00 intake=%d, want 1", got)
	}
	mustCountersMatchEntries(t, db, other.Program.ID, eleven, 1)
}
