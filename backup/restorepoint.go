package backup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"
)

// restorePoint is a transaction the replica can restore exactly: a full
// snapshot, or the end of a file that continues a chain from one.
type restorePoint struct {
	TXID ltx.TXID
	// At is when the replica received the file ending at TXID.
	At time.Time
}

// restorePoints lists, in transaction order, every point the replica can
// restore, from one listing of each level. A file [min, max] extends any
// restorable point in [min-1, max-1] (or nothing, when min is 1): applied
// over that state it yields the state at max, which is how Litestream's
// restore plan chains files.
func restorePoints(ctx context.Context, c litestream.ReplicaClient) ([]restorePoint, error) {
	points, _, err := listReplica(ctx, c)
	return points, err
}

// Gap is the newest part of a replica that no restore reaches because
// files are missing: the replica holds files of later transactions, but
// none holds transactions From to To, so nothing after From-1 chains.
type Gap struct {
	// From and To are the first and last transaction no file holds.
	From, To ltx.TXID
	// Files names the missing level-0 files, as the replica names them
	// (ltx/0/…): Litestream writes one per transaction. A compacted file
	// covering them would do as well; none is there either.
	Files []string
	// NewestTXID is the replica's newest transaction, which it received
	// at NewestAt: the restorable points stop before the gap.
	NewestTXID ltx.TXID
	NewestAt   time.Time
}

// MissingFiles names the missing files for a message: all of them, or the
// first and the last with the count between.
func (g *Gap) MissingFiles() string {
	switch n := len(g.Files); {
	case n == 1:
		return g.Files[0]
	case n <= 3:
		return strings.Join(g.Files, ", ")
	default:
		return fmt.Sprintf("%s … %s (%d files)", g.Files[0], g.Files[n-1], n)
	}
}

// listReplica is restorePoints, and the gap that keeps the newest files
// from restoring (nil when the newest point is the newest transaction).
func listReplica(ctx context.Context, c litestream.ReplicaClient) ([]restorePoint, *Gap, error) {
	var files []*ltx.FileInfo
	for level := 0; level <= litestream.SnapshotLevel; level++ {
		itr, err := c.LTXFiles(ctx, level, 0, false)
		if err != nil {
			return nil, nil, err
		}
		for itr.Next() {
			f := *itr.Item()
			files = append(files, &f)
		}
		if err := itr.Close(); err != nil {
			return nil, nil, err
		}
	}
	slices.SortFunc(files, func(a, b *ltx.FileInfo) int { return cmp.Compare(a.MaxTXID, b.MaxTXID) })
	var points []restorePoint // ascending TXID, unique
	reachable := func(lo, hi ltx.TXID) bool {
		i, _ := slices.BinarySearchFunc(points, lo, func(p restorePoint, t ltx.TXID) int { return cmp.Compare(p.TXID, t) })
		return i < len(points) && points[i].TXID <= hi
	}
	for _, f := range files {
		if f.MaxTXID == 0 || f.MinTXID > f.MaxTXID {
			continue
		}
		// A snapshot, or a chain's first file, starts from nothing.
		ok := f.Level == litestream.SnapshotLevel || f.MinTXID == 1 || reachable(f.MinTXID-1, f.MaxTXID-1)
		if !ok {
			continue
		}
		if n := len(points); n > 0 && points[n-1].TXID == f.MaxTXID {
			if f.CreatedAt.Before(points[n-1].At) {
				points[n-1].At = f.CreatedAt
			}
			continue
		}
		points = append(points, restorePoint{TXID: f.MaxTXID, At: f.CreatedAt.UTC()})
	}
	return points, tailGap(files, points), nil
}

// maxGapFiles bounds how many missing files a Gap lists.
const maxGapFiles = 1000

// tailGap finds the transactions missing after the newest restorable point
// when later files exist. files are sorted by MaxTXID.
func tailGap(files []*ltx.FileInfo, points []restorePoint) *Gap {
	var restorable ltx.TXID
	if len(points) > 0 {
		restorable = points[len(points)-1].TXID
	}
	var newest *ltx.FileInfo
	next := ltx.TXID(0) // the lowest first transaction of a later file
	for _, f := range files {
		if f.MaxTXID <= restorable || f.MinTXID == 0 || f.MinTXID > f.MaxTXID {
			continue
		}
		if newest == nil || f.MaxTXID > newest.MaxTXID || (f.MaxTXID == newest.MaxTXID && f.CreatedAt.Before(newest.CreatedAt)) {
			newest = f
		}
		if next == 0 || f.MinTXID < next {
			next = f.MinTXID
		}
	}
	if newest == nil || next <= restorable+1 {
		return nil
	}
	g := &Gap{From: restorable + 1, To: next - 1, NewestTXID: newest.MaxTXID, NewestAt: newest.CreatedAt.UTC()}
	for t := g.From; t <= g.To && len(g.Files) < maxGapFiles; t++ {
		g.Files = append(g.Files, "ltx/0/"+ltx.FormatFilename(t, t))
	}
	if g.To-g.From+1 > maxGapFiles {
		g.Files[len(g.Files)-1] = "ltx/0/" + ltx.FormatFilename(g.To, g.To)
	}
	return g
}

// restorer restores one replica's points next to out, keeping the result at
// out only when it passes its check.
type restorer struct {
	client litestream.ReplicaClient
	out    string
	// tries counts restores, for naming their files.
	tries int
}

// damageError is a restored state that is not intact: it failed
// integrity_check or a replica file could not be decoded.
type damageError struct {
	reason string
	// undecodable says a replica file could not be decoded, as opposed
	// to a restored state that failed integrity_check.
	undecodable bool
}

func (e *damageError) Error() string { return e.reason }

// try restores point p to a file of its own and checks it. It returns the
// file, or a *damageError when the state is not intact (the file is then
// removed), or another error when the restore itself failed.
func (rs *restorer) try(ctx context.Context, p restorePoint) (string, error) {
	rs.tries++
	path := fmt.Sprintf("%s.try%d", rs.out, rs.tries)
	if err := mustNotExist(path); err != nil {
		return "", err
	}
	if err := restoreTo(ctx, rs.client, p.TXID, path); err != nil {
		removeDB(path)
		if errors.Is(err, ltx.ErrChecksumMismatch) || errors.Is(err, ltx.ErrInvalidFile) {
			return "", &damageError{fmt.Sprintf("transaction %s does not decode: %v", p.TXID, err), true}
		}
		return "", fmt.Errorf("transaction %s: %w", p.TXID, err)
	}
	if err := IntegrityCheck(ctx, path); err != nil {
		removeDB(path)
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &damageError{fmt.Sprintf("transaction %s fails its check: %v", p.TXID, trimPath(err, path)), false}
	}
	return path, nil
}

// keep moves a checked restore, with the WAL and shm files its check
// left, to out.
func (rs *restorer) keep(path string, p restorePoint) (*RestoreResult, error) {
	for _, suffix := range []string{"-wal", "-shm", ""} {
		err := os.Rename(path+suffix, rs.out+suffix)
		if err != nil && (suffix == "" || !errors.Is(err, os.ErrNotExist)) {
			removeDB(path)
			return nil, fmt.Errorf("move the restored database into place: %w", err)
		}
	}
	return &RestoreResult{Path: rs.out, TXID: p.TXID, At: p.At}, nil
}

// exact restores p or fails.
func (rs *restorer) exact(ctx context.Context, p restorePoint) (*RestoreResult, error) {
	path, err := rs.try(ctx, p)
	var damage *damageError
	if errors.As(err, &damage) && damage.undecodable {
		return nil, fmt.Errorf("a replica file of the restore does not decode, so nothing was restored: %w", err)
	}
	if errors.As(err, &damage) {
		return nil, fmt.Errorf("the restored database failed its check and was removed: %w", err)
	}
	if err != nil {
		return nil, err
	}
	return rs.keep(path, p)
}

// newestGood restores the newest point of points (ascending) that passes
// its check. Damage persists from a bad file until a later full snapshot,
// so after a damaged newest point it steps back 1, 2, 4, … points until one
// passes, then bisects between it and the oldest damaged point tried: the
// result is the newest intact point before the newest damaged stretch.
func (rs *restorer) newestGood(ctx context.Context, points []restorePoint) (*RestoreResult, error) {
	newest := points[len(points)-1]
	path, err := rs.try(ctx, newest)
	var damage *damageError
	if !errors.As(err, &damage) {
		if err != nil {
			return nil, err
		}
		return rs.keep(path, newest)
	}
	reason := damage.reason
	bad, good, goodPath := len(points)-1, -1, ""
	for step := 1; good < 0; step *= 2 {
		i := max(bad-step, 0)
		if i == bad {
			return nil, fmt.Errorf("no restore point passes its check (%d tried, the newest: %s)", rs.tries, reason)
		}
		path, err := rs.try(ctx, points[i])
		if err != nil && !errors.As(err, &damage) {
			return nil, err
		}
		if err == nil {
			good, goodPath = i, path
		} else {
			bad = i
		}
	}
	for bad-good > 1 {
		mid := good + (bad-good)/2
		path, err := rs.try(ctx, points[mid])
		if err != nil && !errors.As(err, &damage) {
			removeDB(goodPath)
			return nil, err
		}
		if err == nil {
			removeDB(goodPath)
			good, goodPath = mid, path
		} else {
			bad = mid
		}
	}
	res, err := rs.keep(goodPath, points[good])
	if err != nil {
		return nil, err
	}
	res.Skipped = &SkippedState{Transactions: uint64(newest.TXID - points[good].TXID), NewestTXID: newest.TXID,
		NewestAt: newest.At, Reason: reason}
	return res, nil
}

// trimPath drops a temporary file's name from an error message.
func trimPath(err error, path string) string {
	msg := err.Error()
	for _, prefix := range []string{"integrity_check " + path + ": ", "open " + path + ": "} {
		if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
			return msg[len(prefix):]
		}
	}
	return msg
}
