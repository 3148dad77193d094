package store

import (
	"bufio"
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
//
// Where the committed frames end is read from the WAL file itself, as
// SQLite's own recovery reads it: the frames whose salts match the header
// and whose running checksum holds, up to the last that ends a transaction.
// Not from the shared-memory index: opening and closing that file from Go
// would drop the POSIX locks SQLite holds on it for the whole process, and
// another process opening the database would then take itself for the first
// and reset the index under admit's connections.

// walHeaderSize and walFrameHeaderSize are fixed by SQLite's WAL format.
const (
	walHeaderSize      = 32
	walFrameHeaderSize = 24
)

// trimStep is the most TrimWAL cuts from the WAL file while it holds the
// write lock: freeing a file's blocks costs about 0.2 ms a megabyte on the
// benchmark machine's ext4, so a tail of hundreds of megabytes left by a
// large sweep is cut in steps of about 2 ms, writers taking turns between.
var trimStep int64 = 8 << 20

// TrimWAL truncates the WAL file after its last committed frame, removing
// frames of an earlier WAL generation that a restart left behind, and returns
// how many bytes it removed. It finds the end once without a lock, then, in
// steps of at most trimStep from the file's end, holds the database write
// lock (a write transaction that writes nothing) while it reads the frames
// committed since and cuts the file, so no commit can append meanwhile. It
// syncs the file after the last step, outside the lock.
//
// On PostgreSQL it does nothing: there is no WAL file of admit's.
func (db *DB) TrimWAL(ctx context.Context) (removed int64, err error) {
	if db.engine == PostgreSQL {
		return 0, nil
	}
	path := db.Path + "-wal"
	ahead, err := walCommittedEnd(path, nil)
	if err != nil {
		return 0, fmt.Errorf("trim WAL: %w", err)
	}
	for done := false; !done; {
		err = db.Update(ctx, func(tx *Tx) error {
			end, err := walCommittedEnd(path, ahead)
			if err != nil {
				return err
			}
			ahead = end
			cut, err := truncateTowards(path, end.offset, trimStep)
			removed += cut
			done = cut == 0
			return err
		})
		if err != nil {
			return removed, fmt.Errorf("trim WAL: %w", err)
		}
	}
	if removed > 0 {
		if err := syncFile(path); err != nil {
			return removed, fmt.Errorf("trim WAL: %w", err)
		}
	}
	return removed, nil
}

// WriteWALFrames commits n transactions that change nothing anyone reads
// but each write one page (the database header, its user_version rewritten
// unchanged), so the WAL holds at least n frames after the last restart:
// erasing through Litestream needs two (backup.Replicator.Erase).
func (db *DB) WriteWALFrames(ctx context.Context, n int) error {
	for range n {
		if err := db.Update(ctx, probeWrite); err != nil {
			return fmt.Errorf("write a WAL frame: %w", err)
		}
	}
	return nil
}

// walPoint is a place in a WAL file: the offset just past a frame that ends
// a transaction (or past the header), with the header it belongs to and the
// running checksum there.
type walPoint struct {
	header []byte
	offset int64
	sum    [2]uint32
}

// walCommittedEnd returns the end of the last committed frame of the WAL at
// path. from, when it is a point of the same WAL generation (the same
// header), is where the reading resumes; otherwise it starts at the header.
// An absent or headerless WAL ends at 0.
func walCommittedEnd(path string, from *walPoint) (*walPoint, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return &walPoint{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hdr := make([]byte, walHeaderSize)
	if _, err := io.ReadFull(f, hdr); errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &walPoint{}, nil
	} else if err != nil {
		return nil, err
	}
	order, ok := walByteOrder(hdr)
	if !ok {
		return nil, errors.New("the WAL header has no WAL magic number")
	}
	pageSize := int64(binary.BigEndian.Uint32(hdr[8:]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize&(pageSize-1) != 0 {
		return nil, fmt.Errorf("the WAL header gives page size %d", pageSize)
	}
	sum := walChecksum(order, hdr[:24], [2]uint32{})
	if sum != [2]uint32{binary.BigEndian.Uint32(hdr[24:]), binary.BigEndian.Uint32(hdr[28:])} {
		return nil, errors.New("the WAL header's checksum does not hold")
	}
	at := &walPoint{header: hdr, offset: walHeaderSize, sum: sum}
	if from != nil && bytes.Equal(from.header, hdr) && from.offset >= walHeaderSize {
		at = from
	}
	if _, err := f.Seek(at.offset, io.SeekStart); err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	frame := make([]byte, walFrameHeaderSize+pageSize)
	end, offset, sum := *at, at.offset, at.sum
	for {
		if _, err := io.ReadFull(r, frame); errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return &end, nil
		} else if err != nil {
			return nil, err
		}
		if !bytes.Equal(frame[8:16], hdr[16:24]) {
			return &end, nil // a frame of an earlier generation
		}
		sum = walChecksum(order, frame[:8], sum)
		sum = walChecksum(order, frame[walFrameHeaderSize:], sum)
		if sum != [2]uint32{binary.BigEndian.Uint32(frame[16:]), binary.BigEndian.Uint32(frame[20:])} {
			return &end, nil
		}
		offset += int64(len(frame))
		if binary.BigEndian.Uint32(frame[4:]) != 0 { // the frame ends a transaction
			end = walPoint{header: hdr, offset: offset, sum: sum}
		}
	}
}

// walByteOrder reads the WAL magic number: it says in which byte order the
// checksums add the file's words.
func walByteOrder(hdr []byte) (binary.ByteOrder, bool) {
	switch binary.BigEndian.Uint32(hdr) {
	case 0x377f0682:
		return binary.LittleEndian, true
	case 0x377f0683:
		return binary.BigEndian, true
	}
	return nil, false
}

// walChecksum continues SQLite's WAL checksum over b (a multiple of 8 bytes).
func walChecksum(order binary.ByteOrder, b []byte, sum [2]uint32) [2]uint32 {
	s1, s2 := sum[0], sum[1]
	for i := 0; i+8 <= len(b); i += 8 {
		s1 += order.Uint32(b[i:]) + s2
		s2 += order.Uint32(b[i+4:]) + s1
	}
	return [2]uint32{s1, s2}
}

// truncateTowards cuts the file at path towards end, by at most step bytes,
// and returns how many bytes it removed: 0 once the file ends at end.
func truncateTowards(path string, end, step int64) (int64, error) {
	if end == 0 {
		return 0, nil // no WAL, or one without a header: nothing to cut by
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	if fi.Size() <= end {
		return 0, nil
	}
	to := max(end, fi.Size()-step)
	if err := os.Truncate(path, to); err != nil {
		return 0, err
	}
	return fi.Size() - to, nil
}

// syncFile flushes the file at path to the disk.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
