package store

// Overload. Every write waits for the database's one writer. Under more
// signups than the disk can commit, an unbounded wait would let every
// answer grow slower without limit; instead the wait is bounded and a
// write past the bound is refused at once with ErrBusy, before it does
// any work: nothing is written, and no attempt is counted against the
// network's hourly limit. Signups have their own bound (Options.
// SignupQueue); every other write (owners' actions, recipients'
// redemptions and withdrawals, the sweeper) has a reserve of its own
// (Options.WriteReserve), so a flood of signups never shuts owners out
// (docs/ARCHITECTURE.md, "Overload").

// DefaultSignupQueue is how many signups may wait for, or be in, a commit
// when Options.SignupQueue is 0. At the measured rate of about 4,000
// signups a second on two cores it bounds a signup's wait to about 60 ms
// (docs/PERFORMANCE.md#the-write-queue).
const DefaultSignupQueue = 256

// DefaultWriteReserve is how many other write transactions may wait for
// the writer when Options.WriteReserve is 0.
const DefaultWriteReserve = 64

// MaxWriteQueue bounds both options.
const MaxWriteQueue = 100000

// ErrBusy refuses a write that found its queue full. It is an
// EUNAVAILABLE error: nothing was done, and the same request may be sent
// again after a short wait.
var ErrBusy = &Error{Code: EUNAVAILABLE,
	Message: "We are receiving more requests than we can handle right now. Nothing was saved. Please try again in a moment."}

// slots is a counting bound: a write takes a slot before it waits for the
// writer and gives it back when its transaction is over.
type slots chan struct{}

func newSlots(n, def int) slots {
	if n <= 0 {
		n = def
	}
	return make(slots, min(n, MaxWriteQueue))
}

// take takes a slot at once, or reports that none is free.
func (s slots) take() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s slots) give() { <-s }

// SignupsWaiting is how many signups wait for, or are in, a commit now.
func (db *DB) SignupsWaiting() int {
	if db.signups == nil {
		return 0
	}
	return len(db.signups.slots)
}

// WritesWaiting is how many other write transactions wait for, or hold,
// the writer now.
func (db *DB) WritesWaiting() int { return len(db.wslots) }

// QueueBounds reports the bounds in force: the signups and the other
// writes that may wait for the writer.
func (db *DB) QueueBounds() (signups, reserve int) {
	if db.signups != nil {
		signups = cap(db.signups.slots)
	}
	return signups, cap(db.wslots)
}
