// Package replicatest damages a Litestream file replica on purpose, the way
// a faulty replication can: a well-formed LTX file carrying wrong pages. It
// is for tests of admit's restore checks and is used by no server code.
package replicatest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/superfly/ltx"
)

// LatestL0 returns the path of the newest level-0 LTX file under replicaDir.
func LatestL0(tb testing.TB, replicaDir string) string {
	tb.Helper()
	dir := filepath.Join(replicaDir, "ltx", "0")
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatalf("list the replica's level 0: %v", err)
	}
	var best string
	var bestTXID ltx.TXID
	for _, e := range ents {
		_, maxTXID, err := ltx.ParseFilename(e.Name())
		if err != nil {
			continue
		}
		if maxTXID > bestTXID {
			best, bestTXID = e.Name(), maxTXID
		}
	}
	if best == "" {
		tb.Fatalf("no LTX file in %s", dir)
	}
	return filepath.Join(dir, best)
}

// DamageLatest damages the replica's newest state: every LTX file, at any
// level, that ends at the newest level-0 file's transaction is rewritten as
// a valid LTX file (its checksums match) whose b-tree pages are zeroed, so
// a restore of that transaction decodes but fails PRAGMA integrity_check
// whichever of the files Litestream's restore plan picks. The files keep
// their names and modification times. It returns the level-0 file's path.
//
// localDirs are Litestream's local directories of the live database (see
// LocalDir): their copies of the same transaction are damaged too, as when
// Litestream itself wrote a bad file and shipped it. Otherwise a compaction
// running after the damage would rebuild a sound higher-level file from the
// intact local copy, and the replica would heal at a moment set by the
// compaction schedule.
func DamageLatest(tb testing.TB, replicaDir string, localDirs ...string) string {
	tb.Helper()
	path := LatestL0(tb, replicaDir)
	_, newest, err := ltx.ParseFilename(filepath.Base(path))
	if err != nil {
		tb.Fatal(err)
	}
	var paths []string
	for _, root := range append([]string{replicaDir}, localDirs...) {
		found, err := filepath.Glob(filepath.Join(root, "ltx", "*", "*.ltx"))
		if err != nil {
			tb.Fatal(err)
		}
		paths = append(paths, found...)
	}
	for _, p := range paths {
		if _, maxTXID, err := ltx.ParseFilename(filepath.Base(p)); err == nil && maxTXID == newest {
			DamageFile(tb, p)
		}
	}
	return path
}

// DamageFiles damages every LTX file of every level under replicaDir.
func DamageFiles(tb testing.TB, replicaDir string) {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(replicaDir, "ltx", "*", "*.ltx"))
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no LTX files under %s (%v)", replicaDir, err)
	}
	for _, p := range paths {
		DamageFile(tb, p)
	}
}

// DamageFile rewrites the LTX file at path as a valid LTX file (its
// checksums match) whose b-tree pages are zeroed, keeping its name and
// modification time.
func DamageFile(tb testing.TB, path string) {
	tb.Helper()
	info, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	dec := ltx.NewDecoder(bytes.NewReader(raw))
	if err := dec.DecodeHeader(); err != nil {
		tb.Fatalf("decode %s: %v", path, err)
	}
	hdr := dec.Header()
	type page struct {
		hdr  ltx.PageHeader
		data []byte
	}
	var pages []page
	for {
		var ph ltx.PageHeader
		data := make([]byte, hdr.PageSize)
		if err := dec.DecodePage(&ph, data); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			tb.Fatalf("decode %s: %v", path, err)
		}
		pages = append(pages, page{ph, data})
	}
	if err := dec.Close(); err != nil {
		tb.Fatalf("decode %s: %v", path, err)
	}
	slices.SortFunc(pages, func(a, b page) int { return int(a.hdr.Pgno) - int(b.hdr.Pgno) })

	var buf bytes.Buffer
	enc, err := ltx.NewEncoder(&buf)
	if err != nil {
		tb.Fatal(err)
	}
	if err := enc.EncodeHeader(hdr); err != nil {
		tb.Fatalf("encode header: %v", err)
	}
	chksum := ltx.ChecksumFlag
	for _, p := range pages {
		from := 0
		if p.hdr.Pgno == 1 {
			from = 100 // keep the database header, break the schema page
		}
		clear(p.data[from:])
		chksum = ltx.ChecksumFlag | (chksum ^ ltx.ChecksumPage(p.hdr.Pgno, p.data))
		if err := enc.EncodePage(ltx.PageHeader{Pgno: p.hdr.Pgno}, p.data); err != nil {
			tb.Fatalf("encode page %d: %v", p.hdr.Pgno, err)
		}
	}
	if hdr.IsSnapshot() && !hdr.NoChecksum() {
		// A snapshot's checksum covers the whole database: it must
		// match the damaged pages for the file to decode.
		enc.SetPostApplyChecksum(chksum)
	} else {
		enc.SetPostApplyChecksum(dec.Trailer().PostApplyChecksum)
	}
	if err := enc.Close(); err != nil {
		tb.Fatalf("encode %s: %v", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), info.Mode().Perm()); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chtimes(path, info.ModTime(), info.ModTime()); err != nil {
		tb.Fatal(err)
	}
}

// LocalDir is Litestream's local directory for the database at dbPath,
// where it keeps its own copies of the LTX files it ships.
func LocalDir(dbPath string) string {
	return filepath.Join(filepath.Dir(dbPath), "."+filepath.Base(dbPath)+"-litestream")
}

// L0Files returns the paths of the replica's level-0 LTX files, in
// transaction order.
func L0Files(tb testing.TB, replicaDir string) []string {
	tb.Helper()
	dir := filepath.Join(replicaDir, "ltx", "0")
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatalf("list the replica's level 0: %v", err)
	}
	var paths []string // os.ReadDir sorts by name: the names sort by transaction
	for _, e := range ents {
		if _, _, err := ltx.ParseFilename(e.Name()); err == nil {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return paths
}

// L0Chain returns the level-0 files that a restore of the replica's newest
// point must read, in transaction order: those after the newest file of any
// higher level (a snapshot or a compaction), which a restore plan would
// take instead of the level-0 files it covers.
func L0Chain(tb testing.TB, replicaDir string) []string {
	tb.Helper()
	higher, err := filepath.Glob(filepath.Join(replicaDir, "ltx", "[1-9]", "*.ltx"))
	if err != nil {
		tb.Fatal(err)
	}
	var covered ltx.TXID
	for _, p := range higher {
		if _, maxTXID, err := ltx.ParseFilename(filepath.Base(p)); err == nil && maxTXID > covered {
			covered = maxTXID
		}
	}
	var chain []string
	for _, p := range L0Files(tb, replicaDir) {
		if minTXID, _, _ := ltx.ParseFilename(filepath.Base(p)); minTXID > covered {
			chain = append(chain, p)
		}
	}
	return chain
}

// CorruptMiddle overwrites 32 bytes in the middle of the file at path, as
// bit rot or a torn copy would, keeping its size, name and modification
// time: unlike DamageFile's, the file no longer decodes (its compressed
// page data is garbage).
func CorruptMiddle(tb testing.TB, path string) {
	tb.Helper()
	info, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if len(raw) < 256 {
		tb.Fatalf("%s is only %d bytes", path, len(raw))
	}
	mid := len(raw) / 2
	for i := mid; i < mid+32; i++ {
		raw[i] ^= 0xa5
	}
	if err := os.WriteFile(path, raw, info.Mode().Perm()); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chtimes(path, info.ModTime(), info.ModTime()); err != nil {
		tb.Fatal(err)
	}
}
