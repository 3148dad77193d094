package store

import (
	"context"
	"errors"
	"os"
)

// rule (docs/ARCHITECTURE.md#sessions): ending a session does not depend
// on free space. On a full disk every other write fails, but a sign-out
// that could not delete its session row (or record a Clerk session as
// ended) would leave a copied cookie working. SQLite needs room in its WAL
// even to delete, so admit keeps a small file of zeros next to the
// database, the reserve, and frees it to let the write that ends a session
// through when the disk is full. The reserve is made again at the next
// such write once writes succeed. On PostgreSQL the server's disk is not
// admit's to manage: there is no reserve.

// reserveSize is the size of the reserve: room for the WAL frames of a
// few session deletions (one writes three or four 4 KiB pages), small
// enough not to matter on any disk admit runs on.
const reserveSize = 64 << 10

// reservePath is the reserve's file.
func (db *DB) reservePath() string { return db.Path + "-reserve" }

// keepReserve makes the reserve if it is missing and writes succeed. It is
// best effort: without room for it, the deletion goes on without one.
func (db *DB) keepReserve() {
	if db.engine == PostgreSQL || db.health.failing() {
		return
	}
	path := db.reservePath()
	if fi, err := os.Stat(path); err == nil && fi.Size() == reserveSize {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return
	}
	// Written, not only sized: a sparse file would free no blocks.
	_, err = f.Write(make([]byte, reserveSize))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err != nil || cerr != nil {
		os.Remove(path)
	}
}

// freeReserve removes the reserve and reports whether there was one.
func (db *DB) freeReserve() bool {
	if db.engine == PostgreSQL {
		return false
	}
	return os.Remove(db.reservePath()) == nil
}

// updateFreeingReserve runs the write fn with db.Update; if it failed for
// lack of space, it runs it once more after freeing the reserve, inside the
// write transaction, so that no other write of admit's takes the room.
func (db *DB) updateFreeingReserve(ctx context.Context, fn func(*Tx) error) error {
	db.keepReserve()
	err := db.Update(ctx, fn)
	if !errors.Is(err, ErrNoSpace) {
		return err
	}
	return db.Update(ctx, func(tx *Tx) error {
		db.freeReserve()
		return fn(tx)
	})
}
