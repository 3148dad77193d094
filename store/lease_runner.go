package store

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// leaseMaxRetry bounds the wait after a failed taking or renewal, when
// that is shorter than the renewal interval.
const leaseMaxRetry = 30 * time.Second

// leaseReleaseTimeout bounds the release RunLeased makes when it stops; a
// release that does not commit leaves the lease to expire.
const leaseReleaseTimeout = 2 * time.Second

// LeasedJob is background work that runs on one server at a time, under
// a named lease (RunLeased).
type LeasedJob struct {
	// Lease names the lease, Holder is this server's ID (NewLeaseHolder).
	Lease, Holder string
	// TTL is how long each taking or renewal holds the lease.
	TTL time.Duration
	// Run is the work. It runs while the lease is held, and must return
	// soon after its context ends: when the lease is lost, a renewal
	// fails or RunLeased stops.
	Run func(ctx context.Context)
	// After is the timer RunLeased waits with; nil means time.After. A
	// test drives the runner with its own, in step with its clock.
	After func(d time.Duration) <-chan time.Time
}

// leasedRun is one run of a LeasedJob's work, under one holding.
type leasedRun struct {
	lease  Lease
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// errLeaseStopped ends a run whose runner stops it (lost, failed or done).
var errLeaseStopped = errors.New("lease runner stopped the work")

// startLeasedRun runs work under l in its own goroutine.
func startLeasedRun(ctx context.Context, l Lease, work func(context.Context)) *leasedRun {
	runCtx, cancel := context.WithCancelCause(ctx)
	r := &leasedRun{lease: l, cancel: cancel, done: make(chan struct{})}
	r.ctx = withLeaseFence(runCtx, l, cancel)
	go func() {
		defer close(r.done)
		work(r.ctx)
	}()
	return r
}

// stop ends the run and waits until its work has returned; it returns nil
// so a caller can write run = run.stop(). A nil run is not running.
func (r *leasedRun) stop() *leasedRun { return r.stopFor(errLeaseStopped) }

// stopFor is stop with the cause the work's context reports.
func (r *leasedRun) stopFor(cause error) *leasedRun {
	if r != nil {
		r.cancel(cause)
		<-r.done
	}
	return nil
}

// RunLeased runs job's work while this server holds job's lease, until ctx
// ends. It tries to take the lease at once, so work whose lease is free
// starts without delay; while the lease is held it renews it every third
// of the TTL; while another holds it, it tries again every third of the
// TTL, or when that holding expires if sooner, so it takes over within
// the TTL of the holder's last renewal. The work's context ends as soon as
// a renewal fails or finds the lease lost (or the work's own fenced write
// finds it, checkLease), and RunLeased waits for the work to return before
// it tries again: one server never runs two of it. When ctx ends it stops
// the work, waits for it and releases the lease, so another server takes
// over at once. If the work returns on its own while the lease is held,
// RunLeased releases the lease and returns.
func (db *DB) RunLeased(ctx context.Context, job LeasedJob, log *slog.Logger) {
	after := job.After
	if after == nil {
		after = time.After
	}
	var (
		run     *leasedRun
		backoff time.Duration
	)
	defer func() { db.stopLeased(ctx, run, log) }()
	for {
		l, err := db.TakeLease(ctx, job.Lease, job.Holder, job.TTL)
		wait := max(job.TTL/3, time.Millisecond)
		switch {
		case ctx.Err() != nil:
			if run == nil && err == nil && l.HeldBy(job.Holder) {
				// Taken just as the server stops: nothing runs under it
				// yet, but it is held, so release it as a run's is.
				db.releaseLease(ctx, l, log)
			}
			return
		case err != nil:
			if run != nil {
				log.Warn("renewing a lease failed: its work stops here until the lease is taken again",
					"lease", job.Lease, "err", err)
			} else {
				log.Warn("taking a lease failed; retrying", "lease", job.Lease, "err", err)
			}
			run = run.stop()
			backoff = min(max(2*backoff, 100*time.Millisecond), leaseMaxRetry)
			wait = min(wait, backoff)
		case !l.HeldBy(job.Holder):
			backoff = 0
			if run != nil {
				log.Warn("lease lost to another server: its work stops here", "lease", job.Lease, "epoch", l.Epoch)
			}
			run = run.stop()
			wait = min(wait, l.Expires.Sub(l.At))
		default:
			backoff = 0
			if run != nil && run.lease.Epoch != l.Epoch {
				run = run.stop() // a late renewal took the lease anew: the old run's fence has failed
			}
			if run == nil {
				log.Debug("lease taken: its work runs here", "lease", job.Lease, "epoch", l.Epoch)
				run = startLeasedRun(ctx, l, job.Run)
			}
		}
		var done <-chan struct{}
		if run != nil {
			done = run.done
		}
		select {
		case <-ctx.Done():
			return
		case <-after(wait):
		case <-done:
			if ctx.Err() != nil || !errors.Is(context.Cause(run.ctx), ErrLeaseLost) {
				return // stopping, or the work is done: release the lease
			}
			run = nil // its fenced write found the lease lost: see who holds it now
		}
	}
}

// stopLeased stops run, if any, waits for its work and releases its lease.
func (db *DB) stopLeased(ctx context.Context, run *leasedRun, log *slog.Logger) {
	if run == nil {
		return
	}
	// The run's context ends with ctx anyway; its cause is ctx's whichever
	// cancellation reaches the run first.
	cause := context.Cause(ctx)
	if cause == nil {
		cause = errLeaseStopped
	}
	run.stopFor(cause)
	db.releaseLease(ctx, run.lease, log)
}

// releaseLease releases l as the server stops, within leaseReleaseTimeout
// of ctx's end.
func (db *DB) releaseLease(ctx context.Context, l Lease, log *slog.Logger) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
	defer cancel()
	if err := db.ReleaseLease(rctx, l); err != nil {
		log.Warn("releasing a lease failed: another server takes its work over when it expires", "lease", l.Name, "err", err)
	}
}
