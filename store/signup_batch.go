package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// maxSignupBatch bounds how many signups share one commit, and so how long
// one batch holds the write lock.
const maxSignupBatch = 64

// errClosed answers a signup submitted after Close.
var errClosed = errors.New("signup: the database is closed")

// errSignupFailed rolls back a batch in which one signup failed part-way.
var errSignupFailed = errors.New("signup: a statement failed part-way")

// signupBatcher is group commit for public signups. A signup costs one
// synchronous=FULL commit (a WAL append of some twenty pages and an fsync)
// plus a few dozen microseconds of SQL; with one commit per signup the
// commit dominated and concurrent signups queued behind each other's fsync
// (docs/PERFORMANCE.md#group-commit). The batcher's one goroutine takes every signup waiting
// when it is free, and those handed over while they run — at most
// maxSignupBatch — one after another in a single BEGIN IMMEDIATE
// transaction, then commits once.
//
// Each signup is admitted exactly as if it ran alone (caps, duplicates,
// request keys and the network counter see every earlier signup of the
// batch), and its answer is delivered only after the commit returned: a
// 202 is still a promise. If the commit fails, every signup of the batch
// gets the error and none is stored. The signups taken with the batch
// share its Tx.Now, read after the write lock was taken; those that join
// it late run at a later reading (joinLate). Nothing waits to fill a
// batch: a lone signup commits at once.
type signupBatcher struct {
	db *DB
	// calls is buffered, so a submitter hands over its call without
	// waiting for the loop, and the loop drains a batch without waking
	// each submitter in turn.
	calls chan *signupCall
	// slots bounds the signups handed over and not yet answered
	// (Options.SignupQueue).
	slots slots
	// mu guards stopped: after stop no call enters calls, so none is left
	// unanswered.
	mu       sync.RWMutex
	stopped  bool
	quit     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// signupCall is one submitted signup and, once done is closed, its answer.
type signupCall struct {
	ctx  context.Context
	req  SignupRequest
	res  *SignupResult
	err  error
	done chan struct{}
}

// startSignupBatcher starts a batcher's goroutine, with room for depth
// signups (0: DefaultSignupQueue); stop ends it.
func startSignupBatcher(db *DB, depth int) *signupBatcher {
	b := newSignupBatcher(db, depth)
	go b.loop()
	return b
}

// newSignupBatcher returns a batcher whose loop is not running yet.
func newSignupBatcher(db *DB, depth int) *signupBatcher {
	return &signupBatcher{db: db, calls: make(chan *signupCall, maxSignupBatch),
		slots: newSlots(depth, DefaultSignupQueue), quit: make(chan struct{}), done: make(chan struct{})}
}

// submit hands a validated signup to the batcher and waits for its answer.
// With the queue full it returns ErrBusy at once: the signup is not run,
// and its attempt is not counted.
func (b *signupBatcher) submit(ctx context.Context, req SignupRequest) (*SignupResult, error) {
	if b == nil {
		return nil, errClosed
	}
	// rule: a signup past the queue's bound is refused before any work.
	if !b.slots.take() {
		return nil, ErrBusy
	}
	defer b.slots.give()
	c := &signupCall{ctx: ctx, req: req, done: make(chan struct{})}
	b.mu.RLock()
	if b.stopped {
		b.mu.RUnlock()
		return nil, errClosed
	}
	select {
	case b.calls <- c:
	case <-ctx.Done():
		b.mu.RUnlock()
		return nil, ctx.Err()
	}
	b.mu.RUnlock()
	// A handed-over call is always answered, whatever ctx does meanwhile:
	// it may already be part of a commit.
	<-c.done
	return c.res, c.err
}

// joinLate adds to the batch the calls handed over since it was taken
// (takeWaiting) and reports whether there were any. dropped grows with it.
//
// rule (docs/signup.md#one-commit-for-many-signups): a late call may have
// arrived after tx.Now was read, even in a later hour, so when any join,
// tx.Now moves on to a fresh reading of the clock, taken after they were
// handed over: each is stamped at or after its own arrival, and counted
// in the hour it arrived in or a later one, never an earlier one.
func (b *signupBatcher) joinLate(tx *Tx, batch *[]*signupCall, dropped *[]bool) bool {
	if b.db.signupsRan != nil {
		b.db.signupsRan()
	}
	n := len(*batch)
	*batch = b.takeWaiting(*batch)
	*dropped = append(*dropped, make([]bool, len(*batch)-n)...)
	if len(*batch) == n {
		return false
	}
	if now := b.db.now().UTC(); now.After(tx.Now) {
		tx.Now = now
	}
	return true
}

// isStopped reports whether stop was called: the database is closing.
func (b *signupBatcher) isStopped() bool {
	if b == nil {
		return true
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.stopped
}

// stop refuses new signups, lets the loop answer every call already handed
// over, and waits for it to end.
func (b *signupBatcher) stop() {
	if b == nil {
		return
	}
	b.stopOnce.Do(func() {
		b.mu.Lock()
		b.stopped = true
		b.mu.Unlock()
		close(b.quit)
	})
	<-b.done
}

func (b *signupBatcher) loop() {
	defer close(b.done)
	for {
		var batch []*signupCall
		select {
		case c := <-b.calls:
			batch = append(batch, c)
		case <-b.quit:
			select {
			case c := <-b.calls: // answer what was handed over before stop
				batch = append(batch, c)
			default:
				return
			}
		}
		b.run(b.takeWaiting(batch)) // everything already waiting joins this commit
	}
}

// takeWaiting appends the calls waiting in the queue to batch, up to
// maxSignupBatch in all, without waiting for more.
func (b *signupBatcher) takeWaiting(batch []*signupCall) []*signupCall {
	for len(batch) < maxSignupBatch {
		select {
		case c := <-b.calls:
			batch = append(batch, c)
		default:
			return batch
		}
	}
	return batch
}

// run admits a batch in one transaction and answers every call. Signups
// handed over while the batch's statements run join it before the commit,
// up to maxSignupBatch: waiting for the next transaction, they would wait
// for this commit and then for one of their own. Nothing waits for them:
// the batch looks once more each time its signups have run, and commits
// when it finds none (docs/PERFORMANCE.md#late-signups-join-the-commit).
//
// The signups run without savepoints: a refusal writes nothing (see
// admitOne). A statement that fails part-way leaves a partial signup in the
// transaction, so the whole transaction is rolled back and the batch runs
// again without that signup, which is answered with its error alone. The
// failure is not expected in practice (it would take a broken invariant or
// a failing disk); a batch runs at most once per signup it holds.
func (b *signupBatcher) run(batch []*signupCall) {
	defer func() {
		for _, c := range batch {
			close(c.done)
		}
	}()
	// The statements run under a context of their own that is never
	// cancelled: a client that goes away must not interrupt the transaction
	// that holds other signups, and with no cancellation to watch the driver
	// starts no goroutine per statement. SQLite's busy_timeout bounds the
	// wait for the write lock.
	ctx := context.Background()
	dropped := make([]bool, len(batch))
	for {
		failed := -1
		err := b.db.update(ctx, false, func(tx *Tx) error {
			for i := 0; i < len(batch) || b.joinLate(tx, &batch, &dropped); i++ {
				c := batch[i]
				if dropped[i] {
					continue
				}
				if err := c.ctx.Err(); err != nil {
					c.res, c.err = nil, err // gone before its turn: nothing is written for it
					continue
				}
				res, answer, err := b.db.admitOne(ctx, tx, c.req)
				if retryable(b.db.engine, err, false) {
					// PostgreSQL ended the transaction (a deadlock, a lost
					// connection): the whole batch runs again, as any
					// write transaction does.
					return err
				}
				if err != nil {
					failed = i
					// A statement that met a full disk (a spilled page)
					// marks writes as failing as a failed commit does.
					b.db.health.noteWrite(err)
					c.res, c.err = nil, noSpace(fmt.Errorf("signup: %w", err))
					return errSignupFailed
				}
				c.res, c.err = res, answer
			}
			return nil
		})
		if err == nil {
			b.db.obs.SignupBatch(len(batch))
		}
		if failed >= 0 && errors.Is(err, errSignupFailed) {
			dropped[failed] = true // answered with its own error; the rest run again
			continue
		}
		if err != nil {
			// Nothing of the batch was stored: no call may report success,
			// nor a refusal whose counted attempt was lost.
			for i, c := range batch {
				if !dropped[i] {
					c.res, c.err = nil, fmt.Errorf("signup: %w", err)
				}
			}
		}
		return
	}
}
