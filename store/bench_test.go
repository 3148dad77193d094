package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The store's benchmarks. They measure; they assert only that each
// operation succeeds. cmd/loadgen measures the same paths through the real
// binary; docs/PERFORMANCE.md records both.
//
//	go test -run '^$' -bench . -benchmem ./store

// benchCap is the largest queue and hourly cap a program may have.
const benchCap = MaxProgramCap

// benchStates spreads seeded entries over states, per 100 entries, as
// cmd/loadgen does.
var benchStates = []struct {
	state string
	per   int
}{{StateWaiting, 85}, {StateSelected, 10}, {StateDeclined, 3}, {StateWithdrawn, 2}}

func benchState(i int) string {
	k := i % 100
	for _, s := range benchStates {
		if k < s.per {
			return s.state
		}
		k -= s.per
	}
	return StateWaiting
}

// mustSeedEntries inserts n entries into the program in one transaction
// (insertEntry: counted as the store counts new entries), one second
// apart, ending at testEpoch, spread over states as benchStates says. It
// returns the IDs in queue order.
func mustSeedEntries(tb testing.TB, db *DB, programID, noticeID string, n int) []string {
	return mustSeedEntriesIn(tb, db, programID, noticeID, n, benchState)
}

// mustSeedEntriesIn is mustSeedEntries with the state of the i-th entry
// from state. Each entry is as the store leaves it in that state: a
// declined or withdrawn one has its erasure date.
func mustSeedEntriesIn(tb testing.TB, db *DB, programID, noticeID string, n int, state func(int) string) []string {
	tb.Helper()
	ids := make([]string, n)
	start := Millis(testEpoch) - int64(n)*1000
	pol := db.retention
	mustUpdate(tb, db, func(tx *Tx) error {
		for i := range n {
			// Each entry has its own second, so the queue order is the
			// insertion order whatever the random IDs are.
			ids[i] = uuid.NewString()
			at := start + int64(i)*1000
			hash := sha256.Sum256([]byte(ids[i]))
			s := state(i)
			var erase any
			if t := pol.eraseAfter(s, false, FromMillis(at)); t != nil {
				erase = Millis(*t)
			}
			if err := insertEntry(context.Background(), tx, newEntry{ID: ids[i], ProgramID: programID,
				Email: fmt.Sprintf("seed-%06d@example.test", i), NoticeID: noticeID, State: s, CreatedAt: at,
				RemovalHash: hash[:], EraseAfter: erase}); err != nil {
				return err
			}
		}
		return nil
	})
	return ids
}

// benchAttempts counts every benchmark signup against one network, as the
// handler does, with a limit the benchmark never reaches.
var benchAttempts = &AttemptLimit{Max: 1000000, Key: func(hour time.Time) []byte {
	k := sha256.Sum256([]byte("bench network " + hour.String()))
	return k[:]
}}

// BenchmarkSignup is one public signup (network counter, admission, entry,
// receipt, audit event: one BEGIN IMMEDIATE transaction, synchronous=FULL),
// on an empty program and on one that already holds 50,000 entries. The
// two should cost the same: occupancy and the hour bucket are counters,
// never a scan of the queue (docs/ARCHITECTURE.md#the-write-path).
func BenchmarkSignup(b *testing.B) {
	for _, pre := range []int{0, 50000} {
		b.Run(fmt.Sprintf("entries=%d", pre), func(b *testing.B) {
			if b.N > benchCap-pre {
				b.Skipf("b.N=%d signups would pass the queue cap of %d", b.N, benchCap)
			}
			db := MustOpenDB(b)
			sp := mustSignupProgram(b, db, "bench-signup", benchCap, benchCap)
			if pre > 0 {
				mustSeedEntries(b, db, sp.Program.ID, sp.Notice.ID, pre)
			}
			reqs := make([]SignupRequest, b.N)
			for i := range reqs {
				reqs[i] = sp.signupReq(fmt.Sprintf("bench-%d@example.test", i))
				reqs[i].Attempts = benchAttempts
			}
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				if _, err := db.Signup(ctx, reqs[i]); err != nil {
					b.Fatalf("signup %d: %v", i, err)
				}
			}
		})
	}
}

// BenchmarkSignupParallel is BenchmarkSignup from 32 goroutines at once:
// the writer serializes them, so this is the store's signup throughput
// under contention, without HTTP.
func BenchmarkSignupParallel(b *testing.B) {
	if b.N > benchCap {
		b.Skipf("b.N=%d signups would pass the queue cap of %d", b.N, benchCap)
	}
	db := MustOpenDB(b)
	sp := mustSignupProgram(b, db, "bench-parallel", benchCap, benchCap)
	reqs := make(chan SignupRequest, b.N)
	for i := range b.N {
		r := sp.signupReq(fmt.Sprintf("bench-%d@example.test", i))
		r.Attempts = benchAttempts
		reqs <- r
	}
	close(reqs)
	ctx := context.Background()
	b.SetParallelism(16) // 16 × GOMAXPROCS goroutines: 32 on two cores
	b.ResetTimer()
	cpu := processCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := db.Signup(ctx, <-reqs); err != nil {
				b.Errorf("signup: %v", err)
				return
			}
		}
	})
	// The process's CPU time (user + system, every thread) per signup:
	// what a signup costs, whatever else shares the machine's cores.
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkSignupBatch is the signup batcher's work without its
// goroutines: transactions of 16 signups of random addresses each, every
// signup through admission as in a batch, so that one run does the same
// work as the next. Its CPU time per signup depends on the machine; its
// instruction count does not, which makes it the measure for comparing
// two versions of the write path (docs/PERFORMANCE.md#cpu-and-instructions-per-signup):
//
//	go test -c -o store.test ./store
//	GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
//		./store.test -test.run '^$' -test.bench 'SignupBatch$' -test.benchtime 100x
//
// and the same with 400x: the difference of the two totals, divided by
// the 4,800 signups between them, is the instructions of one signup.
func BenchmarkSignupBatch(b *testing.B) {
	const perBatch = 16
	if b.N*perBatch > benchCap {
		b.Skipf("b.N=%d batches would pass the queue cap of %d", b.N, benchCap)
	}
	db := MustOpenDB(b)
	sp := mustSignupProgram(b, db, "bench-batch", benchCap, benchCap)
	reqs := make([]SignupRequest, b.N*perBatch)
	for i := range reqs {
		reqs[i] = sp.signupReq(uuid.NewString()[:13] + "@example.test")
		reqs[i].Attempts = benchAttempts
	}
	ctx := context.Background()
	b.ResetTimer()
	cpu := processCPU(b)
	for i := range b.N {
		err := db.update(ctx, false, func(tx *Tx) error {
			for _, r := range reqs[i*perBatch : (i+1)*perBatch] {
				if _, answer, err := db.admitOne(ctx, tx, r); err != nil || answer != nil {
					return fmt.Errorf("signup: %v, %v", answer, err)
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N*perBatch), "cpu-µs/signup")
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkQueue100k reads the owner's queue at 100,000 entries: the first
// page, a page 90,000 entries deep (keyset: the same cost), a state filter,
// and the per-state counts the queue page shows.
func BenchmarkQueue100k(b *testing.B) {
	const n = 100000
	db := MustOpenDB(b)
	sp := mustSignupProgram(b, db, "bench-queue", benchCap, benchCap)
	ids := mustSeedEntries(b, db, sp.Program.ID, sp.Notice.ID, n)
	deep := encodeCursor(Millis(testEpoch)-int64(n)*1000+int64(n*9/10)*1000, ids[n*9/10])
	ctx := context.Background()
	for _, c := range []struct {
		name string
		f    QueueFilter
	}{
		{"FirstPage", QueueFilter{}},
		{"DeepPage", QueueFilter{Cursor: deep}},
		{"StateSelected", QueueFilter{State: StateSelected}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				page, err := db.Queue(ctx, sp.Owner, sp.Program.ID, c.f)
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Entries) != DefaultPageSize {
					b.Fatalf("page of %d entries, want %d", len(page.Entries), DefaultPageSize)
				}
			}
		})
	}
	// Searches (seeded addresses are seed-000000@example.test …): one exact
	// address, a prefix matching 1,000 entries, one matching all 100,000,
	// and that one in a state and past a cursor; each reads one page.
	prefixCursor := encodeSearchCursor(ids[n/2])
	for _, c := range []struct {
		name string
		f    QueueFilter
		want int
	}{
		{"SearchExact", QueueFilter{Query: fmt.Sprintf("seed-%06d@example.test", n*9/10)}, 1},
		{"SearchPrefix1000", QueueFilter{Query: "seed-045"}, DefaultPageSize},
		{"SearchPrefixAll", QueueFilter{Query: "SEED"}, DefaultPageSize},
		{"SearchPrefixAllSelected", QueueFilter{Query: "seed", State: StateSelected}, DefaultPageSize},
		{"SearchPrefixAllDeep", QueueFilter{Query: "seed", Cursor: prefixCursor}, DefaultPageSize},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				page, err := db.Queue(ctx, sp.Owner, sp.Program.ID, c.f)
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Entries) != c.want {
					b.Fatalf("page of %d entries, want %d", len(page.Entries), c.want)
				}
			}
		})
	}
	b.Run("StateCounts", func(b *testing.B) {
		for range b.N {
			counts, err := db.StateCounts(ctx, sp.Owner, sp.Program.ID)
			if err != nil {
				b.Fatal(err)
			}
			if counts[StateWaiting] == 0 {
				b.Fatalf("counts %v: no waiting entries", counts)
			}
		}
	})
}

// BenchmarkReadPrivateContent is a redeemed recipient's private read: the
// access gate, the content and its asset list in one statement, serially
// and from many goroutines.
func BenchmarkReadPrivateContent(b *testing.B) {
	f := mustAccessFixture(b)
	p := f.program(b, "bench-private", "Private content for the benchmark.")
	const email, user = "reader@example.test", "user_bench_reader"
	f.grant(b, p, email, user)
	ctx := context.Background()
	read := func() error {
		_, err := f.db.ReadPrivateContent(ctx, p.Slug, user, []string{email})
		return err
	}
	if err := read(); err != nil {
		b.Fatalf("read: %v", err)
	}
	b.Run("Serial", func(b *testing.B) {
		for range b.N {
			if err := read(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := read(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkRedeem is one redemption behind the account and network attempt
// limits, as the handler makes it: both counters and the redemption in one
// BEGIN IMMEDIATE transaction. Each op redeems an invitation of its own,
// issued and delivered before the timer starts.
func BenchmarkRedeem(b *testing.B) {
	f := mustAccessFixture(b)
	p := f.program(b, "bench-redeem", "Redeemed.")
	mustSetProgram(b, f.db, f.owner, p.ID, func(s *ProgramSettings) {
		s.QueueCap, s.HourlyCap, s.SeatCap = ptrTo(benchCap), ptrTo(benchCap), ptrTo(benchCap)
	})
	codes := make([]string, b.N)
	for i := range b.N {
		codes[i], _, _ = f.invite(b, p, fmt.Sprintf("redeem-%d@example.test", i), true)
	}
	network := AttemptLimit{Max: 1000000, Key: benchAttempts.Key}
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		email := fmt.Sprintf("redeem-%d@example.test", i)
		account := AttemptLimit{Max: 10, Key: func(hour time.Time) []byte {
			k := sha256.Sum256([]byte("bench account " + email + hour.String()))
			return k[:]
		}}
		if _, err := f.db.Redeem(ctx, "user_"+email, []string{email}, codes[i], account, network); err != nil {
			b.Fatalf("redeem %d: %v", i, err)
		}
	}
}

// BenchmarkRawFullTxn is the ceiling the signup benchmarks compare with: a
// single-row INSERT in its own BEGIN IMMEDIATE transaction on a connection
// opened with the store's own DSN (WAL, synchronous=FULL), in the same
// temporary directory as the other benchmarks' databases.
func BenchmarkRawFullTxn(b *testing.B) {
	ctx := context.Background()
	w, err := sql.Open("sqlite", dsn(filepath.Join(b.TempDir(), "ceiling.db"), false))
	if err != nil {
		b.Fatal(err)
	}
	w.SetMaxOpenConns(1)
	b.Cleanup(func() { w.Close() })
	if err := checkPragmas(ctx, w, false); err != nil {
		b.Fatal(err)
	}
	if _, err := w.ExecContext(ctx, `CREATE TABLE ceiling (id INTEGER PRIMARY KEY, k BLOB NOT NULL, at INTEGER NOT NULL) STRICT`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		tx, err := w.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		k := sha256.Sum256(fmt.Appendf(nil, "%d", i))
		if _, err := tx.ExecContext(ctx, `INSERT INTO ceiling (k, at) VALUES (?, ?)`, k[:], i); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// largeBenchEnv names the variable that turns on the benchmarks that seed a
// million entries (about twenty minutes in all), left out of `just bench`.
const largeBenchEnv = "ADMIT_BENCH_LARGE"

// skipUnlessLarge skips a benchmark unless largeBenchEnv is set.
func skipUnlessLarge(b *testing.B) {
	if os.Getenv(largeBenchEnv) == "" {
		b.Skipf("set %s=1 to run (just bench-retire)", largeBenchEnv)
	}
}

// holdRecorder records how long each write transaction worked and held
// the write lock, and the process's CPU time since the previous one. In
// these benchmarks nothing else runs in the process, so that CPU time is
// the transaction's own (plus the short gap before it): a transaction that
// worked long on little CPU was waiting for the disk or for a core, not
// working.
type holdRecorder struct {
	tb         testing.TB // the benchmark, on whose goroutine the hook runs
	mu         sync.Mutex
	work, held []time.Duration
	cpu        []time.Duration
	lastCPU    time.Duration
}

func (h *holdRecorder) record(work, held time.Duration) {
	now := processCPU(h.tb)
	h.mu.Lock()
	defer h.mu.Unlock()
	var cpu time.Duration
	if h.lastCPU != 0 { // the first transaction's CPU time is not known
		cpu = now - h.lastCPU
	}
	h.work = append(h.work, work)
	h.held = append(h.held, held)
	h.cpu = append(h.cpu, cpu)
	h.lastCPU = now
}

// report adds the recorded maxima and 99th percentiles to the benchmark's
// metrics, how many transactions worked over 50 ms, and the most CPU time
// any of those used (over-50ms-max-cpu-ms).
func (h *holdRecorder) report(b *testing.B, ops int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	pct := func(ds []time.Duration, p float64) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		if len(s) == 0 {
			return 0
		}
		return s[min(len(s)-1, int(float64(len(s))*p))]
	}
	over, overCPU := 0, time.Duration(0)
	for i, d := range h.work {
		if d > 50*time.Millisecond {
			over++
			overCPU = max(overCPU, h.cpu[i])
		}
	}
	b.ReportMetric(ms(pct(h.work, 1)), "max-work-ms")
	b.ReportMetric(ms(pct(h.work, 0.99)), "p99-work-ms")
	b.ReportMetric(ms(pct(h.held, 1)), "max-tx-ms")
	b.ReportMetric(ms(pct(h.held, 0.99)), "p99-tx-ms")
	b.ReportMetric(float64(over), "work>50ms")
	b.ReportMetric(ms(overCPU), "over-50ms-max-cpu-ms")
	b.ReportMetric(float64(len(h.work))/float64(ops), "txs/op")
}

// BenchmarkRetireProgram retires a program holding 100,000 and 1,000,000
// entries (a program's queue cap is 100,000, but withdrawn entries leave the
// queue, so a long-running program can hold more). It reports the longest
// time any one write transaction held the write lock (max-tx-ms): every
// signup waits at most that long behind a retirement. Run it one iteration
// at a time, each on a fresh database:
//
//	ADMIT_BENCH_LARGE=1 go test ./store -run '^$' -bench BenchmarkRetireProgram -benchtime 1x -timeout 30m
func BenchmarkRetireProgram(b *testing.B) {
	skipUnlessLarge(b)
	for _, n := range []int{100000, 1000000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			ctx := context.Background()
			h := &holdRecorder{tb: b}
			for range b.N {
				b.StopTimer()
				db := MustOpenDB(b)
				sp := mustSignupProgram(b, db, "bench-retire", benchCap, benchCap)
				mustSeedEntries(b, db, sp.Program.ID, sp.Notice.ID, n)
				p := mustProgramByID(b, db, sp.Owner, sp.Program.ID)
				db.txHeld = h.record
				b.StartTimer()
				if _, err := db.RetireProgram(ctx, sp.Owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug}); err != nil {
					b.Fatalf("retire: %v", err)
				}
				// What the background retirer does in admit serve.
				if _, err := db.FinishRetirements(ctx); err != nil {
					b.Fatalf("finish retirement: %v", err)
				}
				b.StopTimer()
				db.txHeld = nil
				if got := mustCount(b, db, `SELECT count(*) FROM entries WHERE program_id = ? AND erase_after IS NULL AND erased_at IS NULL`, p.ID); got != 0 {
					b.Fatalf("%d entries left without an erasure date", got)
				}
			}
			h.report(b, b.N)
		})
	}
}

// BenchmarkSweepRetiredProgram erases a retired program's 100,000 and
// 1,000,000 entries once the retired-program period has passed: the sweep
// works in batches, and max-tx-ms is the longest any one of them held the
// write lock.
//
//	ADMIT_BENCH_LARGE=1 go test ./store -run '^$' -bench BenchmarkSweepRetiredProgram -benchtime 1x -timeout 60m
func BenchmarkSweepRetiredProgram(b *testing.B) {
	skipUnlessLarge(b)
	for _, n := range []int{100000, 1000000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			ctx := context.Background()
			h := &holdRecorder{tb: b}
			for range b.N {
				b.StopTimer()
				db, clock := mustOpenDBWithClock(b)
				sp := mustSignupProgram(b, db, "bench-sweep", benchCap, benchCap)
				mustSeedEntries(b, db, sp.Program.ID, sp.Notice.ID, n)
				p := mustProgramByID(b, db, sp.Owner, sp.Program.ID)
				if _, err := db.RetireProgram(ctx, sp.Owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug}); err != nil {
					b.Fatalf("retire: %v", err)
				}
				if _, err := db.FinishRetirements(ctx); err != nil {
					b.Fatalf("finish retirement: %v", err)
				}
				clock.Add(db.RetentionPolicy().RetiredProgram)
				db.txHeld = h.record
				b.StartTimer()
				erased, err := db.Sweep(ctx)
				b.StopTimer()
				db.txHeld = nil
				if err != nil {
					b.Fatalf("sweep: %v", err)
				}
				if erased != n {
					b.Fatalf("sweep erased %d of %d", erased, n)
				}
			}
			h.report(b, b.N)
		})
	}
}

// BenchmarkIssueInvitations compares, in one run, issuing 1,000
// invitations in one bulk request (one transaction) with issuing them one
// at a time (1,000 transactions), per invitation
// (docs/PERFORMANCE.md#go-benchmark-figures). One op is both: 1,000 of each,
// each on its own 1,000 selected entries.
func BenchmarkIssueInvitations(b *testing.B) {
	const n = 1000
	f := mustAccessFixture(b)
	ctx := context.Background()
	var bulk, single time.Duration
	round := 0
	for b.Loop() {
		b.StopTimer()
		round++
		p := f.program(b, fmt.Sprintf("bench-bulk-issue-%d", round), "Issued.")
		mustSetProgram(b, f.db, f.owner, p.ID, func(s *ProgramSettings) {
			s.QueueCap, s.HourlyCap, s.SeatCap = ptrTo(benchCap), ptrTo(benchCap), ptrTo(benchCap)
		})
		var noticeID string
		if err := f.db.View(ctx, func(tx *Tx) error {
			return tx.QueryRow(`SELECT id FROM notices WHERE program_id = ?`, p.ID).Scan(&noticeID)
		}); err != nil {
			b.Fatal(err)
		}
		ids := mustSeedEntriesIn(b, f.db, p.ID, noticeID, 2*n, func(int) string { return StateSelected })
		expires := f.clock.Now().Add(24 * time.Hour)
		b.StartTimer()
		start := time.Now()
		if _, err := f.db.IssueInvitations(ctx, f.owner, p.ID, NewInvitations{RequestKey: uuid.NewString(),
			EntryIDs: ids[:n], ExpiresAt: expires}); err != nil {
			b.Fatalf("bulk issue: %v", err)
		}
		bulk += time.Since(start)
		start = time.Now()
		for _, id := range ids[n:] {
			if _, err := f.db.IssueInvitation(ctx, f.owner, p.ID, id, NewInvitation{RequestKey: uuid.NewString(),
				ExpiresAt: expires}); err != nil {
				b.Fatalf("issue: %v", err)
			}
		}
		single += time.Since(start)
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(round*n) }
	b.ReportMetric(per(bulk), "bulk-µs/invitation")
	b.ReportMetric(per(single), "single-µs/invitation")
	b.ReportMetric(per(single)/per(bulk), "single/bulk")
}
