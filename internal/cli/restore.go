package cli

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"admit/backup"
	"admit/internal/config"
	"admit/internal/datalock"

	"github.com/superfly/ltx"
)

// restoreCmd is `admit restore [-timestamp T | -txid TXID] -o PATH`.
func restoreCmd(ctx context.Context, args []string, env config.Environment, stdout io.Writer) (err error) {
	opt, err := restoreOptions(args)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	if cfg.PostgreSQL() {
		return errLitestreamOnPostgres("restore")
	}
	// rule: a restore into the live database's path holds the data
	// directory's lock, so it is refused while a server runs and no server
	// starts on a half-written file (docs/DEPLOY.md, "One server per data
	// directory"). Restore itself never writes over an existing file.
	if samePath(opt.Output, cfg.DBPath()) {
		lock, lerr := datalock.Take(cfg.DataDir, "restore")
		if lerr != nil {
			if busy := new(datalock.BusyError); errors.As(lerr, &busy) {
				return fmt.Errorf("restore: -o %s is the live database, and %w: stop it first, "+
					"or restore to a new path and swap the files while admit is stopped (docs/DEPLOY.md)", opt.Output, lerr)
			}
			return lerr
		}
		defer func() { err = errors.Join(err, lock.Release()) }()
	}
	bc, err := loadBackupConfig(cfg)
	if err != nil {
		return err
	}
	res, err := backup.Restore(ctx, bc, cfg.DBPath(), opt)
	if err != nil {
		return err
	}
	if err := closeRestored(ctx, res.Path); err != nil {
		return err
	}
	reportRestore(stdout, opt, res)
	return nil
}

// restoreOptions reads restore's flags: the output path, and at most one
// of the point in time and the transaction to restore to.
func restoreOptions(args []string) (opt backup.RestoreOptions, err error) {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "", "output path (must not exist)")
	ts := fs.String("timestamp", "", "restore the database as it was at this RFC 3339 instant")
	txid := fs.String("txid", "", "restore the database as of this transaction (16 hex digits, as Litestream prints it)")
	if err := fs.Parse(args); err != nil {
		return opt, usagef("restore: %w", err)
	}
	if fs.NArg() > 0 {
		return opt, usagef("restore: unexpected argument %q", fs.Arg(0))
	}
	if *out == "" {
		return opt, errors.New("restore: -o PATH is required: admit never restores over a file")
	}
	opt.Output = *out
	if *ts != "" && *txid != "" {
		return opt, errors.New("restore: give -timestamp or -txid, not both")
	}
	if *ts != "" {
		if opt.Timestamp, err = time.Parse(time.RFC3339, *ts); err != nil {
			return opt, fmt.Errorf("restore: -timestamp %q is not an RFC 3339 time such as 2025-01-02T15:04:05Z", *ts)
		}
	}
	if *txid != "" {
		if opt.TXID, err = ltx.ParseTXID(*txid); err != nil || opt.TXID == 0 {
			return opt, fmt.Errorf("restore: -txid %q is not a transaction ID such as 00000000000004d2 (16 hex digits)", *txid)
		}
	}
	return opt, nil
}

// reportRestore says what was restored, to which point, and what of the
// replica's history it could not reach.
func reportRestore(stdout io.Writer, opt backup.RestoreOptions, res *backup.RestoreResult) {
	point := "latest"
	switch {
	case !opt.Timestamp.IsZero():
		point = "as of " + opt.Timestamp.UTC().Format(time.RFC3339)
	case opt.TXID != 0:
		point = "as requested"
	case res.Skipped != nil:
		point = "newest intact"
	case res.Gap != nil:
		point = "newest restorable, NOT the replica's newest"
	}
	fmt.Fprintf(stdout, "restored %s from %s (%s: transaction %s, replicated %s): %d tables, %d rows, integrity_check ok\n",
		res.Path, res.Replica, point, res.TXID, res.At.UTC().Format(time.RFC3339), len(res.Tables), res.Tables.Rows())
	if sk := res.Skipped; sk != nil {
		fmt.Fprintf(stdout, "skipped the newest %d transactions (up to %s, replicated %s): %s\n",
			sk.Transactions, sk.NewestTXID, sk.NewestAt.UTC().Format(time.RFC3339), sk.Reason)
	}
	if g := res.Gap; g != nil {
		fmt.Fprintln(stdout, gapReport(g, res.TXID, res.At))
	}
}

// gapReport says plainly which replica files are missing, where the
// restore stopped and how far that is behind the replica's newest state.
func gapReport(g *backup.Gap, restored ltx.TXID, at time.Time) string {
	txs := "transaction " + g.From.String()
	if g.To != g.From {
		txs = fmt.Sprintf("transactions %s to %s", g.From, g.To)
	}
	behind := fmt.Sprintf("%d transactions", uint64(g.NewestTXID-restored))
	if d := g.NewestAt.Sub(at); !at.IsZero() && !g.NewestAt.IsZero() && d > 0 {
		behind += " and " + d.Round(time.Second).String()
	}
	return fmt.Sprintf("INCOMPLETE: the replica is missing %s (%s), so the restore stopped at transaction %s; "+
		"the replica's newest transaction %s (replicated %s) is %s newer, and nothing after transaction %s is in the restored database",
		g.MissingFiles(), txs, restored, g.NewestTXID, g.NewestAt.UTC().Format(time.RFC3339), behind, restored)
}

// samePath says whether a and b name the same file: the same path once
// made absolute with the directory's symbolic links resolved, or, when
// both exist, the same inode.
func samePath(a, b string) bool {
	ia, erra := os.Stat(a)
	ib, errb := os.Stat(b)
	if erra == nil && errb == nil {
		return os.SameFile(ia, ib)
	}
	return resolvePath(a) == resolvePath(b)
}

// resolvePath makes p absolute and resolves the links in its directory.
func resolvePath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	dir := filepath.Dir(abs)
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	return filepath.Join(dir, filepath.Base(abs))
}

// closeRestored leaves the restored database as one file. The checks that
// read it open it in WAL mode read-only, which leaves an empty -wal and a
// -shm beside it that the file's next user (a server, or an operator's mv)
// does not expect; one read-write open checkpoints whatever the WAL holds
// into the file and, on close, deletes both.
func closeRestored(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return fmt.Errorf("restore: open %s: %w", path, err)
	}
	_, err = db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore: checkpoint %s: %w", path, err)
	}
	for _, side := range []string{path + "-wal", path + "-shm"} {
		if err := os.Remove(side); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("restore: %w", err)
		}
	}
	return nil
}
