package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Once-only background work — the sweeper and the retirer — runs on one
// server at a time, the holder of its lease: a row of leases naming the
// holder, the lease's epoch and when it expires. A server takes a free or
// expired lease, renews its own before it expires, and releases it when it
// stops cleanly; a server that is killed holds it only until it expires,
// and another then takes it. Every taking and renewal is one write
// transaction, serialised like every other and judged at Tx.Now, so two
// servers never both hold one lease. The rules are written out in
// docs/ARCHITECTURE.md#background-work-and-leases.

// LeaseTTL is how long a taking or a renewal holds a lease on a database
// servers share: another server takes over the work of one that was
// killed within it. The holder renews at a third of it (RunLeased).
const LeaseTTL = 30 * time.Second

// ErrLeaseLost is the error of a write that work run under a lease made
// after the lease had passed to another holding (its fence).
var ErrLeaseLost = errors.New("lease lost: another holding took over the work")

// Lease is a lease as a transaction left it.
type Lease struct {
	Name string
	// Holder is the ID of the server that holds or last held it.
	Holder string
	// Epoch counts the lease's unbroken holdings: it grows by one each time
	// the lease is taken, free or expired, and stays when it is renewed.
	Epoch int64
	// Expires is when the lease ends unless renewed.
	Expires time.Time
	// At is the instant the transaction judged the lease at (Tx.Now).
	At time.Time
}

// HeldBy reports whether holder held the lease at At.
func (l Lease) HeldBy(holder string) bool { return l.Holder == holder && l.Expires.After(l.At) }

// NewLeaseHolder returns a new random holder ID: a server makes one at
// start and takes every lease under it. It says nothing about the server
// (no address, no name), and a restarted server gets a new one.
func NewLeaseHolder() string { return rand.Text() }

// checkLeaseArgs refuses a name or holder the table would refuse, and a
// TTL shorter than the millisecond instants resolve.
func checkLeaseArgs(name, holder string, ttl time.Duration) error {
	switch {
	case len(name) < 1 || len(name) > 64:
		return Errorf(EINVALID, "A lease name is 1 to 64 bytes.")
	case len(holder) < 1 || len(holder) > 64:
		return Errorf(EINVALID, "A lease holder is 1 to 64 bytes.")
	case ttl < time.Millisecond:
		return Errorf(EINVALID, "A lease lasts at least a millisecond.")
	}
	return nil
}

// TakeLease takes or renews the named lease for holder until ttl after the
// transaction's instant, in one write transaction, and returns the lease
// as it left it: a lease that is free or expired is taken with the next
// epoch; one holder holds already is renewed in the same epoch; one
// another holder holds is left as it is (Lease.HeldBy says which). The
// transaction does not take a place of Options.WriteReserve: a holder
// renews under load as when idle.
func (db *DB) TakeLease(ctx context.Context, name, holder string, ttl time.Duration) (Lease, error) {
	if err := checkLeaseArgs(name, holder, ttl); err != nil {
		return Lease{}, err
	}
	var l Lease
	err := db.update(ctx, false, func(tx *Tx) error {
		var err error
		l, err = takeLease(ctx, tx, name, holder, ttl)
		return err
	})
	return l, err
}

// takeLease is TakeLease's transaction.
func takeLease(ctx context.Context, tx *Tx, name, holder string, ttl time.Duration) (Lease, error) {
	now := Millis(tx.Now)
	cur, found, err := readLease(ctx, tx, name)
	if err != nil {
		return Lease{}, err
	}
	expires := now + ttl.Milliseconds()
	switch {
	case !found:
		_, err = tx.ExecContext(ctx, `INSERT INTO leases (name, holder, epoch, expires_at) VALUES (?, ?, 1, ?)`,
			name, holder, expires)
		cur = Lease{Name: name, Holder: holder, Epoch: 1}
	case cur.HeldBy(holder):
		_, err = tx.ExecContext(ctx, `UPDATE leases SET expires_at = ? WHERE name = ?`, expires, name)
	case !cur.Expires.After(tx.Now):
		// rule: an expired lease is a new holding, even for the holder
		// whose renewal came late: work fenced by the old epoch has stopped.
		cur.Holder, cur.Epoch = holder, cur.Epoch+1
		_, err = tx.ExecContext(ctx, `UPDATE leases SET holder = ?, epoch = ?, expires_at = ? WHERE name = ?`,
			holder, cur.Epoch, expires, name)
	default:
		return cur, nil // another holder's, until it expires
	}
	if err != nil {
		return Lease{}, fmt.Errorf("take lease %s: %w", name, err)
	}
	cur.Expires = FromMillis(expires)
	return cur, nil
}

// readLease reads the named lease at tx.Now; found is false when it was
// never taken.
func readLease(ctx context.Context, tx *Tx, name string) (l Lease, found bool, err error) {
	var expires int64
	err = tx.QueryRowContext(ctx, `SELECT holder, epoch, expires_at FROM leases WHERE name = ?`, name).
		Scan(&l.Holder, &l.Epoch, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{Name: name, At: tx.Now}, false, nil
	}
	if err != nil {
		return Lease{}, false, fmt.Errorf("read lease %s: %w", name, err)
	}
	l.Name, l.Expires, l.At = name, FromMillis(expires), tx.Now
	return l, true, nil
}

// ReleaseLease ends l's holding at once, if it still holds the lease, so
// another server may take the lease without waiting for it to expire. The
// row stays, with its epoch: the next taking is the next epoch. Releasing
// a lease lost already changes nothing.
func (db *DB) ReleaseLease(ctx context.Context, l Lease) error {
	return db.update(ctx, false, func(tx *Tx) error {
		now := Millis(tx.Now)
		_, err := tx.ExecContext(ctx, `UPDATE leases SET expires_at = ?
			WHERE name = ? AND holder = ? AND epoch = ? AND expires_at > ?`, now, l.Name, l.Holder, l.Epoch, now)
		if err != nil {
			return fmt.Errorf("release lease %s: %w", l.Name, err)
		}
		return nil
	})
}

// EndLeases ends every lease at once. Only a server that knows no other
// can reach the database calls it: admit serve on SQLite, holding the data
// directory's lock, whose earlier holder has stopped, perhaps killed
// without releasing its leases.
func (db *DB) EndLeases(ctx context.Context) error {
	return db.update(ctx, false, func(tx *Tx) error {
		now := Millis(tx.Now)
		if _, err := tx.ExecContext(ctx, `UPDATE leases SET expires_at = ? WHERE expires_at > ?`, now, now); err != nil {
			return fmt.Errorf("end leases: %w", err)
		}
		return nil
	})
}

// leaseFence is what the context of work run under a lease carries: the
// holding it was started under, and how to end the work.
type leaseFence struct {
	name, holder string
	epoch        int64
	lost         context.CancelCauseFunc
}

type fenceKey struct{}

// withLeaseFence returns ctx carrying the fence of work run under l,
// which lost ends.
func withLeaseFence(ctx context.Context, l Lease, lost context.CancelCauseFunc) context.Context {
	return context.WithValue(ctx, fenceKey{}, &leaseFence{name: l.Name, holder: l.Holder, epoch: l.Epoch, lost: lost})
}

// checkLease is the fence of work run under a lease: in a write
// transaction of that work it returns ErrLeaseLost, and ends the work at
// once, when the lease is no longer held at tx.Now in the holding the work
// was started under, so a server that lost a lease (paused past its
// expiry, say) writes nothing more for it. Writes run without a lease
// (tests, commands) pass. It costs one primary-key read.
func checkLease(ctx context.Context, tx *Tx) error {
	f, ok := ctx.Value(fenceKey{}).(*leaseFence)
	if !ok {
		return nil
	}
	l, _, err := readLease(ctx, tx, f.name)
	if err != nil {
		return err
	}
	if l.HeldBy(f.holder) && l.Epoch == f.epoch {
		return nil
	}
	err = fmt.Errorf("lease %s epoch %d: %w", f.name, f.epoch, ErrLeaseLost)
	f.lost(err)
	return err
}
