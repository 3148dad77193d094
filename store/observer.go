package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Observer is told what the store does, for metrics. Its methods are
// called after the fact (a signup's outcome once its commit returned), from
// any goroutine, and must return quickly. Every argument is a count, a
// duration or one of the fixed names listed with the method: never an
// address, token, code or user ID.
type Observer interface {
	// WriteLockWait is how long a write transaction waited for the write
	// lock (admit's gate and BEGIN IMMEDIATE) before it began.
	WriteLockWait(d time.Duration)
	// WriteLockHeld is how long a write transaction held the write lock:
	// from BEGIN IMMEDIATE to the end of its commit or rollback, the
	// commit's fsync included. Every transaction that began is told once.
	WriteLockHeld(d time.Duration)
	// WriteCommit is how long a write transaction's commit took, a part of
	// its hold: its pages written to the WAL and the fsync. It tells a long
	// hold that waited for the disk from one that did much work.
	WriteCommit(d time.Duration)
	// SignupBatch is the number of signups that shared one commit.
	SignupBatch(n int)
	// Signup is one signup's outcome: accepted, duplicate, replay, cap,
	// network_limit, invalid, conflict, not_found or error.
	Signup(outcome string)
	// Invitation is an invitation issued, redeemed or revoked.
	Invitation(event string)
	// RedemptionFailed is a refused redemption: invalid, not_found,
	// conflict, rate_limited or error (the store error's code).
	RedemptionFailed(reason string)
	// Sweep is one retention sweep and the entries it erased.
	Sweep(erased int)
}

// nopObserver observes nothing.
type nopObserver struct{}

func (nopObserver) WriteLockWait(time.Duration) {}
func (nopObserver) WriteLockHeld(time.Duration) {}
func (nopObserver) WriteCommit(time.Duration)   {}
func (nopObserver) SignupBatch(int)             {}
func (nopObserver) Signup(string)               {}
func (nopObserver) Invitation(string)           {}
func (nopObserver) RedemptionFailed(string)     {}
func (nopObserver) Sweep(int)                   {}

// observer returns o, or one that observes nothing.
func observer(o Observer) Observer {
	if o == nil {
		return nopObserver{}
	}
	return o
}

// Signup outcome names.
const (
	OutcomeAccepted     = "accepted"
	OutcomeDuplicate    = "duplicate"
	OutcomeReplay       = "replay"
	OutcomeCap          = "cap"
	OutcomeNetworkLimit = "network_limit"
	OutcomeInvalid      = "invalid"
	OutcomeConflict     = "conflict"
	OutcomeNotFound     = "not_found"
	OutcomeError        = "error"
)

// SignupOutcomes are every outcome Observer.Signup is told.
var SignupOutcomes = []string{OutcomeAccepted, OutcomeDuplicate, OutcomeReplay, OutcomeCap, OutcomeNetworkLimit,
	OutcomeInvalid, OutcomeConflict, OutcomeNotFound, OutcomeError}

// The refusals of a signup for a limit, each its own answer
// (docs/signup.md#order-of-admission). Only the first two are facts of the
// program; neither depends on the address.
var (
	// ErrQueueFull refuses a signup because every queue place is taken. No
	// place frees on the hour: only a withdrawal, a removal or a higher cap
	// frees one, so the answer names no time to try again.
	ErrQueueFull = &Error{Code: ERATELIMITED, Message: "This waitlist is full. It is not taking more signups."}
	// ErrIntakeFull refuses a signup because this UTC hour's intake
	// (hourlyCap) is used up; the next hour takes signups again.
	ErrIntakeFull = &Error{Code: ERATELIMITED, Message: "This waitlist has taken all the signups it accepts this hour. Please try again later."}
	// ErrTooManyAttempts refuses an attempt over an hourly attempt limit
	// (a network's signups, an account's or a network's redemptions).
	ErrTooManyAttempts = &Error{Code: ERATELIMITED, Message: "Too many attempts from your network this hour. Please try again later."}
)

// signupOutcome names what Signup answered.
func signupOutcome(res *SignupResult, err error) string {
	switch {
	case err == nil && res.Replay:
		return OutcomeReplay
	case err == nil && res.duplicate:
		return OutcomeDuplicate
	case err == nil:
		return OutcomeAccepted
	}
	switch ErrorCode(err) {
	case EINVALID:
		return OutcomeInvalid
	case ECONFLICT:
		return OutcomeConflict
	case ENOTFOUND:
		return OutcomeNotFound
	case ERATELIMITED:
		if errors.Is(err, ErrQueueFull) || errors.Is(err, ErrIntakeFull) {
			return OutcomeCap
		}
		return OutcomeNetworkLimit
	}
	return OutcomeError
}

// redemptionReason names a refused redemption by its error code.
func redemptionReason(err error) string {
	switch c := ErrorCode(err); c {
	case EINVALID, ENOTFOUND, ECONFLICT:
		return c
	case ERATELIMITED:
		return "rate_limited"
	}
	return OutcomeError
}

// ProgramCounts is one program's queue for metrics, by program ID: no
// name, slug or address.
type ProgramCounts struct {
	ID string
	// Occupied counts the entries that hold a queue place; QueueCap bounds it.
	Occupied, QueueCap int
	// States counts the entries by state, erased ones too (an erased
	// entry keeps its state), from the state counters
	// (store/entry_counts.go).
	States map[string]int
}

// programStatesSQL reads every program's state counters: a few rows per
// program, so a scrape costs the same at a million entries as at ten
// (docs/PERFORMANCE.md#scale); counting the entries took over 5 s there.
const programStatesSQL = `SELECT program_id, state, n FROM entry_state_counts WHERE n > 0`

// ProgramCounts returns every program's counts, retired programs included.
func (db *DB) ProgramCounts(ctx context.Context) ([]ProgramCounts, error) {
	var out []ProgramCounts
	index := map[string]int{}
	err := db.View(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, occupied, queue_cap FROM programs ORDER BY id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c ProgramCounts
			if err := rows.Scan(&c.ID, &c.Occupied, &c.QueueCap); err != nil {
				return err
			}
			c.States = map[string]int{}
			index[c.ID] = len(out)
			out = append(out, c)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		states, err := tx.QueryContext(ctx, programStatesSQL)
		if err != nil {
			return err
		}
		defer states.Close()
		for states.Next() {
			var p, st string
			var n int
			if err := states.Scan(&p, &st, &n); err != nil {
				return err
			}
			if i, ok := index[p]; ok {
				out[i].States[st] = n
			}
		}
		return states.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("program counts: %w", err)
	}
	return out, nil
}

// ObserveInvalidSignup counts a signup refused as invalid before it
// reached Signup: a filled honeypot, which only the form has.
func (db *DB) ObserveInvalidSignup() { db.obs.Signup(OutcomeInvalid) }
