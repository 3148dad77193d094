package backup

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"admit/store"

	"github.com/google/uuid"
)

// mustBenchProgram creates a program with room for n signups and signs up n
// synthetic addresses, sixteen at a time.
func mustBenchProgram(tb testing.TB, db *store.DB, n int) {
	tb.Helper()
	ctx := context.Background()
	w, err := db.AddOwner(ctx, store.Actor{Kind: store.ActorSystem}, "Bench", "user_bench")
	if err != nil {
		tb.Fatal(err)
	}
	owner := store.Actor{Kind: store.ActorOwner, UserID: "user_bench"}
	p, err := db.CreateProgram(ctx, owner, store.NewProgram{WorkspaceID: w.ID, Slug: "bench", Name: "Bench", Purpose: "Benchmark",
		QueueCap: 100000, HourlyCap: 100000, SeatCap: 50, MaxInvitationDays: 14})
	if err != nil {
		tb.Fatal(err)
	}
	nt, err := db.PublishNotice(ctx, owner, p.ID, store.NewNotice{Purpose: "Benchmark", ContactText: "Benchmark contact.", RetentionText: "Benchmark retention."})
	if err != nil {
		tb.Fatal(err)
	}
	p, err = db.ProgramByID(ctx, owner, p.ID)
	if err != nil {
		tb.Fatal(err)
	}
	yes := true
	if _, err := db.UpdateProgram(ctx, owner, p.ID, store.ProgramSettings{ExpectedRevision: p.Revision, SignupOpen: &yes}); err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 16 {
				if _, err := db.Signup(ctx, store.SignupRequest{Slug: "bench", RequestKey: uuid.NewString(),
					Email: fmt.Sprintf("bench%d@example.test", i), NoticeVersion: nt.Version, Permission: true}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}

// BenchmarkDrill runs the restore drill against a database of 10,000
// signups and reports how long writes were held (writes-held-ms/op) next to
// the whole drill's time.
func BenchmarkDrill(b *testing.B) {
	e := MustTestEnv(b)
	db := e.MustOpenStore(b)
	r := e.MustStart(b)
	mustBenchProgram(b, db, 10000)
	mustSync(b, r)
	var held time.Duration
	for b.Loop() {
		res := mustDrill(b, r, db)
		if !res.OK() {
			b.Fatalf("drill failed: %q %v", res.Problem, res.Differences)
		}
		held += res.WritesHeld
	}
	b.ReportMetric(float64(held.Microseconds())/1000/float64(b.N), "writes-held-ms/op")
}
