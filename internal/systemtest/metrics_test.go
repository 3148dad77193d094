package systemtest

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"admit/store"
)

// metricsURL reads the "metrics on" line serve prints after the
// development sign-in line.
func metricsURL(tb testing.TB, srv *runningServer) string {
	tb.Helper()
	for range 3 {
		if u, ok := strings.CutPrefix(srv.nextLine(tb), "metrics on "); ok {
			return u
		}
	}
	tb.Fatal("serve printed no \"metrics on\" line")
	return ""
}

// scrape is one scrape: the exposition text and its parsed families.
type scrape struct {
	text     string
	families map[string]*dto.MetricFamily
}

func mustScrape(tb testing.TB, u string) scrape {
	tb.Helper()
	code, body := get(tb, http.DefaultClient, u)
	if code != http.StatusOK {
		tb.Fatalf("GET %s: %d", u, code)
	}
	// admit's metric names are all in the legacy character set
	// ([a-zA-Z_:][a-zA-Z0-9_:]*): parse them as a Prometheus 2 server does.
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		tb.Fatalf("parse metrics: %v\n%s", err, body)
	}
	return scrape{text: body, families: fams}
}

// value sums the samples of family name whose labels include want (a
// counter's or gauge's value, a histogram's count).
func (s scrape) value(name string, want ...string) float64 {
	f := s.families[name]
	if f == nil {
		return 0
	}
	var sum float64
outer:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				continue outer
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// histogramSum is the sum of a histogram without labels.
func (s scrape) histogramSum(name string) float64 {
	if f := s.families[name]; f != nil && len(f.Metric) == 1 && f.Metric[0].Histogram != nil {
		return f.Metric[0].Histogram.GetSampleSum()
	}
	return 0
}

func TestMetrics_SeriesMoveWithRequestsAndCarryNoPersonalData(t *testing.T) {
	srv := MustRunServe(t, map[string]string{"ADMIT_ADDR": "127.0.0.1:0", "ADMIT_DATA": t.TempDir(), "ADMIT_METRICS_ADDR": "127.0.0.1:0"})
	mu := metricsURL(t, srv)
	c := &http.Client{Timeout: 10 * time.Second}
	if code, _ := get(t, c, srv.URL+"/metrics"); code != http.StatusNotFound {
		t.Fatalf("GET /metrics on the public listener: %d, want 404", code)
	}
	version := demoNoticeVersion(t, c, srv.URL)
	before := mustScrape(t, mu)

	// Everything personal this test sends; none of it may reach a series.
	var secrets []string
	const n = 8
	keys, tokens := make([]string, n), make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		keys[i] = uuid.NewString()
		email := fmt.Sprintf("metrics-person-%d@example.com", i)
		secrets = append(secrets, keys[i], email)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, r, err := trySignup(c, srv.URL, keys[i], email, version); err != nil || code != http.StatusAccepted {
				t.Errorf("signup %d: %d %v", i, code, err)
			} else {
				tokens[i] = r.RemovalToken
			}
		}()
	}
	wg.Wait()
	secrets = append(secrets, tokens...)
	dupKey := uuid.NewString()
	secrets = append(secrets, dupKey)
	if code, _ := postSignup(t, c, srv.URL, dupKey, "metrics-person-0@example.com", version); code != http.StatusAccepted {
		t.Fatalf("duplicate: %d", code)
	}
	if code, _ := postSignup(t, c, srv.URL, keys[1], "metrics-person-1@example.com", version); code != http.StatusAccepted {
		t.Fatalf("replay: %d", code)
	}
	if code, _ := postSignup(t, c, srv.URL, uuid.NewString(), "not-an-address-metrics-invalid", version); code != http.StatusBadRequest {
		t.Fatalf("invalid: %d", code)
	}
	secrets = append(secrets, "not-an-address-metrics-invalid", "path-person@example.com", "query-person", "tok_metrics_secret")
	get(t, c, srv.URL+"/waitlist/demo?email=query-person%40example.com&token=tok_metrics_secret")
	get(t, c, srv.URL+"/no-such/path-person@example.com")
	get(t, c, srv.URL+"//waitlist/path-person@example.com")

	after := mustScrape(t, mu)
	delta := func(name string, labels ...string) float64 {
		return after.value(name, labels...) - before.value(name, labels...)
	}
	for _, tc := range []struct {
		what string
		got  float64
		want float64
	}{
		{"accepted signups", delta("admit_signups_total", "outcome", "accepted"), n},
		{"duplicate signups", delta("admit_signups_total", "outcome", "duplicate"), 1},
		{"replayed signups", delta("admit_signups_total", "outcome", "replay"), 1},
		{"invalid signups", delta("admit_signups_total", "outcome", "invalid"), 1},
		{"signup requests answered 2xx", delta("admit_http_requests_total", "route", "POST /api/public/programs/{slug}/signups", "code", "2xx"), n + 2},
		{"signup requests answered 4xx", delta("admit_http_requests_total", "route", "POST /api/public/programs/{slug}/signups", "code", "4xx"), 1},
		{"signup latency observations", delta("admit_http_request_duration_seconds", "route", "POST /api/public/programs/{slug}/signups"), n + 3},
		{"waitlist page views", delta("admit_http_requests_total", "route", "GET /waitlist/{slug}", "code", "2xx"), 1},
		// The accepted ones, the duplicate and the replay: a key is read
		// under the writer's lock, so a replay is answered in a batch too.
		{"signups committed in batches", after.histogramSum("admit_signup_batch_size") - before.histogramSum("admit_signup_batch_size"), n + 2},
	} {
		if tc.got != tc.want {
			t.Errorf("%s moved by %v, want %v", tc.what, tc.got, tc.want)
		}
	}
	if d := delta("admit_store_write_lock_wait_seconds"); d < 1 {
		t.Errorf("write-lock waits moved by %v, want at least one per batch", d)
	}
	if w, h := delta("admit_store_write_lock_wait_seconds"), delta("admit_store_write_lock_hold_seconds"); h != w {
		t.Errorf("write-lock holds moved by %v, want exactly the %v transactions that waited", h, w)
	}
	if mx := after.value("admit_store_write_lock_hold_max_seconds"); mx <= 0 || mx > 10 {
		t.Errorf("longest write-lock hold %v s, want a positive duration", mx)
	}
	if d := delta("admit_program_entries", "state", "waiting"); d != n {
		t.Errorf("waiting entries moved by %v, want %d", d, n)
	}
	if d := delta("admit_program_queue_occupied"); d != n {
		t.Errorf("queue occupancy moved by %v, want %d", d, n)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "admit_invitations_total", "admit_redemption_failures_total", "admit_retention_sweeps_total"} {
		if after.families[name] == nil {
			t.Errorf("no %s series", name)
		}
	}
	if after.value("admit_retention_sweeps_total") < 1 {
		t.Error("the sweep at start was not counted")
	}

	for _, s := range secrets {
		if s != "" && strings.Contains(after.text, s) {
			t.Errorf("the metrics carry %q", s)
		}
	}
	checkMetricLabels(t, after)
}

// checkMetricLabels fails unless every label value of admit's series is a
// fixed name, a route pattern or a program ID.
func checkMetricLabels(t *testing.T, s scrape) {
	t.Helper()
	methods := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "OTHER"}
	states := []string{store.StateWaiting, store.StateSelected, store.StateInvited, store.StateActive, store.StateDeclined,
		store.StateWithdrawn, store.StateRevoked}
	pattern := regexp.MustCompile(`^((GET|HEAD|POST|PUT|PATCH|DELETE) )?/[a-z0-9/{}$._-]*$`)
	programID := regexp.MustCompile(`^[0-9a-f-]{36}$`)
	allowed := map[string]func(string) bool{
		"method":  func(v string) bool { return slices.Contains(methods, v) },
		"route":   func(v string) bool { return v == "unmatched" || pattern.MatchString(v) && !strings.Contains(v, "@") },
		"code":    func(v string) bool { return regexp.MustCompile(`^[1-5]xx$`).MatchString(v) },
		"outcome": func(v string) bool { return slices.Contains(store.SignupOutcomes, v) },
		"event":   func(v string) bool { return slices.Contains([]string{"issued", "redeemed", "revoked"}, v) },
		"reason": func(v string) bool {
			return slices.Contains([]string{"invalid", "not_found", "conflict", "rate_limited", "error"}, v)
		},
		"state":      func(v string) bool { return slices.Contains(states, v) },
		"program_id": programID.MatchString,
	}
	for name, f := range s.families {
		if !strings.HasPrefix(name, "admit_") {
			continue
		}
		for _, m := range f.Metric {
			for _, l := range m.Label {
				ok := allowed[l.GetName()]
				if ok == nil || !ok(l.GetValue()) {
					t.Errorf("%s: label %s=%q is not a fixed name, route pattern or program ID", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
}

func TestMetrics_BackupLagSyncAndDrillWhileReplicating(t *testing.T) {
	b := MustBackupEnv(t)
	b.Env["ADMIT_METRICS_ADDR"] = "127.0.0.1:0"
	srv := MustRunServe(t, b.Env)
	mu := metricsURL(t, srv)
	start := float64(time.Now().Add(-time.Minute).Unix())
	// The drill right after start and the first sync show within seconds.
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := mustScrape(t, mu)
		synced, verified := s.value("admit_backup_last_sync_timestamp_seconds"), s.value("admit_backup_drill_last_success_timestamp_seconds")
		if synced > start && verified > start && s.value("admit_backup_drill_ok") == 1 {
			if lag := s.value("admit_backup_lag_seconds"); lag < 0 || lag > 60 {
				t.Fatalf("backup lag %v s", lag)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: last sync %v, last verified %v, drill ok %v (want both after %v and ok 1)",
				synced, verified, s.value("admit_backup_drill_ok"), start)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
