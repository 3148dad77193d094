package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// When a checkpoint has copied every frame of the WAL into the database file,
// the next write restarts the WAL: it writes a new header and then frames from
// the start of the file again. The file keeps its size, so the frames past the
// new end still hold older versions of pages — erased bytes among them —
// until later writes overwrite them. SQLite ignores those stale frames (their
// salts no longer match the header), and removes them only in a TRUNCATE
// checkpoint or, with journal_size_limit, at the commit that restarted the
// WAL. While Litestream replicates, admit cannot use either (docs/erasure.md):
// TrimWAL cuts the stale tail off instead, as journal_size_limit would.

// walHeaderSize and walFrameHeaderSize are fixed by SQLite's WAL format.
const (
	walHeaderSize      = 32
	walFrameHeaderSize = 24
)

// walIndexVersion is the version SQLite writes into the WAL index header.
const walIndexVersion = 3007000

// TrimWAL truncates the WAL file after its last committed frame, removing
// frames of an earlier WAL generation that a restart left behind. It holds
// the database write lock meanwhile (a write transaction that writes
// nothing), so no commit can append frames while it reads where the WAL ends
// and cuts the file there. It returns how many bytes it removed. It refuses,
// changing nothing, when the shared-memory WAL index does not describe the WAL
// file on disk.
func (db *DB) TrimWAL(ctx context.Context) (removed int64, err error) {
	err = db.Update(ctx, func(tx *Tx) error {
		var pageSize int64
		if err := tx.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize); err != nil {
			return fmt.Errorf("page size: %w", err)
		}
		removed, err = trimWAL(db.Path+"-wal", db.Path+"-shm", pageSize)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("trim WAL: %w", err)
	}
	return removed, nil
}

// trimWAL cuts the WAL file at walPath after the last frame the WAL index in
// shmPath counts as committed, and syncs it. The caller holds the write lock.
func trimWAL(walPath, shmPath string, pageSize int64) (int64, error) {
	mxFrame, salts, err := readWALIndexHeader(shmPath)
	if err != nil {
		return 0, err
	}
	f, err := os.OpenFile(walPath, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if fi.Size() < walHeaderSize {
		return 0, nil
	}
	hdr := make([]byte, walHeaderSize)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return 0, fmt.Errorf("read WAL header: %w", err)
	}
	// The index copies the header's salts; a difference means the index
	// describes another WAL generation than the file's, and cutting by it
	// could remove committed frames.
	if !bytes.Equal(hdr[16:24], salts) {
		return 0, errors.New("the WAL index does not match the WAL file's header")
	}
	end := walHeaderSize + int64(mxFrame)*(walFrameHeaderSize+pageSize)
	if fi.Size() < end {
		return 0, fmt.Errorf("the WAL file (%d bytes) is shorter than its committed frames (%d bytes)", fi.Size(), end)
	}
	if fi.Size() == end {
		return 0, nil
	}
	if err := f.Truncate(end); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	return fi.Size() - end, nil
}

// readWALIndexHeader reads the number of committed frames and the WAL salts
// from the WAL index header at the start of the shared-memory file. SQLite
// keeps two copies of the 48-byte header, in the machine's byte order, and
// trusts them only when they agree; so does this.
func readWALIndexHeader(shmPath string) (mxFrame uint32, salts []byte, err error) {
	f, err := os.Open(shmPath)
	if err != nil {
		return 0, nil, fmt.Errorf("read WAL index: %w", err)
	}
	defer f.Close()
	b := make([]byte, 96)
	if _, err := io.ReadFull(f, b); err != nil {
		return 0, nil, fmt.Errorf("read WAL index: %w", err)
	}
	h1, h2 := b[:48], b[48:]
	switch {
	case !bytes.Equal(h1, h2):
		return 0, nil, errors.New("the WAL index header's two copies differ")
	case binary.NativeEndian.Uint32(h1[0:]) != walIndexVersion:
		return 0, nil, fmt.Errorf("unknown WAL index version %d", binary.NativeEndian.Uint32(h1[0:]))
	case h1[12] != 1:
		return 0, nil, errors.New("the WAL index is not initialised")
	}
	return binary.NativeEndian.Uint32(h1[16:]), bytes.Clone(h1[32:40]), nil
}

// FillWAL makes the WAL hold at least frames committed frames, committing
// transactions that change nothing anyone reads but write one page each (the
// database header, its user_version rewritten unchanged). Erasing through
// Litestream needs two (backup.Replicator.Erase).
func (db *DB) FillWAL(ctx context.Context, frames int) error {
	for range frames {
		if mx, _, err := readWALIndexHeader(db.Path + "-shm"); err == nil && int(mx) >= frames {
			return nil
		}
		if err := db.Update(ctx, probeWrite); err != nil {
			return fmt.Errorf("write a WAL frame: %w", err)
		}
	}
	return nil
}
