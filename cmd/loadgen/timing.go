package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// timingWarmup is how many unmeasured pairs run before each timing run.
const timingWarmup = 100

// timingVerdictPairs is the fewest pairs whose z the report calls a verdict.
const timingVerdictPairs = 1000

// TimingResult compares, on one route, the time to answer a signup for a
// new address with the time for an address already listed.
type TimingResult struct {
	Route string
	// New and Listed are the latencies, in the order they were measured.
	New, Listed []time.Duration
	// Errors counts answers other than 202.
	Errors int
}

// Z is the Mann-Whitney rank statistic of Listed against New; positive
// when listed addresses are answered more slowly.
func (t *TimingResult) Z() float64 { return mannWhitneyZ(t.Listed, t.New) }

// timing measures whether the time of a signup's answer tells whether the
// address was already listed: it signs up pairs addresses first, then, one
// request at a time on one keep-alive connection, sends pairs signups of
// new addresses and pairs of listed ones (each with a fresh request key),
// interleaved in pairs whose order is random. The JSON API and the form
// each get a run.
func (r *runner) timing(ctx context.Context, p *program, pairs int) error {
	pool := make([]string, pairs+timingWarmup)
	r.progress("timing: listing %d addresses", len(pool))
	for i := range pool {
		pool[i] = fmt.Sprintf("listed-%s-%d@example.test", r.runID, i)
		if err := signup(ctx, r.c, p, pool[i]); err != nil {
			return fmt.Errorf("timing pool: %w", err)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for _, route := range []string{"JSON API", "HTML form"} {
		send := r.timingJSON(p)
		if route == "HTML form" {
			send = r.timingForm(p)
		}
		res := &TimingResult{Route: route}
		r.progress("timing %s: %d pairs, one request at a time", route, pairs)
		for i := range pairs + timingWarmup {
			if err := ctx.Err(); err != nil {
				return err
			}
			newAddr := fmt.Sprintf("new-%s-%s-%d@example.test", strings.ToLower(fileName(route)), r.runID, i)
			listedFirst := rng.IntN(2) == 0
			for k := range 2 {
				listed := (k == 0) == listedFirst
				email := newAddr
				if listed {
					email = pool[i]
				}
				start := time.Now()
				err := send(ctx, email)
				d := time.Since(start)
				if err != nil {
					res.Errors++
					continue
				}
				if i < timingWarmup {
					continue
				}
				if listed {
					res.Listed = append(res.Listed, d)
				} else {
					res.New = append(res.New, d)
				}
			}
		}
		r.progress("  new p50 %s ms, listed p50 %s ms, z = %.2f, %d errors", ms(median(res.New)), ms(median(res.Listed)), res.Z(), res.Errors)
		r.timings = append(r.timings, res)
	}
	return nil
}

// timingJSON sends one JSON signup for email with a fresh key.
func (r *runner) timingJSON(p *program) func(context.Context, string) error {
	path := "/api/public/programs/" + p.Slug + "/signups"
	return func(ctx context.Context, email string) error {
		_, _, err := r.c.do(ctx, request{Method: http.MethodPost, Path: path, ContentType: "application/json",
			Body: signupBody(p, email), Want: http.StatusAccepted})
		return err
	}
}

// timingForm sends one form signup for email with a fresh key.
func (r *runner) timingForm(p *program) func(context.Context, string) error {
	path := "/waitlist/" + p.Slug
	version := strconv.Itoa(p.CurrentNoticeVersion)
	return func(ctx context.Context, email string) error {
		form := url.Values{"requestKey": {uuid.NewString()}, "email": {email},
			"noticeVersion": {version}, "permission": {"yes"}, "website": {""}}
		_, _, err := r.c.do(ctx, request{Method: http.MethodPost, Path: path, ContentType: "application/x-www-form-urlencoded",
			Body: []byte(form.Encode()), Want: http.StatusAccepted})
		return err
	}
}

// mannWhitneyZ is the Mann-Whitney U statistic of a against b as a z score
// (normal approximation, ties ranked by their mean rank and corrected for
// in the variance). Positive when a's values tend to be larger.
func mannWhitneyZ(a, b []time.Duration) float64 {
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		return 0
	}
	type obs struct {
		v     time.Duration
		fromA bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range a {
		all = append(all, obs{v, true})
	}
	for _, v := range b {
		all = append(all, obs{v, false})
	}
	slices.SortFunc(all, func(x, y obs) int {
		switch {
		case x.v < y.v:
			return -1
		case x.v > y.v:
			return 1
		}
		return 0
	})
	n := float64(n1 + n2)
	var rankA, ties float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // ranks i+1 … j, averaged
		for k := i; k < j; k++ {
			if all[k].fromA {
				rankA += rank
			}
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	u := rankA - float64(n1)*float64(n1+1)/2
	mean := float64(n1) * float64(n2) / 2
	variance := float64(n1) * float64(n2) / 12 * ((n + 1) - ties/(n*(n-1)))
	if variance <= 0 {
		return 0
	}
	return (u - mean) / math.Sqrt(variance)
}

// writeTimingReport prints the timing runs as a Markdown table.
func writeTimingReport(w io.Writer, results []*TimingResult) {
	if len(results) == 0 {
		return
	}
	fmt.Fprintln(w, "\n### Signup timing: new address vs listed address")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| route | pairs | new p50 ms | listed p50 ms | new p90 ms | listed p90 ms | new p99 ms | listed p99 ms | Mann-Whitney z | errors | verdict |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, t := range results {
		nw, ls := slices.Sorted(slices.Values(t.New)), slices.Sorted(slices.Values(t.Listed))
		pairs := min(len(nw), len(ls))
		verdict := "indistinguishable: z within ±3"
		switch {
		case pairs < timingVerdictPairs:
			verdict = fmt.Sprintf("too few pairs for a verdict (< %d)", timingVerdictPairs)
		case math.Abs(t.Z()) >= 3:
			verdict = "DISTINGUISHABLE: z beyond ±3"
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %.2f | %d | %s |\n", t.Route, pairs,
			ms(percentile(nw, 50)), ms(percentile(ls, 50)), ms(percentile(nw, 90)), ms(percentile(ls, 90)),
			ms(percentile(nw, 99)), ms(percentile(ls, 99)), t.Z(), t.Errors, verdict)
	}
}
