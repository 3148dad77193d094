package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// goodputAt builds a level of accepted signups over one second, with
// the given accepted p99 (all accepted take it) and refusals in admit.
func goodputAt(clients, accepted int, p99 time.Duration, inAdmit []time.Duration) *GoodputResult {
	return &GoodputResult{Clients: clients, Elapsed: time.Second, InWindow: accepted, Accepted: sameLatency(p99, accepted),
		Refused: sameLatency(time.Millisecond, len(inAdmit)), RefusedInAdmit: inAdmit}
}

func TestEvaluateGoodput_JudgesEachLevelAsRatiosAgainstTheFirst(t *testing.T) {
	levels := []*GoodputResult{
		// The reference: 1,000/s, p99 50 ms, nothing refused.
		goodputAt(32, 1000, 50*time.Millisecond, nil),
		// Every target met, each right at its bound: 0.8 ×, 4 ×, 1 ms.
		goodputAt(512, 800, 200*time.Millisecond, sameLatency(time.Millisecond, 100)),
		// Every target missed: 0.79 ×, 4.02 ×, refusals at 1.2 ms, an error.
		goodputAt(1024, 790, 201*time.Millisecond, append(sameLatency(100*time.Microsecond, 98), sameLatency(1200*time.Microsecond, 2)...)),
	}
	levels[2].Errors = 1
	met, got := map[string]bool{}, map[string]string{}
	for _, c := range evaluateGoodput(levels) {
		met[c.Target], got[c.Target] = c.Met, c.Got
	}
	want := map[string]bool{
		"32 clients: errors = 0": true,
		"32 clients: refusal p99 in admit, its hold excluded, ≤ 1ms":   true,
		"512 clients: errors = 0":                                      true,
		"512 clients: goodput ≥ 0.8 × 32 clients'":                     true,
		"512 clients: accepted p99 ≤ 4 × 32 clients'":                  true,
		"512 clients: refusal p99 in admit, its hold excluded, ≤ 1ms":  true,
		"1024 clients: errors = 0":                                     false,
		"1024 clients: goodput ≥ 0.8 × 32 clients'":                    false,
		"1024 clients: accepted p99 ≤ 4 × 32 clients'":                 false,
		"1024 clients: refusal p99 in admit, its hold excluded, ≤ 1ms": false,
	}
	if len(met) != len(want) {
		t.Errorf("verdicts %v, want exactly %v", met, want)
	}
	for target, w := range want {
		if m, ok := met[target]; !ok {
			t.Errorf("no verdict for %q (have %v)", target, met)
		} else if m != w {
			t.Errorf("%q met=%v (%s), want %v", target, m, got[target], w)
		}
	}
	if g := got["1024 clients: goodput ≥ 0.8 × 32 clients'"]; !strings.HasPrefix(g, "0.79 × (790/s against 1000/s)") {
		t.Errorf("the 1024 level's goodput reads %q", g)
	}
	if g := got["1024 clients: accepted p99 ≤ 4 × 32 clients'"]; !strings.HasPrefix(g, "4.02 × (201.00 ms against 50.00 ms)") {
		t.Errorf("the 1024 level's p99 reads %q", g)
	}
	if g := got["32 clients: refusal p99 in admit, its hold excluded, ≤ 1ms"]; g != "none refused" {
		t.Errorf("a level with no refusal reads %q, want none refused", g)
	}
}

func TestEvaluateGoodput_NothingAcceptedOrRefusalsMissingFromTheLogAreMisses(t *testing.T) {
	levels := []*GoodputResult{
		goodputAt(32, 0, 0, nil),
		goodputAt(512, 100, time.Millisecond, nil),
	}
	// Refused at the client, yet no refusal in admit's log: not judged met.
	levels[1].Refused = sameLatency(time.Millisecond, 5)
	for _, c := range evaluateGoodput(levels) {
		if strings.HasPrefix(c.Target, "512 clients:") && !strings.HasSuffix(c.Target, "errors = 0") && c.Met {
			t.Errorf("%q met (%s), want a miss", c.Target, c.Got)
		}
	}
}

func TestSignupTimes_ReadsTheLevelsMeasuredSignups202sAnd503sFromAdmitsLog(t *testing.T) {
	log := strings.Join([]string{
		`time=2026-12-04T17:00:00.000Z level=INFO msg=request method=POST route="POST /api/public/programs/{slug}/signups" status=503 duration_ms=0.012 bytes=24 request_id=goodput2-11`,
		`time=2026-12-04T17:00:00.001Z level=INFO msg=request method=POST route="POST /api/public/programs/{slug}/signups" status=202 duration_ms=40.5 bytes=99 request_id=goodput2-12`,
		`time=2026-12-04T17:00:00.002Z level=INFO msg=request method=POST route="POST /waitlist/{slug}" status=503 duration_ms=9 bytes=900 request_id=goodput2-13`,
		`time=2026-12-04T17:00:00.003Z level=INFO msg=request method=POST route="POST /api/public/programs/{slug}/signups" status=503 duration_ms=1.5 bytes=24 request_id=goodput2-14`,
		`time=2026-12-04T17:00:00.004Z level=INFO msg=request method=POST route="POST /api/public/programs/{slug}/signups" status=503 duration_ms=250.3 bytes=24 request_id=goodput2-15 held_ms=250.1`,
		// The level's opening, another level, an ID admit made: not this level's measured attempts.
		`time=2026-12-04T17:00:00.005Z level=INFO msg=request method=POST route="POST /api/public/programs/{slug}/signups" status=202 duration_ms=90 bytes=99 request_id=goodput2-o16`,
		`time=2026-12-04T17:00:00.006Z level=INFO msg=request method=POST route="POST /api/public/programs/{slug}/signups" status=503 duration_ms=3 bytes=24 request_id=goodput1-17`,
		`time=2026-12-04T17:00:00.007Z level=INFO msg=request method=POST route="POST /api/public/programs/{slug}/signups" status=503 duration_ms=3 bytes=24 request_id=goodput21-18`,
		`time=2026-12-04T17:00:00.008Z level=INFO msg=request method=POST route="POST /api/public/programs/{slug}/signups" status=202 duration_ms=3 bytes=24 request_id=3f9a0c1d2e4b5a69`,
		`time=2026-12-04T17:00:00.009Z level=WARN msg="something \"quoted\"" status=503 duration_ms=7`,
		`not a log line`,
	}, "\n")
	accepted, refused, holds := signupTimes(strings.NewReader(log), "goodput2-")
	// A held refusal's time in admit is its duration less its hold.
	if want := []time.Duration{12 * time.Microsecond, 200 * time.Microsecond, 1500 * time.Microsecond}; !slices.Equal(refused, want) {
		t.Fatalf("refusal times %v, want %v", refused, want)
	}
	if want := []time.Duration{0, 0, 250100 * time.Microsecond}; !slices.Equal(holds, want) {
		t.Fatalf("refusal holds %v, want %v", holds, want)
	}
	if want := []time.Duration{40500 * time.Microsecond}; !slices.Equal(accepted, want) {
		t.Fatalf("accepted times %v, want %v", accepted, want)
	}
}

func TestGoodputResult_RecordsAcceptedRefusedAndErrors(t *testing.T) {
	var g GoodputResult
	g.record(3*time.Millisecond, http.StatusAccepted, nil)
	g.record(time.Millisecond, http.StatusServiceUnavailable, nil)
	g.record(time.Millisecond, http.StatusBadRequest, nil)
	g.record(time.Millisecond, 0, errors.New("connection reset"))
	// The opening's attempts: only the accepted one's latency is kept,
	// and an error is an error.
	g.recordOpening(9*time.Millisecond, http.StatusAccepted, nil)
	g.recordOpening(time.Millisecond, http.StatusServiceUnavailable, nil)
	g.recordOpening(time.Millisecond, 0, errors.New("connection refused"))
	// Goodput counts the 202s answered within the window, whichever part
	// of the level their attempt began in: not a 503, nor a 202 answered
	// before the window opened or after it closed (a client held past the
	// level's end).
	from := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	to := from.Add(500 * time.Millisecond)
	g.answered(from, http.StatusAccepted, from, to)
	g.answered(to, http.StatusAccepted, from, to)
	g.answered(from.Add(time.Millisecond), http.StatusServiceUnavailable, from, to)
	g.answered(from.Add(-time.Nanosecond), http.StatusAccepted, from, to)
	g.answered(to.Add(time.Nanosecond), http.StatusAccepted, from, to)
	g.Elapsed = to.Sub(from)
	if len(g.Accepted) != 1 || len(g.Refused) != 1 || g.Errors != 3 || len(g.ErrorSamples) != 3 {
		t.Fatalf("accepted %d, refused %d, errors %d: want 1, 1, 3", len(g.Accepted), len(g.Refused), g.Errors)
	}
	if !slices.Equal(g.Opening, []time.Duration{9 * time.Millisecond}) {
		t.Fatalf("the opening's accepted latencies %v, want 9ms", g.Opening)
	}
	if got := g.Goodput(); g.InWindow != 2 || got != 4 {
		t.Fatalf("%d answered in the window, goodput %v; want 2, 4 a second", g.InWindow, got)
	}
}

func TestParseFlags_GoodputLevels(t *testing.T) {
	d, err := parseFlags(nil, io.Discard)
	if err != nil || !slices.Equal(d.GoodputLevels, []int{32, 1024, 2048, 4096}) {
		t.Fatalf("default goodput levels %v (%v), want 32, 1024, 2048, 4096", d.GoodputLevels, err)
	}
	if d.wants("goodput") {
		t.Fatalf("the goodput scenario runs by default; it runs only when named")
	}
	c, err := parseFlags([]string{"-scenarios", "goodput", "-goodput-levels", "8,64"}, io.Discard)
	if err != nil || !slices.Equal(c.GoodputLevels, []int{8, 64}) || !c.wants("goodput") {
		t.Fatalf("goodput levels %v (%v), want 8, 64", c.GoodputLevels, err)
	}
	if _, err := parseFlags([]string{"-goodput-levels", "0"}, io.Discard); err == nil {
		t.Fatalf("-goodput-levels 0 accepted")
	}
}

// The goodput scenario against the real binary, unpinned (a test must not
// pin its own process), with a writer queue so small that the higher level
// is refused: the report has a row per level, the refusals' times read
// from admit's own request log (exactly those of the attempts measured,
// as many as the clients saw, though the clients never paused between the
// opening and the measurement), the opening's p99 shown, and every target
// judged.
func TestRun_GoodputScenarioReadsRefusalsFromAdmitsLog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs admit")
	}
	cfg, err := parseFlags([]string{"-src", "../..", "-dir", t.TempDir(), "-scenarios", "goodput", "-pin=false",
		"-goodput-levels", "2,48", "-write-queue", "2", "-duration", "1s", "-warmup", "500ms",
		"-max-requests", "5000", "-timeout", "5m"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out, progress bytes.Buffer
	if err := run(ctx, cfg, &out, &progress); err != nil {
		t.Fatalf("run: %v\nprogress:\n%s", err, progress.String())
	}
	report := out.String()
	if !strings.Contains(report, "not pinned: -pin=false.") {
		t.Errorf("the report does not say the run was not pinned:\n%s", report)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(report, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) == 16 {
			rows[cells[0]] = cells
		}
	}
	// | clients | accepted | accepted/s | × | p99 | × | p99 in admit | refused | refusal p99 in admit | hold | at the client | errors | CPU | opening p99 | peak RSS | load |
	for _, level := range []string{"2", "48"} {
		row := rows[level]
		if row == nil {
			t.Fatalf("no row for %s clients:\n%s", level, report)
		}
		if accepted, _ := strconv.Atoi(row[1]); accepted < 1 || row[11] != "0" {
			t.Errorf("%s clients: accepted %q, errors %q; want some accepted and no error", level, row[1], row[11])
		}
		if p99, err := strconv.ParseFloat(row[13], 64); err != nil || p99 <= 0 {
			t.Errorf("%s clients: the opening's p99 reads %q, want a time", level, row[13])
		}
		if rss, err := strconv.ParseFloat(row[14], 64); err != nil || rss <= 0 {
			t.Errorf("%s clients: admit's peak RSS reads %q, want MiB", level, row[14])
		}
	}
	if refused, _ := strconv.Atoi(rows["48"][7]); refused < 1 {
		t.Fatalf("48 clients against 2 places were refused %q times, want some 503s\n%s", rows["48"][7], report)
	}
	want := fmt.Sprintf("48 clients: refusal p99 in admit, its hold excluded, ≤ 1ms | %s ms (%s in the log)", rows["48"][8], rows["48"][7])
	if !strings.Contains(report, want) {
		t.Errorf("the report does not judge every refusal the clients saw from admit's log (want %q):\n%s", want, report)
	}
	for _, target := range []string{"48 clients: goodput ≥ 0.8 × 2 clients'", "48 clients: accepted p99 ≤ 4 × 2 clients'"} {
		if !strings.Contains(report, "| "+target+" | ") {
			t.Errorf("no verdict on %q:\n%s", target, report)
		}
	}
}
