package backup

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc64"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"
)

// Restoring a database from the replica's files (docs/ARCHITECTURE.md,
// "How a restore writes the database"): Litestream's own restore merges
// every file of the plan into one compressed LTX stream and decodes that
// stream into the database, each page compressed, checksummed and
// decompressed once more, in a merge that visits every input for every
// page. applyPlan writes the same database directly: the snapshot's pages
// in order through a large buffer, then each later file's pages over them,
// one file open at a time. Memory stays flat in the database's size (one
// page, the read and write buffers and one file's decoder;
// docs/PERFORMANCE.md#restore-and-verify-at-scale) and the time is one pass over the files.
//
// Every check of Litestream's path is kept: each file's own checksum, the
// transactions' continuity and, for files that carry database checksums,
// the restored pages hashing to the checksum recorded for the restored
// transaction (Litestream v0.5 writes its files without them: then
// integrity_check is what checks the pages).

// applyWriteBuffer is how much of the snapshot is written at once: whole
// pages, so each write is page-aligned.
const applyWriteBuffer = 1 << 20

// applyReadBuffer is the read buffer of one replica file.
const applyReadBuffer = 256 << 10

// applyRetries bounds how often one replica file is reopened after its
// stream broke (an object store dropping a long download).
const applyRetries = 3

// errPlanChanged says a file of the restore plan disappeared while it was
// read: the replica compacted or pruned it, and the plan must be made again.
var errPlanChanged = errors.New("a replica file disappeared during the restore")

// restoreTo writes the database as of transaction txid to path, which must
// not exist: into path+".tmp" first, synced and renamed into place, so a
// failed restore leaves nothing at path. A replica that compacts or prunes
// a file of the plan meanwhile (a running server's replica) gets a fresh
// plan, up to three times.
func restoreTo(ctx context.Context, client litestream.ReplicaClient, txid ltx.TXID, path string) error {
	if err := mustNotExist(path); err != nil {
		return err
	}
	// A temporary file left by a restore that was killed is overwritten.
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	defer f.Close()
	for attempt := 1; ; attempt++ {
		plan, err := litestream.CalcRestorePlan(ctx, client, txid, time.Time{}, slog.New(slog.DiscardHandler))
		if err != nil {
			return fmt.Errorf("plan the restore: %w", err)
		}
		err = applyPlan(ctx, client, plan, f)
		if err == nil {
			break
		}
		if !errors.Is(err, errPlanChanged) || attempt == 3 || ctx.Err() != nil {
			return err
		}
		if err := f.Truncate(0); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// dbWriter applies LTX files to a database file.
type dbWriter struct {
	f        *os.File
	pageSize int64
	lockPgno uint32
	// size is the highest page written so far.
	size uint32
	// buf holds snapshot pages not yet written, from page bufFirst on.
	buf      []byte
	bufFirst uint32
}

// applyPlan writes the files of plan, a snapshot and the files continuing
// it in transaction order, to f, and checks the result.
func applyPlan(ctx context.Context, client litestream.ReplicaClient, plan []*ltx.FileInfo, f *os.File) error {
	if len(plan) == 0 {
		return errors.New("the restore plan is empty")
	}
	w := &dbWriter{f: f}
	var prev ltx.Header
	for i, info := range plan {
		hdr, trailer, err := w.applyFile(ctx, client, info, i == 0, prev)
		if err != nil {
			return fmt.Errorf("level %d file %s: %w", info.Level, ltx.FormatFilename(info.MinTXID, info.MaxTXID), err)
		}
		prev = hdr
		if i == len(plan)-1 {
			return w.finish(ctx, hdr, trailer)
		}
	}
	return nil
}

// applyFile decodes one replica file and writes its pages: the first (a
// snapshot) in order through a large buffer, later ones at their offsets.
func (w *dbWriter) applyFile(ctx context.Context, client litestream.ReplicaClient, info *ltx.FileInfo, first bool, prev ltx.Header) (ltx.Header, ltx.Trailer, error) {
	r := &resumingReader{ctx: ctx, client: client, info: info}
	defer r.Close()
	hdr, trailer, err := w.decodeFile(ctx, r, first, prev)
	// rule: bytes that arrived but do not decode (garbage where lz4 data
	// or a page header should be) are a damaged file, as a checksum that
	// does not match is; a stream that could not be read is not.
	if err != nil && !errors.Is(err, ltx.ErrInvalidFile) && !errors.Is(err, ltx.ErrChecksumMismatch) &&
		r.failed == nil && ctx.Err() == nil {
		err = fmt.Errorf("%w: %w", ltx.ErrInvalidFile, err)
	}
	return hdr, trailer, err
}

// decodeFile is applyFile's work on the file's stream r.
func (w *dbWriter) decodeFile(ctx context.Context, r *resumingReader, first bool, prev ltx.Header) (ltx.Header, ltx.Trailer, error) {
	// The decoder reads a few bytes at a time: buffer the stream.
	src := &countingReader{r: bufio.NewReaderSize(r, applyReadBuffer)}
	dec := ltx.NewDecoder(src)
	if err := dec.DecodeHeader(); err != nil {
		return ltx.Header{}, ltx.Trailer{}, fmt.Errorf("decode header: %w", err)
	}
	hdr := dec.Header()
	sum := newFileSum(hdr)
	switch {
	case first && !hdr.IsSnapshot():
		return hdr, ltx.Trailer{}, fmt.Errorf("%w: the first file is no snapshot", ltx.ErrInvalidFile)
	case first:
		w.pageSize, w.lockPgno = int64(hdr.PageSize), hdr.LockPgno()
		w.buf = make([]byte, 0, applyWriteBuffer-applyWriteBuffer%int(hdr.PageSize))
	case hdr.PageSize != uint32(w.pageSize):
		return hdr, ltx.Trailer{}, fmt.Errorf("%w: page size %d after %d", ltx.ErrInvalidFile, hdr.PageSize, w.pageSize)
	case !ltx.IsContiguous(prev.MaxTXID, hdr.MinTXID, hdr.MaxTXID):
		return hdr, ltx.Trailer{}, fmt.Errorf("%w: transactions %s-%s do not continue %s", ltx.ErrInvalidFile, hdr.MinTXID, hdr.MaxTXID, prev.MaxTXID)
	}
	data := make([]byte, hdr.PageSize)
	var ph ltx.PageHeader
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return hdr, ltx.Trailer{}, err
			}
		}
		before := src.n
		err := dec.DecodePage(&ph, data)
		if err == io.EOF {
			break
		} else if err != nil {
			return hdr, ltx.Trailer{}, fmt.Errorf("decode page: %w", err)
		}
		sum.page(ph, src.n-before, data)
		if ph.Pgno == w.lockPgno {
			return hdr, ltx.Trailer{}, fmt.Errorf("%w: the file writes the lock page", ltx.ErrInvalidFile)
		}
		if first {
			// A snapshot holds pages 1..commit in order, but for the lock page.
			if ph.Pgno <= w.size {
				return hdr, ltx.Trailer{}, fmt.Errorf("%w: page %d out of order in the snapshot", ltx.ErrInvalidFile, ph.Pgno)
			}
			err = w.appendPage(ph.Pgno, data)
		} else {
			err = w.writePage(ph.Pgno, data)
		}
		if err != nil {
			return hdr, ltx.Trailer{}, err
		}
	}
	if err := w.flush(); err != nil {
		return hdr, ltx.Trailer{}, err
	}
	trailer, err := sum.verify(src)
	return hdr, trailer, err
}

// fileSum is an LTX file's own checksum, computed as the decoder computes
// it, over the header, each page's header, size and uncompressed data, the
// page index and the trailer's first half. The decoder's Close would also
// verify it, but first loads the file's whole page index into a map (about
// 65 bytes a page: 22 MiB for a 1.4 GB snapshot); fileSum streams it.
type fileSum struct{ h hash.Hash64 }

func newFileSum(hdr ltx.Header) *fileSum {
	s := &fileSum{h: crc64.New(crc64.MakeTable(crc64.ISO))}
	b, _ := hdr.MarshalBinary()
	s.h.Write(b)
	return s
}

// page adds a decoded page that took n bytes of the file.
func (s *fileSum) page(ph ltx.PageHeader, n int64, data []byte) {
	b, _ := ph.MarshalBinary()
	s.h.Write(b)
	if ph.Flags&ltx.PageHeaderFlagSize != 0 {
		// The block format: a 4-byte compressed size follows the header.
		var size [4]byte
		binary.BigEndian.PutUint32(size[:], uint32(n-ltx.PageHeaderSize-4))
		s.h.Write(size[:])
	}
	s.h.Write(data)
}

// verify reads the rest of the file (the page index and the trailer) and
// checks the file's checksum.
func (s *fileSum) verify(r io.Reader) (ltx.Trailer, error) {
	// The page block ends with an empty page header, which the decoder
	// has read.
	s.h.Write(make([]byte, ltx.PageHeaderSize))
	var tail [ltx.TrailerSize]byte // the last bytes read, not yet hashed
	held := 0
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		chunk := buf[:n]
		// Hash what is no longer among the last TrailerSize bytes.
		if over := held + len(chunk) - ltx.TrailerSize; over > 0 {
			fromTail := min(over, held)
			s.h.Write(tail[:fromTail])
			copy(tail[:], tail[fromTail:held])
			held -= fromTail
			s.h.Write(chunk[:over-fromTail])
			chunk = chunk[over-fromTail:]
		}
		held += copy(tail[held:], chunk)
		if err == io.EOF {
			break
		} else if err != nil {
			return ltx.Trailer{}, fmt.Errorf("read the page index: %w", err)
		}
	}
	var t ltx.Trailer
	if held < ltx.TrailerSize {
		return t, fmt.Errorf("%w: the file ends before its trailer", ltx.ErrInvalidFile)
	}
	if err := t.UnmarshalBinary(tail[:]); err != nil {
		return t, fmt.Errorf("%w: trailer: %v", ltx.ErrInvalidFile, err)
	}
	s.h.Write(tail[:ltx.TrailerChecksumOffset])
	if ltx.ChecksumFlag|ltx.Checksum(s.h.Sum64()) != t.FileChecksum {
		return t, ltx.ErrChecksumMismatch
	}
	return t, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// grow accepts the database growing to page pgno-1 before pgno is written:
// only the lock page may be missing, as it is from every LTX file.
func (w *dbWriter) grow(pgno uint32) error {
	for w.size+1 < pgno {
		if w.size+1 != w.lockPgno {
			return fmt.Errorf("%w: page %d is missing", ltx.ErrInvalidFile, w.size+1)
		}
		w.size++
	}
	return nil
}

// appendPage adds the snapshot's next page to the write buffer.
func (w *dbWriter) appendPage(pgno uint32, data []byte) error {
	if err := w.grow(pgno); err != nil {
		return err
	}
	if len(w.buf) > 0 && (w.bufFirst+uint32(len(w.buf)/len(data)) != pgno || len(w.buf)+len(data) > cap(w.buf)) {
		// The buffer is full, or the lock page was skipped (it stays a
		// hole, read as zeros): write what is buffered.
		if err := w.flush(); err != nil {
			return err
		}
	}
	if len(w.buf) == 0 {
		w.bufFirst = pgno
	}
	w.buf = append(w.buf, data...)
	w.size = pgno
	return nil
}

// flush writes the buffered snapshot pages at their place.
func (w *dbWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.f.WriteAt(w.buf, int64(w.bufFirst-1)*w.pageSize)
	w.buf = w.buf[:0]
	return err
}

// writePage writes a page of a later file over the database.
func (w *dbWriter) writePage(pgno uint32, data []byte) error {
	if pgno > w.size {
		if err := w.grow(pgno); err != nil {
			return err
		}
		w.size = pgno
	}
	_, err := w.f.WriteAt(data, int64(pgno-1)*w.pageSize)
	return err
}

// finish sizes the database as the last file says and checks that the
// pages now on disk hash to the checksum Litestream recorded for the live
// database at that transaction.
func (w *dbWriter) finish(ctx context.Context, hdr ltx.Header, trailer ltx.Trailer) error {
	if hdr.Commit > w.size {
		if err := w.grow(hdr.Commit + 1); err != nil {
			return err
		}
	}
	w.size = hdr.Commit
	if err := w.f.Truncate(int64(w.size) * w.pageSize); err != nil {
		return err
	}
	if hdr.NoChecksum() {
		return nil
	}
	sum, err := w.checksum(ctx)
	if err != nil {
		return err
	}
	if sum != trailer.PostApplyChecksum {
		return fmt.Errorf("%w: the restored pages hash to %s, the replica recorded %s for transaction %s",
			ltx.ErrChecksumMismatch, sum, trailer.PostApplyChecksum, hdr.MaxTXID)
	}
	return nil
}

// checksum reads the database back and computes its LTX checksum: the XOR
// of every page's checksum but the lock page's.
func (w *dbWriter) checksum(ctx context.Context) (ltx.Checksum, error) {
	h := ltx.NewHasher()
	buf := make([]byte, applyWriteBuffer-applyWriteBuffer%int(w.pageSize))
	var sum ltx.Checksum
	var pgnoBytes [4]byte
	for pgno := uint32(1); pgno <= w.size; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n := min(int64(len(buf)), int64(w.size-pgno+1)*w.pageSize)
		if _, err := w.f.ReadAt(buf[:n], int64(pgno-1)*w.pageSize); err != nil {
			return 0, fmt.Errorf("read the restored database back: %w", err)
		}
		for off := int64(0); off < n; off, pgno = off+w.pageSize, pgno+1 {
			if pgno == w.lockPgno {
				continue
			}
			h.Reset()
			binary.BigEndian.PutUint32(pgnoBytes[:], pgno)
			_, _ = h.Write(pgnoBytes[:])
			_, _ = h.Write(buf[off : off+w.pageSize])
			sum ^= ltx.ChecksumFlag | ltx.Checksum(h.Sum64())
		}
	}
	return ltx.ChecksumFlag | sum, nil
}

// resumingReader reads one replica file, reopening it at the offset reached
// when its stream breaks, at most applyRetries times.
type resumingReader struct {
	ctx     context.Context
	client  litestream.ReplicaClient
	info    *ltx.FileInfo
	rc      io.ReadCloser
	offset  int64
	retries int
	// failed is the error that ended reading, other than the file's end.
	failed error
}

func (r *resumingReader) Read(p []byte) (int, error) {
	n, err := r.read(p)
	if err != nil && err != io.EOF {
		r.failed = err
	}
	return n, err
}

func (r *resumingReader) read(p []byte) (int, error) {
	for {
		if r.rc == nil {
			rc, err := r.client.OpenLTXFile(r.ctx, r.info.Level, r.info.MinTXID, r.info.MaxTXID, r.offset, 0)
			if errors.Is(err, os.ErrNotExist) {
				return 0, fmt.Errorf("%w: %v", errPlanChanged, err)
			}
			if err != nil {
				return 0, err
			}
			r.rc = rc
		}
		n, err := r.rc.Read(p)
		r.offset += int64(n)
		switch {
		case err == nil, err == io.EOF && (r.info.Size == 0 || r.offset >= r.info.Size):
			return n, err
		case r.ctx.Err() != nil:
			return n, r.ctx.Err()
		case r.retries >= applyRetries:
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return n, fmt.Errorf("read at offset %d: %w", r.offset, err)
		}
		// The stream broke (or ended early): reopen it where it stopped.
		r.retries++
		_ = r.rc.Close()
		r.rc = nil
		if n > 0 {
			return n, nil
		}
		select {
		case <-r.ctx.Done():
			return 0, r.ctx.Err()
		case <-time.After(time.Duration(r.retries) * 250 * time.Millisecond):
		}
	}
}

// Close closes the current stream.
func (r *resumingReader) Close() error {
	if r.rc == nil {
		return nil
	}
	err := r.rc.Close()
	r.rc = nil
	return err
}
