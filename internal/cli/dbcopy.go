package cli

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"admit/internal/config"
	"admit/internal/datalock"
	"admit/internal/serverkeys"
	"admit/store"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// dbCmd is `admit db copy --to postgres://…`.
func dbCmd(ctx context.Context, args []string, env config.Environment, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "copy" {
		return usagef("db: want copy --to postgres://…")
	}
	fs := flag.NewFlagSet("db copy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	to := fs.String("to", "", "the PostgreSQL database to copy into: an empty one")
	if err := fs.Parse(args[1:]); err != nil {
		return usagef("db copy: %w", err)
	}
	if fs.NArg() > 0 {
		return usagef("db copy: unexpected argument %q", fs.Arg(0))
	}
	if u, err := url.Parse(*to); *to == "" || err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return usagef("db copy: --to must be a postgres:// or postgresql:// URL (the value is not shown: it may hold a password)")
	}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	return copyToPostgres(ctx, cfg, *to, stdout)
}

// copyToPostgres copies the stopped SQLite installation of cfg's data
// directory into the empty PostgreSQL database at target, all in one
// transaction that commits only once every table's row count and content
// digest match on both sides (docs/DEPLOY.md#moving-from-sqlite-to-postgresql).
// It prints table names and counts only, never a row's contents.
func copyToPostgres(ctx context.Context, cfg *config.Config, target string, stdout io.Writer) (err error) {
	path := cfg.DBPath()
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("db copy: no SQLite database to copy at %s (ADMIT_DATA=%s): %w", path, cfg.DataDir, err)
	}
	// rule: the source is a stopped installation: nothing writes while it
	// is copied (docs/DEPLOY.md, "One server per data directory").
	lock, err := datalock.Take(cfg.DataDir, "db copy")
	if busy := new(datalock.BusyError); errors.As(err, &busy) {
		return fmt.Errorf("db copy: %w: stop that server first; db copy moves a stopped installation", err)
	} else if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, lock.Release()) }()

	schema, err := store.ReadSchema(ctx, path)
	if err != nil {
		return fmt.Errorf("db copy: read %s: %w", path, err)
	}
	if len(schema.Unknown) > 0 || len(schema.Pending) > 0 {
		return fmt.Errorf("db copy: %s is at schema version %d and this admit's is %d: "+
			"copy with the admit that last served it, or run admit migrate with this one first", path, schema.Version(), store.KnownVersion())
	}
	src, err := sql.Open("sqlite", "file:"+path+"?"+url.Values{"mode": {"ro"}}.Encode())
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := sql.Open("pgx", target)
	if err != nil {
		return fmt.Errorf("db copy: %s: %w", config.RedactDatabaseURL(target), err)
	}
	defer dst.Close()

	tables, err := sqliteTables(ctx, src)
	if err != nil {
		return fmt.Errorf("db copy: read the source's tables: %w", err)
	}
	if err := checkTargetEmpty(ctx, dst, tables); err != nil {
		return fmt.Errorf("db copy: refused: %s %w", config.RedactDatabaseURL(target), err)
	}
	keys, err := stoppedSource(ctx, cfg)
	if err != nil {
		return err
	}
	// Migrate the target to this admit's schema, the source's version.
	pg, err := store.OpenPostgres(ctx, target, store.Options{BindingKey: keys.Binding, Retention: cfg.Retention})
	if err != nil {
		return fmt.Errorf("db copy: migrate the target: %w", err)
	}
	if err := pg.Close(); err != nil {
		return fmt.Errorf("db copy: migrate the target: %w", err)
	}
	if err := checkTargetEmpty(ctx, dst, tables); err != nil {
		return fmt.Errorf("db copy: refused after migrating: %s %w", config.RedactDatabaseURL(target), err)
	}
	if v, err := targetVersion(ctx, dst); err != nil {
		return fmt.Errorf("db copy: read the target's schema version: %w", err)
	} else if v != schema.Version() {
		return fmt.Errorf("db copy: the target is at schema version %d after migrating, the source at %d", v, schema.Version())
	}
	counts, err := copyTables(ctx, src, dst, tables)
	if err != nil {
		return fmt.Errorf("db copy: no row was copied (the target holds admit's tables, empty): %w", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "table\trows\tcount and digest")
	total := int64(0)
	for _, t := range tables {
		fmt.Fprintf(tw, "%s\t%d\tmatch\n", t.name, counts[t.name])
		total += counts[t.name]
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "copied %d rows in %d tables, schema version %d, to %s\n", total, len(tables), schema.Version(), config.RedactDatabaseURL(target))
	fmt.Fprintln(stdout, "serve it with ADMIT_DATABASE_URL set to that URL and the same server keys (this ADMIT_DATA's secrets file or ADMIT_SECRET_*)")
	return nil
}

// stoppedSource reads the server keys of the stopped installation db copy
// holds the data directory's lock of, and ends every lease its database
// holds, opened as it is (no migration).
//
// rule: a lease the source holds is a stopped server's, as this command
// holds the lock: it ends before the copy, so the first server on
// PostgreSQL takes each at once (docs/ARCHITECTURE.md#background-work-and-leases).
func stoppedSource(ctx context.Context, cfg *config.Config) (serverkeys.Keys, error) {
	keys, err := serverkeys.Load(cfg.Secrets, cfg.DataDir)
	if err != nil {
		return serverkeys.Keys{}, err
	}
	db, err := store.Open(ctx, cfg.DBPath(), store.Options{BindingKey: keys.Binding, NoMigrate: true})
	if err != nil {
		return serverkeys.Keys{}, fmt.Errorf("db copy: open the source to end its leases: %w", err)
	}
	if err := errors.Join(db.EndLeases(ctx), db.Close()); err != nil {
		return serverkeys.Keys{}, fmt.Errorf("db copy: end a stopped server's leases: %w", err)
	}
	return keys, nil
}

// copyTable is one table of the source: its name, columns (in the
// source's order) and primary key, and the columns of a foreign key that
// closes a cycle (programs and notices name each other): those go in as
// NULL and are set once every table is in.
type copyTable struct {
	name     string
	columns  []string
	pk       []string
	deferred []string
}

// foreignKey is one foreign key of the source: the referencing table and
// its columns that may be NULL, and the referenced table. A key with one
// NULL column is not checked, so those columns can wait.
type foreignKey struct {
	child, parent string
	nullable      []string
}

// sqliteTables lists the source's tables, goose's and SQLite's own aside,
// parents before the tables whose foreign keys point at them. A cycle of
// foreign keys is broken at a key whose columns may be NULL.
func sqliteTables(ctx context.Context, src *sql.DB) ([]copyTable, error) {
	names, err := queryStrings(ctx, src, `SELECT name FROM sqlite_schema WHERE type = 'table'
		AND name NOT LIKE 'sqlite_%' AND name <> 'goose_db_version' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	tables := map[string]*copyTable{}
	var keys []*foreignKey
	for _, n := range names {
		t, notNull, err := sqliteColumns(ctx, src, n)
		if err != nil {
			return nil, err
		}
		tables[n] = t
		fks, err := sqliteForeignKeys(ctx, src, n, notNull)
		if err != nil {
			return nil, err
		}
		keys = append(keys, fks...)
	}
	return copyOrder(names, tables, keys)
}

// sqliteColumns reads table n's columns, in the source's order, its
// primary key and which columns are NOT NULL.
func sqliteColumns(ctx context.Context, src *sql.DB, n string) (*copyTable, map[string]bool, error) {
	t := &copyTable{name: n}
	notNull := map[string]bool{}
	rows, err := src.QueryContext(ctx, `SELECT name, "notnull", pk FROM pragma_table_info(?) ORDER BY cid`, n)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	pks := map[int]string{}
	for rows.Next() {
		var col string
		var nn bool
		var pk int
		if err := rows.Scan(&col, &nn, &pk); err != nil {
			return nil, nil, err
		}
		t.columns, notNull[col] = append(t.columns, col), nn
		if pk > 0 {
			pks[pk] = col
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	for i := 1; i <= len(pks); i++ {
		t.pk = append(t.pk, pks[i])
	}
	return t, notNull, nil
}

// sqliteForeignKeys reads table n's foreign keys, with the columns of each
// that may be NULL.
func sqliteForeignKeys(ctx context.Context, src *sql.DB, n string, notNull map[string]bool) ([]*foreignKey, error) {
	rows, err := src.QueryContext(ctx, `SELECT id, "table", "from" FROM pragma_foreign_key_list(?) ORDER BY id, seq`, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []*foreignKey
	byID := map[int]*foreignKey{}
	for rows.Next() {
		var id int
		var parent, from string
		if err := rows.Scan(&id, &parent, &from); err != nil {
			return nil, err
		}
		fk := byID[id]
		if fk == nil {
			fk = &foreignKey{child: n, parent: parent}
			byID[id] = fk
			keys = append(keys, fk)
		}
		if !notNull[from] {
			fk.nullable = append(fk.nullable, from)
		}
	}
	return keys, rows.Err()
}

// copyOrder puts the tables in foreign-key order, parents first, breaking
// a cycle at a key whose columns may be NULL.
func copyOrder(names []string, tables map[string]*copyTable, keys []*foreignKey) ([]copyTable, error) {
	deferred := map[*foreignKey]bool{}
	for range len(keys) + 1 {
		order, cycle := foreignKeyOrder(names, keys, deferred)
		if cycle == nil {
			var out []copyTable
			for _, n := range order {
				t := tables[n]
				for _, fk := range keys {
					if deferred[fk] && fk.child == n {
						t.deferred = append(t.deferred, fk.nullable...)
					}
				}
				if len(t.deferred) > 0 && len(t.pk) == 0 {
					return nil, fmt.Errorf("table %s closes a cycle of foreign keys and has no primary key", n)
				}
				out = append(out, *t)
			}
			return out, nil
		}
		broken := false
		for _, fk := range cycle {
			if len(fk.nullable) > 0 {
				deferred[fk], broken = true, true
				break
			}
		}
		if !broken {
			return nil, fmt.Errorf("foreign keys form a cycle through %s that no NULL column breaks", cycle[0].child)
		}
	}
	return nil, fmt.Errorf("foreign keys form cycles that cannot be broken")
}

// foreignKeyOrder orders names so that each table follows the tables its
// keys (but the deferred ones) reference, or returns the keys of a cycle.
func foreignKeyOrder(names []string, keys []*foreignKey, deferred map[*foreignKey]bool) (order []string, cycle []*foreignKey) {
	state := map[string]int{} // 1 visiting, 2 done
	var path []*foreignKey    // the keys followed to the table being visited
	var visit func(n string) bool
	visit = func(n string) bool {
		if state[n] == 2 {
			return true
		}
		state[n] = 1
		for _, fk := range keys {
			if fk.child != n || fk.parent == n || deferred[fk] || !slices.Contains(names, fk.parent) {
				continue
			}
			if state[fk.parent] == 1 {
				// The cycle: from where it entered fk.parent to fk.
				i := len(path)
				for i > 0 && path[i-1].child != fk.parent {
					i--
				}
				if i > 0 {
					i--
				}
				cycle = append(slices.Clone(path[i:]), fk)
				return false
			}
			path = append(path, fk)
			if !visit(fk.parent) {
				return false
			}
			path = path[:len(path)-1]
		}
		state[n] = 2
		order = append(order, n)
		return true
	}
	for _, n := range names {
		if !visit(n) {
			return nil, cycle
		}
	}
	return order, nil
}

// queryStrings runs a query of one text column and returns its values.
func queryStrings(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// checkTargetEmpty refuses a target whose schema holds anything but
// admit's tables (and goose's), whose other schemas hold any table, or
// with any of admit's tables holding a row: a copy goes into an empty
// database only, never over data.
func checkTargetEmpty(ctx context.Context, dst *sql.DB, tables []copyTable) error {
	present, err := queryStrings(ctx, dst, `SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = current_schema() ORDER BY table_name`)
	if err != nil {
		return fmt.Errorf("cannot be read: %w", err)
	}
	elsewhere, err := queryStrings(ctx, dst, `SELECT (table_schema || '.' || table_name)::text FROM information_schema.tables
		WHERE table_schema <> current_schema() AND table_schema NOT IN ('pg_catalog', 'information_schema')
			AND table_schema NOT LIKE 'pg\_%' ORDER BY 1`)
	if err != nil {
		return fmt.Errorf("cannot be read: %w", err)
	}
	if len(elsewhere) > 0 {
		return fmt.Errorf("is not empty: another schema holds tables (%s); copy into a new, empty database", strings.Join(elsewhere, ", "))
	}
	admitTables := map[string]bool{"goose_db_version": true}
	for _, t := range tables {
		admitTables[t.name] = true
	}
	var foreign, filled []string
	for _, n := range present {
		if !admitTables[n] {
			foreign = append(foreign, n)
			continue
		}
		if n == "goose_db_version" {
			continue
		}
		var any bool
		if err := dst.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+quoteIdent(n)+`)`).Scan(&any); err != nil {
			return fmt.Errorf("cannot be read: %w", err)
		}
		if any {
			filled = append(filled, n)
		}
	}
	switch {
	case len(foreign) > 0:
		return fmt.Errorf("is not empty: its schema holds tables that are not admit's (%s); copy into a new, empty database", strings.Join(foreign, ", "))
	case len(filled) > 0:
		return fmt.Errorf("already holds admit data (rows in %s); copy into a new, empty database", strings.Join(filled, ", "))
	}
	return nil
}

// targetVersion is the target's goose schema version.
func targetVersion(ctx context.Context, dst *sql.DB) (int64, error) {
	var v sql.NullInt64
	err := dst.QueryRowContext(ctx, `SELECT max(version_id) FROM goose_db_version WHERE is_applied`).Scan(&v)
	return v.Int64, err
}

// copyTables copies every table from src into dst in one transaction, in
// foreign-key order, with the target's own triggers off while its rows go
// in (they would count again what the copied rows already count), resets
// the target's sequences past the copied keys, then commits only if each
// table's row count and content digest match; it returns the counts.
func copyTables(ctx context.Context, src, dst *sql.DB, tables []copyTable) (map[string]int64, error) {
	stx, err := src.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer stx.Rollback()
	dtx, err := dst.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer dtx.Rollback()
	for _, t := range tables {
		if err := checkTargetColumns(ctx, dtx, t); err != nil {
			return nil, err
		}
	}
	for _, t := range tables {
		if _, err := dtx.ExecContext(ctx, `ALTER TABLE `+quoteIdent(t.name)+` DISABLE TRIGGER USER`); err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
		if err := copyRows(ctx, stx, dtx, t); err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
		if _, err := dtx.ExecContext(ctx, `ALTER TABLE `+quoteIdent(t.name)+` ENABLE TRIGGER USER`); err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
	}
	for _, t := range tables {
		if err := setDeferred(ctx, stx, dtx, t); err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
	}
	if err := resetSequences(ctx, dtx); err != nil {
		return nil, err
	}
	counts := map[string]int64{}
	for _, t := range tables {
		want, err := tableDigest(ctx, stx, t)
		if err != nil {
			return nil, fmt.Errorf("%s: digest the source: %w", t.name, err)
		}
		got, err := tableDigest(ctx, dtx, t)
		if err != nil {
			return nil, fmt.Errorf("%s: digest the target: %w", t.name, err)
		}
		if got.rows != want.rows {
			return nil, fmt.Errorf("%s: %d rows in the source, %d in the target", t.name, want.rows, got.rows)
		}
		if got.sum != want.sum {
			return nil, fmt.Errorf("%s: the contents differ between the source and the target (%d rows each; content digests differ)", t.name, want.rows)
		}
		counts[t.name] = want.rows
	}
	return counts, dtx.Commit()
}

// setDeferred sets the columns of t that copyRows left NULL (t.deferred)
// to the source's values, row by row, with t's triggers off.
func setDeferred(ctx context.Context, stx, dtx *sql.Tx, t copyTable) error {
	if len(t.deferred) == 0 {
		return nil
	}
	var notNull []string
	for _, c := range t.deferred {
		notNull = append(notNull, quoteIdent(c)+" IS NOT NULL")
	}
	rows, err := stx.QueryContext(ctx, `SELECT `+quoteIdents(append(slices.Clone(t.deferred), t.pk...))+
		` FROM `+quoteIdent(t.name)+` WHERE `+strings.Join(notNull, " OR "))
	if err != nil {
		return err
	}
	defer rows.Close()
	var set, where []string
	for i, c := range t.deferred {
		set = append(set, fmt.Sprintf("%s = $%d", quoteIdent(c), i+1))
	}
	for i, c := range t.pk {
		where = append(where, fmt.Sprintf("%s = $%d", quoteIdent(c), len(t.deferred)+i+1))
	}
	update := `UPDATE ` + quoteIdent(t.name) + ` SET ` + strings.Join(set, ", ") + ` WHERE ` + strings.Join(where, " AND ")
	var args [][]any
	for rows.Next() {
		vals := make([]any, len(t.deferred)+len(t.pk))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		args = append(args, vals)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	if _, err := dtx.ExecContext(ctx, `ALTER TABLE `+quoteIdent(t.name)+` DISABLE TRIGGER USER`); err != nil {
		return err
	}
	for _, a := range args {
		if _, err := dtx.ExecContext(ctx, update, a...); err != nil {
			return err
		}
	}
	_, err = dtx.ExecContext(ctx, `ALTER TABLE `+quoteIdent(t.name)+` ENABLE TRIGGER USER`)
	return err
}

// checkTargetColumns refuses a target table whose columns are not the
// source's.
func checkTargetColumns(ctx context.Context, dtx *sql.Tx, t copyTable) error {
	cols, err := queryStrings(ctx, dtx, `SELECT column_name::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1`, t.name)
	if err != nil {
		return err
	}
	a, b := slices.Clone(cols), slices.Clone(t.columns)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		return fmt.Errorf("table %s has the columns (%s) in the target and (%s) in the source", t.name, strings.Join(a, ", "), strings.Join(b, ", "))
	}
	return nil
}

// copyBatchValues bounds the values of one INSERT (PostgreSQL takes at
// most 65535 parameters a statement).
const copyBatchValues = 30000

// copyRows copies table t's rows from stx into dtx, many rows a statement.
func copyRows(ctx context.Context, stx, dtx *sql.Tx, t copyTable) error {
	rows, err := stx.QueryContext(ctx, `SELECT `+quoteIdents(t.columns)+` FROM `+quoteIdent(t.name))
	if err != nil {
		return err
	}
	defer rows.Close()
	perBatch := max(1, copyBatchValues/len(t.columns))
	var batch []any
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		var b strings.Builder
		b.WriteString(`INSERT INTO ` + quoteIdent(t.name) + ` (` + quoteIdents(t.columns) + `) OVERRIDING SYSTEM VALUE VALUES `)
		for r := range n {
			if r > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(")
			for c := range t.columns {
				if c > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "$%d", r*len(t.columns)+c+1)
			}
			b.WriteString(")")
		}
		if _, err := dtx.ExecContext(ctx, b.String(), batch...); err != nil {
			return err
		}
		batch, n = batch[:0], 0
		return nil
	}
	for rows.Next() {
		vals := make([]any, len(t.columns))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, c := range t.columns {
			if slices.Contains(t.deferred, c) {
				vals[i] = nil // set by setDeferred once its table is in
			}
		}
		batch = append(batch, vals...)
		if n++; n == perBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return flush()
}

// resetSequences moves every sequence behind a column of the target's
// schema past the largest value the copy put in that column, so that the
// next row the database numbers does not collide with a copied one.
func resetSequences(ctx context.Context, dtx *sql.Tx) error {
	rows, err := dtx.QueryContext(ctx, `SELECT table_name::text, column_name::text,
			pg_get_serial_sequence(quote_ident(table_name), column_name)
		FROM information_schema.columns
		WHERE table_schema = current_schema()
			AND pg_get_serial_sequence(quote_ident(table_name), column_name) IS NOT NULL`)
	if err != nil {
		return fmt.Errorf("list sequences: %w", err)
	}
	type seq struct{ table, column, sequence string }
	var seqs []seq
	for rows.Next() {
		var s seq
		if err := rows.Scan(&s.table, &s.column, &s.sequence); err != nil {
			rows.Close()
			return err
		}
		seqs = append(seqs, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, s := range seqs {
		// setval(seq, max, true): the next value is max+1; an empty
		// table starts at 1 (setval(seq, 1, false)).
		q := `SELECT setval($1, coalesce((SELECT max(` + quoteIdent(s.column) + `) FROM ` + quoteIdent(s.table) + `), 1),
			(SELECT max(` + quoteIdent(s.column) + `) FROM ` + quoteIdent(s.table) + `) IS NOT NULL)`
		if _, err := dtx.ExecContext(ctx, q, s.sequence); err != nil {
			return fmt.Errorf("reset the sequence of %s.%s: %w", s.table, s.column, err)
		}
	}
	return nil
}

// quoteIdent quotes an SQL identifier; both engines read "name".
func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// quoteIdents quotes and joins a column list.
func quoteIdents(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoteIdent(n)
	}
	return strings.Join(q, ", ")
}
