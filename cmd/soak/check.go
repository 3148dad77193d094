package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benbjohnson/litestream"
	"github.com/benbjohnson/litestream/file"
	"github.com/superfly/ltx"
	_ "modernc.org/sqlite"
)

// replicaTXIDs lists the restore points of the file replica at dir: every
// transaction ID that ends an LTX file at any level, above after, in order.
func replicaTXIDs(ctx context.Context, dir string, after ltx.TXID) ([]ltx.TXID, error) {
	c := file.NewReplicaClient(dir)
	seen := map[ltx.TXID]bool{}
	for level := 0; level <= litestream.SnapshotLevel; level++ {
		itr, err := c.LTXFiles(ctx, level, 0, false)
		if err != nil {
			return nil, fmt.Errorf("list level %d of %s: %w", level, dir, err)
		}
		for itr.Next() {
			if t := itr.Item().MaxTXID; t > after {
				seen[t] = true
			}
		}
		if err := itr.Close(); err != nil {
			return nil, fmt.Errorf("list level %d of %s: %w", level, dir, err)
		}
	}
	out := make([]ltx.TXID, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	slices.Sort(out)
	return out, nil
}

// restoreTo restores the file replica at dir into out, as of txid (the
// latest state when zero), with Litestream's own restore.
func restoreTo(ctx context.Context, dir, out string, txid ltx.TXID) error {
	r := litestream.NewReplica(nil)
	c := file.NewReplicaClient(dir)
	c.Replica = r
	r.Client = c
	opt := litestream.NewRestoreOptions()
	opt.OutputPath = out
	opt.TXID = txid
	return r.Restore(ctx, opt)
}

// pointState is what one restored database holds.
type pointState struct {
	// Emails are the soak's entries (by normalized email).
	Emails map[string]bool
	// Problems lists every way the point is corrupt or inconsistent; empty
	// means it is a good restore point.
	Problems []string
}

// Corrupt reports whether the point has any problem.
func (p *pointState) Corrupt() bool { return len(p.Problems) > 0 }

// fail records one problem.
func (p *pointState) fail(format string, a ...any) {
	p.Problems = append(p.Problems, fmt.Sprintf(format, a...))
}

// checkPoint examines the restored database at path: integrity_check and
// foreign_key_check, every entry attempted by the soak and with its signup
// receipt and exactly one signup event, entry_state_counts in agreement
// with the entries, and no entry of prev (the previous restore point)
// missing.
func checkPoint(ctx context.Context, path string, prev map[string]bool, l *ledger) *pointState {
	ps := &pointState{Emails: map[string]bool{}}
	db, err := openReadOnly(path)
	if err != nil {
		ps.fail("open: %v", err)
		return ps
	}
	defer db.Close()
	if !ps.checkPragmas(ctx, db) {
		return ps
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		ps.fail("begin: %v", err)
		return ps
	}
	defer tx.Rollback()
	if !ps.checkCounts(ctx, tx) {
		return ps
	}
	if !ps.checkEvents(ctx, tx) {
		return ps
	}
	receipts, ok := ps.readReceipts(ctx, tx)
	if !ok {
		return ps
	}
	if !ps.checkEntries(ctx, tx, receipts, l) {
		return ps
	}
	gone := 0
	for _, e := range missing(prev, ps.Emails) {
		if !l.mayBeGone(e) {
			gone++
		}
	}
	if gone > 0 {
		ps.fail("%d entries of the previous restore point are gone, none of them removed", gone)
	}
	return ps
}

// checkPragmas runs integrity_check and foreign_key_check; false means
// the file is too damaged to read further.
func (p *pointState) checkPragmas(ctx context.Context, db *sql.DB) bool {
	if findings, err := pragmaList(ctx, db, `PRAGMA integrity_check`); err != nil {
		p.fail("integrity_check: %v", err)
		return false
	} else if len(findings) != 1 || findings[0] != "ok" {
		p.fail("integrity_check: %s", summarize(findings))
		return false
	}
	if findings, err := pragmaList(ctx, db, `PRAGMA foreign_key_check`); err != nil {
		p.fail("foreign_key_check: %v", err)
	} else if len(findings) > 0 {
		p.fail("foreign_key_check: %d violations", len(findings))
	}
	return true
}

// checkCounts compares the entries with entry_state_counts; false means
// they could not be counted.
func (p *pointState) checkCounts(ctx context.Context, tx *sql.Tx) bool {
	var total, counted int64
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM entries), (SELECT coalesce(sum(n), 0) FROM entry_state_counts)`).Scan(&total, &counted); err != nil {
		p.fail("count entries: %v", err)
		return false
	}
	if total != counted {
		p.fail("entries: %d rows but entry_state_counts says %d", total, counted)
	}
	return true
}

// checkEvents checks that every entry has exactly one signup event, and
// every signup event its entry: the event is written in the entry's
// transaction, at its end; false means they could not be counted.
func (p *pointState) checkEvents(ctx context.Context, tx *sql.Tx) bool {
	var without, events, entries int64
	if err := tx.QueryRowContext(ctx, `SELECT
			(SELECT count(*) FROM entries e WHERE NOT EXISTS
				(SELECT 1 FROM audit_events a WHERE a.entry_id = e.id AND a.event_type = 'signup')),
			(SELECT count(*) FROM audit_events WHERE event_type = 'signup'),
			(SELECT count(*) FROM entries)`).Scan(&without, &events, &entries); err != nil {
		p.fail("count signup events: %v", err)
		return false
	}
	if without > 0 || events != entries {
		p.fail("signup events: %d for %d entries, %d entries without one", events, entries, without)
	}
	return true
}

// readReceipts reads every signup receipt's request key; false means the
// table could not be read at all.
func (p *pointState) readReceipts(ctx context.Context, tx *sql.Tx) (map[string]bool, bool) {
	receipts := map[string]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT request_key FROM signup_receipts`)
	if err != nil {
		p.fail("read signup_receipts: %v", err)
		return nil, false
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			p.fail("read signup_receipts: %v", err)
			break
		}
		receipts[k] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		p.fail("read signup_receipts: %v", err)
	}
	return receipts, true
}

// checkEntries collects the soak's entries into p.Emails and checks that
// each was sent by the soak and has its signup receipt; false means the
// entries could not be read at all.
func (p *pointState) checkEntries(ctx context.Context, tx *sql.Tx, receipts map[string]bool, l *ledger) bool {
	rows, err := tx.QueryContext(ctx, `SELECT email_key FROM entries`)
	if err != nil {
		p.fail("read entries: %v", err)
		return false
	}
	var unknown, noReceipt int
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			p.fail("read entries: %v", err)
			break
		}
		if !strings.HasPrefix(e, "soak-") {
			continue // the demo's seed
		}
		p.Emails[e] = true
		key, ok := l.attempted(e)
		switch {
		case !ok:
			unknown++
		case !receipts[key]:
			noReceipt++
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		p.fail("read entries: %v", err)
	}
	if unknown > 0 {
		p.fail("%d entries the soak never sent", unknown)
	}
	if noReceipt > 0 {
		p.fail("%d entries without their signup receipt", noReceipt)
	}
	return true
}

// missing lists the keys of want that got lacks, sorted.
func missing(want, got map[string]bool) []string {
	var out []string
	for k := range want {
		if !got[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// summarize shortens a list of SQLite findings for one line of output.
func summarize(findings []string) string {
	const show = 3
	if len(findings) <= show {
		return strings.Join(findings, "; ")
	}
	return fmt.Sprintf("%s; … (%d findings)", strings.Join(findings[:show], "; "), len(findings))
}

// pragmaList runs a PRAGMA and returns the first column of every row.
func pragmaList(ctx context.Context, db *sql.DB, q string) ([]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprint(vals[0]))
	}
	return out, rows.Err()
}

// openReadOnly opens a restored database without writing to it.
func openReadOnly(path string) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "query_only(1)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// removeDB deletes a database file and its companions.
func removeDB(path string) {
	for _, p := range []string{path, path + "-wal", path + "-shm", path + ".tmp"} {
		_ = os.Remove(p)
	}
}

// checker walks the replica's restore points in order, remembering the
// last one it checked and what it held.
type checker struct {
	replica, scratch string
	ledger           *ledger
	last             ltx.TXID
	lastEmails       map[string]bool
	// FirstBad is the first corrupt restore point seen, zero when none.
	FirstBad ltx.TXID
}

// pointsResult counts one scan of new restore points.
type pointsResult struct {
	Points, Corrupt int
	// Details names each corrupt point and its first problem.
	Details []string
	// Latest is the newest restore point scanned.
	Latest ltx.TXID
}

// scanNew restores and checks every restore point the replica gained since
// the previous scan.
func (c *checker) scanNew(ctx context.Context) (pointsResult, error) {
	var res pointsResult
	txids, err := replicaTXIDs(ctx, c.replica, c.last)
	if err != nil {
		return res, err
	}
	for _, t := range txids {
		out := filepath.Join(c.scratch, "point.db")
		removeDB(out)
		res.Points++
		var ps *pointState
		if err := restoreTo(ctx, c.replica, out, t); err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			ps = &pointState{Problems: []string{"restore: " + err.Error()}}
		} else {
			ps = checkPoint(ctx, out, c.lastEmails, c.ledger)
		}
		removeDB(out)
		if ps.Corrupt() {
			res.Corrupt++
			res.Details = append(res.Details, fmt.Sprintf("txid %s: %s", t, ps.Problems[0]))
			if c.FirstBad == 0 {
				c.FirstBad = t
			}
		} else {
			c.lastEmails = ps.Emails
		}
		c.last, res.Latest = t, t
	}
	return res, nil
}

// latestHoldsAcked restores the replica's latest state and reports how many
// acknowledged signups it lacks (of those not removed), how many entries it
// still holds whose removal was answered 200, and its problems if it is
// corrupt.
func (c *checker) latestHoldsAcked(ctx context.Context) (lacking, unerased int, ps *pointState, err error) {
	out := filepath.Join(c.scratch, "latest.db")
	removeDB(out)
	defer removeDB(out)
	if err := restoreTo(ctx, c.replica, out, 0); err != nil {
		if ctx.Err() != nil {
			return 0, 0, nil, ctx.Err()
		}
		if errors.Is(err, litestream.ErrTxNotAvailable) || errors.Is(err, litestream.ErrNoSnapshots) {
			// Nothing replicated yet: everything acknowledged is lacking.
			return len(c.ledger.mustHold()), 0, &pointState{}, nil
		}
		return 0, 0, &pointState{Problems: []string{"restore: " + err.Error()}}, nil
	}
	ps = checkPoint(ctx, out, nil, c.ledger)
	for e := range c.ledger.removedSnapshot() {
		if ps.Emails[e] {
			unerased++
		}
	}
	return len(missing(c.ledger.mustHold(), ps.Emails)), unerased, ps, nil
}

// onDisk counts the removed addresses still found in the data files.
type onDisk struct {
	// WAL counts those in the WAL; Live those in the database file outside
	// the unallocated gap of a b-tree page (in a cell, a freeblock or a
	// page that is not a b-tree page). Either is a failed erasure.
	WAL, Live int
	// Gap counts those found only in the unallocated gap of a b-tree page
	// in the database file: old cell bytes a page rebuilt by a b-tree
	// balance keeps, which secure_delete does not zero (docs/erasure.md,
	// "What secure_delete does not reach").
	Gap int
}

// removedOnDisk searches the database file and its WAL in dataDir for the
// removed addresses, live or in an older page version. (Litestream's local
// files are compressed; the erasure tests decode them.)
func removedOnDisk(dataDir string, removed map[string]bool) (onDisk, error) {
	var d onDisk
	wal, err := readIfExists(filepath.Join(dataDir, "admit.db-wal"))
	if err != nil {
		return d, err
	}
	walHas := map[string]bool{}
	for _, a := range soakAddresses(wal) {
		if removed[a.email] {
			walHas[a.email] = true
		}
	}
	d.WAL = len(walHas)
	db, err := readIfExists(filepath.Join(dataDir, "admit.db"))
	if err != nil {
		return d, err
	}
	live, gap := map[string]bool{}, map[string]bool{}
	for _, a := range soakAddresses(db) {
		if !removed[a.email] {
			continue
		}
		if inPageGap(db, a.offset) {
			gap[a.email] = true
		} else {
			live[a.email] = true
		}
	}
	d.Live = len(live)
	for e := range gap {
		if !live[e] {
			d.Gap++
		}
	}
	return d, nil
}

// readIfExists reads the file at path; nil when it does not exist.
func readIfExists(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// inPageGap reports whether offset in the database image db falls in the
// unallocated gap of a b-tree page: after its cell pointer array and
// before its cell content area.
func inPageGap(db []byte, offset int) bool {
	if len(db) < 100 {
		return false
	}
	pageSize := int(db[16])<<8 | int(db[17])
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 {
		return false
	}
	start := offset / pageSize * pageSize
	if start+pageSize > len(db) {
		return false
	}
	page := db[start : start+pageSize]
	hdr := 0
	if start == 0 {
		hdr = 100 // page 1 begins with the database header
	}
	headerSize := 8
	switch page[hdr] {
	case 2, 5: // interior pages have a right-child pointer
		headerSize = 12
	case 10, 13:
	default:
		return false
	}
	cells := int(page[hdr+3])<<8 | int(page[hdr+4])
	content := int(page[hdr+5])<<8 | int(page[hdr+6])
	if content == 0 {
		content = 65536
	}
	gapStart := hdr + headerSize + 2*cells
	at := offset - start
	return at >= gapStart && at < content
}

// soakAddress is one soak address found in a file, with its offset.
type soakAddress struct {
	email  string
	offset int
}

// soakAddresses returns every soak address (soak-<cycle>-<n>@example.test)
// that occurs in b, with its offset.
func soakAddresses(b []byte) []soakAddress {
	const prefix, domain = "soak-", "@example.test"
	var out []soakAddress
	for off := 0; ; {
		i := bytes.Index(b[off:], []byte(prefix))
		if i < 0 {
			return out
		}
		off += i
		j := off + len(prefix)
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '-') {
			j++
		}
		if bytes.HasPrefix(b[j:], []byte(domain)) {
			out = append(out, soakAddress{string(b[off : j+len(domain)]), off})
		}
		off += len(prefix)
	}
}
