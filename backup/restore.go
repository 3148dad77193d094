package backup

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"
	_ "modernc.org/sqlite" // the driver Litestream itself uses
)

// RestoreOptions say where to restore and to which moment. At most one of
// Timestamp and TXID is set; with neither, Restore picks the newest state
// that passes PRAGMA integrity_check.
type RestoreOptions struct {
	// Output is the file to create; it must not exist.
	Output string
	// Timestamp restores the database as it was at that instant.
	Timestamp time.Time
	// TXID restores the database as of that transaction, as Litestream
	// numbers them (its -txid).
	TXID ltx.TXID
	// NoFallback restores the newest state or fails: without it, a newest
	// state that fails its check is skipped for the newest one that passes.
	NoFallback bool
}

// RestoreResult describes a finished restore.
type RestoreResult struct {
	// Path is the restored database.
	Path string
	// Replica is where it came from, without credentials.
	Replica string
	// Tables are the restored database's row counts.
	Tables TableCounts
	// TXID is the restored transaction and At when the replica received it.
	TXID ltx.TXID
	At   time.Time
	// Skipped is the newer state that was left out because it failed its
	// check; nil when the newest state was restored.
	Skipped *SkippedState
	// Gap is the replica's newer transactions that no restore reaches
	// because files are missing; nil when none are. It is reported for
	// restores of the newest state and of a time after the gap began.
	Gap *Gap
}

// SkippedState is newer state a restore left out, and why.
type SkippedState struct {
	// Transactions is how many transactions after the restored one were
	// left out, up to NewestTXID, which the replica received at NewestAt.
	Transactions uint64
	NewestTXID   ltx.TXID
	NewestAt     time.Time
	// Reason is why the newest state was refused: SQLite's integrity_check
	// findings or the replica file's decoding error.
	Reason string
}

// Restore writes the database at dbPath, as its replica holds it, to
// opt.Output. It refuses to overwrite an existing file and runs PRAGMA
// integrity_check on every state it restores. A requested point that fails
// the check is an error and leaves no file. Without a requested point it
// restores the newest state that passes, searching back from the newest
// (README, Backups), and reports what it skipped.
func Restore(ctx context.Context, cfg *Config, dbPath string, opt RestoreOptions) (*RestoreResult, error) {
	if opt.Output == "" {
		return nil, errors.New("restore: an output path is required")
	}
	if opt.TXID != 0 && !opt.Timestamp.IsZero() {
		return nil, errors.New("restore: give a timestamp or a transaction, not both")
	}
	rc, err := cfg.ReplicaFor(dbPath)
	if err != nil {
		return nil, err
	}
	if rc == nil {
		if !cfg.Exists {
			return nil, fmt.Errorf("restore: %s does not exist, so no replica is configured", cfg.File)
		}
		return nil, fmt.Errorf("restore: %s names no replica for %s", cfg.File, dbPath)
	}
	out, err := filepath.Abs(opt.Output)
	if err != nil {
		return nil, err
	}
	if err := mustNotExist(out); err != nil {
		return nil, err
	}
	r := litestream.NewReplica(nil)
	if r.Client, err = newClient(rc, r, cfg.Credentials); err != nil {
		return nil, err
	}
	if err := initClient(ctx, rc, r.Client); err != nil {
		return nil, err
	}
	rs := &restorer{client: r.Client, out: out}
	points, gap, err := listReplica(ctx, r.Client)
	if err != nil {
		return nil, fmt.Errorf("restore: list %s: %w", rc, err)
	}
	if len(points) == 0 && gap != nil {
		return nil, fmt.Errorf("restore: %s holds no restorable backup: %s is missing (transactions %s to %s), "+
			"so its files up to transaction %s chain to nothing", rc, gap.MissingFiles(), gap.From, gap.To, gap.NewestTXID)
	}
	if len(points) == 0 {
		return nil, fmt.Errorf("restore: %s holds no backup", rc)
	}

	var res *RestoreResult
	switch {
	case opt.TXID != 0:
		i, ok := slices.BinarySearchFunc(points, opt.TXID, func(p restorePoint, t ltx.TXID) int { return cmp.Compare(p.TXID, t) })
		if !ok {
			return nil, fmt.Errorf("restore: %s cannot restore transaction %s: its restore points run from %s to %s",
				rc, opt.TXID, points[0].TXID, points[len(points)-1].TXID)
		}
		res, err = rs.exact(ctx, points[i])
	case !opt.Timestamp.IsZero():
		i := sort.Search(len(points), func(i int) bool { return !points[i].At.Before(opt.Timestamp) }) - 1
		if i < 0 {
			return nil, fmt.Errorf("restore: %s holds no backup from before %s", rc, opt.Timestamp.UTC().Format(time.RFC3339))
		}
		res, err = rs.exact(ctx, points[i])
	case opt.NoFallback:
		res, err = rs.exact(ctx, points[len(points)-1])
	default:
		res, err = rs.newestGood(ctx, points)
	}
	if err != nil {
		return nil, fmt.Errorf("restore from %s: %w", rc, err)
	}
	res.Replica = rc.String()
	if opt.TXID == 0 && (opt.Timestamp.IsZero() || opt.Timestamp.After(points[len(points)-1].At)) {
		res.Gap = gap
	}
	if res.Tables, err = TableRowCounts(ctx, out); err != nil {
		return nil, err
	}
	return res, nil
}

// mustNotExist refuses a restore over a database or its WAL or shm file.
func mustNotExist(out string) error {
	for _, p := range []string{out, out + "-wal", out + "-shm"} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("restore: %s already exists; restore to a new path", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// removeDB deletes a database file and its WAL and shared-memory files.
func removeDB(path string) {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		_ = os.Remove(p)
	}
}

// TableCounts maps each table of a database to its number of rows. SQLite's
// and Litestream's bookkeeping tables (sqlite_*, _litestream_*) are left out.
type TableCounts map[string]int64

// Rows is the total number of rows.
func (t TableCounts) Rows() int64 {
	var n int64
	for _, v := range t {
		n += v
	}
	return n
}

// Diff lists, in table order, every table whose count differs between t and
// other, as "name: a ≠ b" (a missing table counts as absent).
func (t TableCounts) Diff(other TableCounts) []string {
	names := slices.Sorted(maps.Keys(t))
	for n := range other {
		if _, ok := t[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var diffs []string
	for _, n := range names {
		a, aok := t[n]
		b, bok := other[n]
		switch {
		case !aok:
			diffs = append(diffs, fmt.Sprintf("%s: absent ≠ %d", n, b))
		case !bok:
			diffs = append(diffs, fmt.Sprintf("%s: %d ≠ absent", n, a))
		case a != b:
			diffs = append(diffs, fmt.Sprintf("%s: %d ≠ %d", n, a, b))
		}
	}
	return diffs
}

// openReadOnly opens a database that is never written through this handle.
func openReadOnly(path string) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "query_only(1)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// TableRowCounts counts the rows of every table of the database at path, in
// one read transaction, without writing to it.
func TableRowCounts(ctx context.Context, path string) (TableCounts, error) {
	db, err := openReadOnly(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table'
		AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name NOT LIKE '\_litestream\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tables of %s: %w", path, err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, n)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("list tables of %s: %w", path, err)
	}
	counts := TableCounts{}
	for _, n := range names {
		var c int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM "`+strings.ReplaceAll(n, `"`, `""`)+`"`).Scan(&c); err != nil {
			return nil, fmt.Errorf("count %s in %s: %w", n, path, err)
		}
		counts[n] = c
	}
	return counts, nil
}

// IntegrityCheck runs PRAGMA integrity_check on the database at path and
// returns an error carrying SQLite's findings unless it answers "ok".
func IntegrityCheck(ctx context.Context, path string) error {
	db, err := openReadOnly(path)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return fmt.Errorf("integrity_check %s: %w", path, err)
	}
	defer rows.Close()
	var findings []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		findings = append(findings, s)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("integrity_check %s: %w", path, err)
	}
	if len(findings) == 1 && findings[0] == "ok" {
		return nil
	}
	return fmt.Errorf("integrity_check %s: %s", path, strings.Join(findings, "; "))
}

// VerifyOptions tune Verify; the zero value is the default.
type VerifyOptions struct {
	// Attempts is how many restores are compared before a difference is
	// reported (default 3): a running server ships its last writes about a
	// second after they commit, so one differing count may only be in flight.
	Attempts int
	// Wait is the pause between attempts (default 2s).
	Wait time.Duration
}

// VerifyResult is the outcome of a restore drill.
type VerifyResult struct {
	// Replica is where the backup came from, without credentials.
	Replica string
	// Live and Restored are the row counts on each side.
	Live, Restored TableCounts
	// Differences lists every table whose counts differ; empty means the
	// backup matches.
	Differences []string
	// TXID is the restored transaction: the newest, unless Skipped says
	// newer ones were left out because they do not restore intact.
	TXID    ltx.TXID
	Skipped *SkippedState
	// Gap is the replica's newest transactions that no restore reaches
	// because files are missing; nil when none are.
	Gap *Gap
}

// OK reports whether the newest restore point restored intact and matches
// the live database.
func (v *VerifyResult) OK() bool { return len(v.Differences) == 0 && v.Skipped == nil && v.Gap == nil }

// Verify is the restore drill: it restores the latest backup of the database
// at dbPath into a temporary directory, checks its integrity and compares
// per-table row counts with the live database, read without writing. The
// temporary copy is always removed. When the newest state does not restore
// intact (a file that does not decode, or a failed integrity_check), it
// steps back as Restore does to the newest state that does, compares that
// one, and reports what it skipped: the backup is then not OK.
func Verify(ctx context.Context, cfg *Config, dbPath string, opt VerifyOptions) (*VerifyResult, error) {
	if opt.Attempts <= 0 {
		opt.Attempts = 3
	}
	if opt.Wait <= 0 {
		opt.Wait = 2 * time.Second
	}
	dir, err := os.MkdirTemp("", "admit-verify-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var res *VerifyResult
	for attempt := 1; ; attempt++ {
		out := filepath.Join(dir, fmt.Sprintf("restore-%d.db", attempt))
		restored, err := Restore(ctx, cfg, dbPath, RestoreOptions{Output: out})
		if err != nil {
			return nil, err
		}
		live, err := TableRowCounts(ctx, dbPath)
		if err != nil {
			return nil, fmt.Errorf("read the live database: %w", err)
		}
		res = &VerifyResult{Replica: restored.Replica, Live: live, Restored: restored.Tables, Differences: live.Diff(restored.Tables),
			TXID: restored.TXID, Skipped: restored.Skipped, Gap: restored.Gap}
		removeDB(out)
		// Damage and missing files stay until a fresh snapshot: waiting
		// does not mend them.
		if res.OK() || res.Skipped != nil || res.Gap != nil || attempt >= opt.Attempts {
			return res, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(opt.Wait):
		}
	}
}
