// Package testutil holds the helpers that both the store's tests and the
// handlers' tests use: the test clock, the table fingerprint and a full
// disk. Only tests import it, so it never ships in the binary.
package testutil

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Querier runs a query: a *sql.Tx, a *sql.DB, or anything embedding one.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Fingerprint is a digest of every row of every table, by table name. Two
// equal fingerprints mean no row was added, removed or changed anywhere —
// a counter moving on an existing row or a state change shows, where row
// counts would not.
type Fingerprint map[string]string

// MustFingerprint fingerprints the database in one read transaction of
// view (a *store.DB's View), failing the test on error.
func MustFingerprint[T Querier](tb testing.TB, view func(context.Context, func(T) error) error) Fingerprint {
	tb.Helper()
	ctx := context.Background()
	var fp Fingerprint
	err := view(ctx, func(q T) error {
		var err error
		fp, err = Take(ctx, q)
		return err
	})
	if err != nil {
		tb.Fatalf("fingerprint: %v", err)
	}
	return fp
}

// Take fingerprints every table of the database q reads (SQLite's own
// tables left out). Rows are digested in a fixed order independent of how
// SQLite returns them, each value with its type.
func Take(ctx context.Context, q Querier) (Fingerprint, error) {
	names, err := tables(ctx, q)
	if err != nil {
		return nil, err
	}
	fp := Fingerprint{}
	for _, name := range names {
		d, err := tableDigest(ctx, q, name)
		if err != nil {
			return nil, fmt.Errorf("fingerprint %s: %w", name, err)
		}
		fp[name] = d
	}
	return fp, nil
}

func tables(ctx context.Context, q Querier) ([]string, error) {
	query := `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`
	if engineOf(q) == "postgres" {
		query = `SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema()`
	}
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("list tables: the database has none")
	}
	return names, nil
}

// engineOf is the name of q's database engine when q reports one (a
// store.Tx's Engine method, whose result is a string type), or "".
func engineOf(q Querier) string {
	m := reflect.ValueOf(q).MethodByName("Engine")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 || m.Type().Out(0).Kind() != reflect.String {
		return ""
	}
	return m.Call(nil)[0].String()
}

// tableDigest is "N rows sha256:…" over the table's rows, sorted.
func tableDigest(ctx context.Context, q Querier, name string) (string, error) {
	rows, err := q.QueryContext(ctx, `SELECT * FROM "`+strings.ReplaceAll(name, `"`, `""`)+`"`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	var lines []string
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		var b strings.Builder
		for i, v := range vals {
			// Column name, type and value: a value moving between columns
			// or changing type changes the digest too.
			fmt.Fprintf(&b, "%s=%T:%q\x1f", cols[i], v, fmt.Sprint(v))
		}
		lines = append(lines, b.String())
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return fmt.Sprintf("%d rows sha256:%s", len(lines), hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// Changed lists, sorted, the tables whose rows differ between a and b
// (including a table present in only one of them).
func Changed(a, b Fingerprint) []string {
	var out []string
	for name, d := range a {
		if b[name] != d {
			out = append(out, name)
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Describe shows the changed tables' digests before and after, for a
// failure message.
func Describe(a, b Fingerprint) string {
	var s strings.Builder
	for _, name := range Changed(a, b) {
		fmt.Fprintf(&s, "\n  %s: before %q, after %q", name, a[name], b[name])
	}
	return s.String()
}
