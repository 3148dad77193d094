package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"admit/backup"
	"admit/handlers"
	"admit/internal/config"
	"admit/store"
)

// metrics are admit's Prometheus metrics, served on ADMIT_METRICS_ADDR
// (docs/DEPLOY.md#metrics-and-logs). Every label value is a fixed name, a
// registered route pattern or a program ID: never an address, token, code,
// user ID or raw path.
type metrics struct {
	reg *prometheus.Registry

	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	writeWait prometheus.Histogram
	writeHold prometheus.Histogram
	// holdMax is the longest write-lock hold since start, in seconds.
	holdMax   *maxGauge
	commit    prometheus.Histogram
	commitMax *maxGauge
	batch     prometheus.Histogram
	signups   *prometheus.CounterVec
	invites   *prometheus.CounterVec
	redeemErr *prometheus.CounterVec
	sweeps    prometheus.Counter
	erased    prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "admit_http_requests_total",
		Help: "HTTP requests by method, route pattern and status class."}, []string{"method", "route", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "admit_http_request_duration_seconds",
		Help:    "HTTP request latency by method and route pattern.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"method", "route"})
	m.writeWait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "admit_store_write_lock_wait_seconds",
		Help:    "How long write transactions waited for the database write lock.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}})
	m.writeHold = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "admit_store_write_lock_hold_seconds",
		Help:    "How long write transactions held the database write lock, commit included.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}})
	m.holdMax = newMaxGauge(prometheus.GaugeOpts{Name: "admit_store_write_lock_hold_max_seconds",
		Help: "The longest a write transaction has held the database write lock since start."})
	m.commit = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "admit_store_commit_seconds",
		Help:    "How long write transactions took to commit (WAL writes and fsync), a part of their hold.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}})
	m.commitMax = newMaxGauge(prometheus.GaugeOpts{Name: "admit_store_commit_max_seconds",
		Help: "The longest a write transaction's commit has taken since start."})
	m.batch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "admit_signup_batch_size",
		Help: "Signups that shared one commit (group commit).", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128}})
	m.signups = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "admit_signups_total",
		Help: "Signups by outcome."}, []string{"outcome"})
	m.invites = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "admit_invitations_total",
		Help: "Invitations issued, redeemed and revoked."}, []string{"event"})
	m.redeemErr = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "admit_redemption_failures_total",
		Help: "Refused redemptions by reason."}, []string{"reason"})
	m.sweeps = prometheus.NewCounter(prometheus.CounterOpts{Name: "admit_retention_sweeps_total",
		Help: "Retention sweeps run."})
	m.erased = prometheus.NewCounter(prometheus.CounterOpts{Name: "admit_retention_entries_erased_total",
		Help: "Entries erased by retention sweeps."})
	// Every fixed label value exists from the start, so a rate over it is
	// defined before the first event.
	for _, o := range store.SignupOutcomes {
		m.signups.WithLabelValues(o)
	}
	for _, e := range []string{"issued", "redeemed", "revoked"} {
		m.invites.WithLabelValues(e)
	}
	for _, r := range []string{store.EINVALID, store.ENOTFOUND, store.ECONFLICT, "rate_limited", store.OutcomeError} {
		m.redeemErr.WithLabelValues(r)
	}
	m.reg.MustRegister(m.requests, m.latency, m.writeWait, m.writeHold, m.holdMax, m.commit, m.commitMax, m.batch, m.signups, m.invites, m.redeemErr, m.sweeps, m.erased,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Request implements handlers.RequestObserver.
func (m *metrics) Request(method, route string, status int, d time.Duration) {
	m.requests.WithLabelValues(method, route, strconv.Itoa(status/100)+"xx").Inc()
	m.latency.WithLabelValues(method, route).Observe(d.Seconds())
}

// The store.Observer methods.

func (m *metrics) WriteLockWait(d time.Duration) { m.writeWait.Observe(d.Seconds()) }
func (m *metrics) WriteLockHeld(d time.Duration) {
	m.writeHold.Observe(d.Seconds())
	m.holdMax.raise(d.Seconds())
}
func (m *metrics) WriteCommit(d time.Duration) {
	m.commit.Observe(d.Seconds())
	m.commitMax.raise(d.Seconds())
}
func (m *metrics) SignupBatch(n int)       { m.batch.Observe(float64(n)) }
func (m *metrics) Signup(outcome string)   { m.signups.WithLabelValues(outcome).Inc() }
func (m *metrics) Invitation(event string) { m.invites.WithLabelValues(event).Inc() }
func (m *metrics) RedemptionFailed(reason string) {
	m.redeemErr.WithLabelValues(reason).Inc()
}
func (m *metrics) Sweep(erased int) {
	m.sweeps.Inc()
	m.erased.Add(float64(erased))
}

// watch adds the gauges read at scrape time: each program's queue and
// state counts, and the backup's lag, last sync and last restore drill.
func (m *metrics) watch(db *store.DB, repl *backup.Replicator, logger *slog.Logger) {
	m.reg.MustRegister(&scrapeCollector{db: db, repl: repl, log: logger})
}

var (
	descOccupied = prometheus.NewDesc("admit_program_queue_occupied", "Entries holding a queue place, by program ID.", []string{"program_id"}, nil)
	descCap      = prometheus.NewDesc("admit_program_queue_capacity", "The queue cap, by program ID.", []string{"program_id"}, nil)
	descEntries  = prometheus.NewDesc("admit_program_entries", "Entries by program ID and state, erased ones included (they keep their state).", []string{"program_id", "state"}, nil)
	descScrapeOK = prometheus.NewDesc("admit_store_scrape_ok", "1 when the program counts could be read for this scrape.", nil, nil)
	descLag      = prometheus.NewDesc("admit_backup_lag_seconds", "How long committed changes have waited for the replica; 0 when none wait.", nil, nil)
	descLastSync = prometheus.NewDesc("admit_backup_last_sync_timestamp_seconds", "When the replica last held every change (Unix time); 0 before the first sync.", nil, nil)
	descVerified = prometheus.NewDesc("admit_backup_drill_last_success_timestamp_seconds", "When a restore drill last found the backup restorable (Unix time); 0 if none since start.", nil, nil)
	descDrillOK  = prometheus.NewDesc("admit_backup_drill_ok", "1 while the last restore drill found the backup restorable, 0 after a failed one.", nil, nil)
)

// scrapeCollector reads the store and the replicator on every scrape.
type scrapeCollector struct {
	db   *store.DB
	repl *backup.Replicator
	log  *slog.Logger
}

func (c *scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOccupied, descCap, descEntries, descScrapeOK, descLag, descLastSync, descVerified, descDrillOK} {
		ch <- d
	}
}

func (c *scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.db.ProgramCounts(ctx)
	ok := 1.0
	if err != nil {
		ok = 0
		c.log.Warn("metrics: read program counts", "err", err)
	}
	ch <- prometheus.MustNewConstMetric(descScrapeOK, prometheus.GaugeValue, ok)
	for _, p := range counts {
		ch <- prometheus.MustNewConstMetric(descOccupied, prometheus.GaugeValue, float64(p.Occupied), p.ID)
		ch <- prometheus.MustNewConstMetric(descCap, prometheus.GaugeValue, float64(p.QueueCap), p.ID)
		for state, n := range p.States {
			ch <- prometheus.MustNewConstMetric(descEntries, prometheus.GaugeValue, float64(n), p.ID, state)
		}
	}
	if c.repl == nil {
		return
	}
	if st, err := c.repl.Status(); err == nil {
		ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, st.Lag.Seconds())
		ch <- prometheus.MustNewConstMetric(descLastSync, prometheus.GaugeValue, unixSeconds(st.LastSync))
	}
	d := c.repl.DrillStatus()
	ch <- prometheus.MustNewConstMetric(descVerified, prometheus.GaugeValue, unixSeconds(d.VerifiedAt))
	drillOK := 1.0
	if !d.FailingSince.IsZero() || (!d.LastFailure.IsZero() && d.LastFailure.After(d.VerifiedAt)) {
		drillOK = 0
	}
	ch <- prometheus.MustNewConstMetric(descDrillOK, prometheus.GaugeValue, drillOK)
}

// unixSeconds is t as Unix seconds, 0 for the zero time.
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// startMetrics serves /metrics on its own listener and returns the bound
// address and the function that stops it.
func startMetrics(addr string, m *metrics, logger *slog.Logger) (net.Addr, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics listener stopped", "err", err)
		}
	}()
	logger.Info("metrics listening", "addr", ln.Addr().String())
	return ln.Addr(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// newServeMetrics returns serve's metrics, or nil when ADMIT_METRICS_ADDR
// is unset (metrics are off by default).
func newServeMetrics(cfg *config.Config) *metrics {
	if cfg.MetricsAddr == "" {
		return nil
	}
	return newMetrics()
}

// storeOptions adds the store observer to opt when metrics are on.
func (m *metrics) storeOptions(opt store.Options) store.Options {
	if m != nil {
		opt.Observer = m
	}
	return opt
}

// requestObserver is m as the handlers' request observer, nil when off.
func (m *metrics) requestObserver() handlers.RequestObserver {
	if m == nil {
		return nil
	}
	return m
}

// start serves the metrics when they are on, printing where, and returns
// the function that stops them.
func (m *metrics) start(cfg *config.Config, db *store.DB, repl *backup.Replicator, stdout io.Writer, logger *slog.Logger) (stop func(), err error) {
	if m == nil {
		return func() {}, nil
	}
	m.watch(db, repl, logger)
	addr, stop, err := startMetrics(cfg.MetricsAddr, m, logger)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", addr)
	return stop, nil
}

// maxGauge is a gauge that only rises: the largest value it was given.
type maxGauge struct {
	desc *prometheus.Desc
	bits atomic.Uint64 // math.Float64bits of the largest value
}

func newMaxGauge(opts prometheus.GaugeOpts) *maxGauge {
	return &maxGauge{desc: prometheus.NewDesc(opts.Name, opts.Help, nil, nil)}
}

// raise sets the gauge to v if v is larger than its value.
func (g *maxGauge) raise(v float64) {
	for {
		old := g.bits.Load()
		if v <= math.Float64frombits(old) || g.bits.CompareAndSwap(old, math.Float64bits(v)) {
			return
		}
	}
}

func (g *maxGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *maxGauge) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, math.Float64frombits(g.bits.Load()))
}
