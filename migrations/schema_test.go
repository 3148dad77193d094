package migrations_test

import (
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"admit/migrations"

	"github.com/pressly/goose/v3"
)

// The two engines' schemas, read from their catalogues after every
// migration and described in the same words: what the store may rely on.
// Where PostgreSQL differs on purpose, pgOnlyTriggers and pgTriggerTiming
// say so and why; every other difference fails TestSchema_BothEnginesAlike.

// pgOnlyTriggers are PostgreSQL triggers SQLite has no counterpart for.
var pgOnlyTriggers = map[string]string{
	// SQLite has no TRUNCATE, and its DELETE without WHERE fires the
	// delete triggers; PostgreSQL's TRUNCATE fires no row trigger.
	"notices_no_truncate":          "history is append-only: TRUNCATE is a delete",
	"audit_no_truncate":            "history is append-only: TRUNCATE is a delete",
	"workspace_events_no_truncate": "history is append-only: TRUNCATE is a delete",
}

// pgTriggerTiming are PostgreSQL triggers that run at another time than
// SQLite's of the same name, to the same effect.
var pgTriggerTiming = map[string]string{
	// PostgreSQL runs the after-triggers of a many-row insert once all of
	// its rows are in; before the insert, each row sees only those inserted
	// before it, as SQLite's after-trigger does (migrations/postgres/00001).
	"funnel_invited": "before",
}

type column struct {
	Name    string
	Type    string // text, integer or bytes; anything else names the engine's type
	NotNull bool
	Default string // the value, unquoted; "" for none
	AutoID  bool   // assigned by the database when not given (AUTOINCREMENT, identity)
}

type table struct {
	Columns     []column
	PrimaryKey  string   // column names, in key order
	Uniques     []string // each unique constraint's columns, in key order
	ForeignKeys []string // "cols -> table(cols) on update …, on delete …"
	Checks      []string // each CHECK constraint's columns, as a sorted set
}

type index struct {
	Table, Keys, Where string // normalised text
	Unique             bool
}

type trigger struct {
	Table, Timing, Event string // event: insert, delete, truncate, update or "update of a,b"
}

type schema struct {
	Tables   map[string]*table
	Indexes  map[string]index
	Triggers map[string]trigger
}

// diff lists every difference between the SQLite schema s and the
// PostgreSQL schema p, but those pgOnlyTriggers and pgTriggerTiming allow.
func diff(s, p *schema) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, name := range union(s.Tables, p.Tables) {
		st, pt := s.Tables[name], p.Tables[name]
		switch {
		case pt == nil:
			add("table %s: only on SQLite", name)
			continue
		case st == nil:
			add("table %s: only on PostgreSQL", name)
			continue
		}
		sc, pc := byName(st.Columns), byName(pt.Columns)
		for _, c := range union(sc, pc) {
			switch {
			case pc[c] == nil:
				add("column %s.%s: only on SQLite", name, c)
			case sc[c] == nil:
				add("column %s.%s: only on PostgreSQL", name, c)
			case *sc[c] != *pc[c]:
				add("column %s.%s: SQLite %+v, PostgreSQL %+v", name, c, *sc[c], *pc[c])
			}
		}
		if len(sc) == len(pc) && !slices.Equal(names(st.Columns), names(pt.Columns)) {
			add("table %s: column order SQLite %v, PostgreSQL %v", name, names(st.Columns), names(pt.Columns))
		}
		if st.PrimaryKey != pt.PrimaryKey {
			add("table %s: primary key SQLite (%s), PostgreSQL (%s)", name, st.PrimaryKey, pt.PrimaryKey)
		}
		for what, pair := range map[string][2][]string{
			"unique keys":  {st.Uniques, pt.Uniques},
			"foreign keys": {st.ForeignKeys, pt.ForeignKeys},
			"checks on":    {st.Checks, pt.Checks},
		} {
			if !slices.Equal(pair[0], pair[1]) {
				add("table %s: %s SQLite %q, PostgreSQL %q", name, what, pair[0], pair[1])
			}
		}
	}
	for _, name := range union(s.Indexes, p.Indexes) {
		si, sok := s.Indexes[name]
		pi, pok := p.Indexes[name]
		switch {
		case !pok:
			add("index %s: only on SQLite", name)
		case !sok:
			add("index %s: only on PostgreSQL", name)
		case si != pi:
			add("index %s: SQLite %+v, PostgreSQL %+v", name, si, pi)
		}
	}
	for _, name := range union(s.Triggers, p.Triggers) {
		st, sok := s.Triggers[name]
		pt, pok := p.Triggers[name]
		if timing, ok := pgTriggerTiming[name]; ok && sok && pok && pt.Timing == timing {
			pt.Timing = st.Timing
		}
		switch {
		case !pok:
			add("trigger %s: only on SQLite", name)
		case !sok && pgOnlyTriggers[name] == "":
			add("trigger %s: only on PostgreSQL", name)
		case sok && st != pt:
			add("trigger %s: SQLite %+v, PostgreSQL %+v", name, st, pt)
		}
	}
	return out
}

func union[V any](a, b map[string]V) []string {
	ks := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

func byName(cs []column) map[string]*column {
	m := make(map[string]*column, len(cs))
	for i := range cs {
		m[cs[i].Name] = &cs[i]
	}
	return m
}

func names(cs []column) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func TestSchema_BothEnginesAlike(t *testing.T) {
	p := describePostgres(t, newPostgres(t, 0))
	s := describeSQLite(t, newSQLite(t, 0))
	if len(s.Tables) < 20 || len(s.Indexes) < 20 || len(s.Triggers) < 15 {
		t.Fatalf("SQLite schema read as %d tables, %d indexes, %d triggers: the reader is broken", len(s.Tables), len(s.Indexes), len(s.Triggers))
	}
	for _, d := range diff(s, p) {
		t.Error(d)
	}
	// The readers see what matters: spot checks against the migrations.
	audit := s.Tables["audit_events"]
	if audit == nil || audit.Columns[0] != (column{Name: "id", Type: "integer", NotNull: true, AutoID: true}) ||
		!slices.Contains(audit.Checks, "actor_user_id") || len(audit.ForeignKeys) != 2 {
		t.Errorf("audit_events read as %+v", audit)
	}
	if ix := p.Indexes["entries_erase_idx"]; ix.Where != "erase_afterisnotnullanderased_atisnull" {
		t.Errorf("entries_erase_idx read on PostgreSQL as %+v", ix)
	}
	if tr := p.Triggers["entries_count_update"]; tr != (trigger{Table: "entries", Timing: "after", Event: "update of program_id,state"}) {
		t.Errorf("entries_count_update read on PostgreSQL as %+v", tr)
	}
}

// A column, table, check, key, index or trigger added on one engine only
// is a difference: adding each to one side of two identical schemas is
// reported by diff, for the column and the table read back from a real
// database.
func TestSchema_OneEngineOnlyIsADifference(t *testing.T) {
	base := newSQLite(t, 0)
	s := describeSQLite(t, base)
	if d := diff(s, describeSQLite(t, base)); len(d) != 0 {
		t.Fatalf("a schema differs from itself: %q", d)
	}
	changed := newSQLite(t, 0)
	changed.mustExec(t, `ALTER TABLE entries ADD COLUMN nickname TEXT CHECK (nickname IS NULL OR length(nickname) <= 40)`)
	changed.mustExec(t, `CREATE TABLE extra (id TEXT PRIMARY KEY) STRICT`)
	changed.mustExec(t, `CREATE INDEX entries_nickname_idx ON entries(nickname) WHERE nickname IS NOT NULL`)
	changed.mustExec(t, `CREATE TRIGGER extra_no_delete BEFORE DELETE ON extra BEGIN SELECT RAISE(ABORT, 'no'); END`)
	got := diff(describeSQLite(t, changed), s)
	for _, want := range []string{
		"table extra: only on SQLite",
		"column entries.nickname: only on SQLite",
		`table entries: checks on SQLite`,
		"index entries_nickname_idx: only on SQLite",
		"trigger extra_no_delete: only on SQLite",
	} {
		if !slices.ContainsFunc(got, func(d string) bool { return strings.HasPrefix(d, want) }) {
			t.Errorf("adding to one engine: no difference %q in %q", want, got)
		}
	}
	if got := diff(s, describeSQLite(t, changed)); !slices.Contains(got, "column entries.nickname: only on PostgreSQL") ||
		!slices.Contains(got, "table extra: only on PostgreSQL") {
		t.Errorf("adding to the other engine: %q", got)
	}
	renamed := *s.Tables["grants"]
	renamed.Columns = slices.Clone(renamed.Columns)
	renamed.Columns[4].NotNull = false
	other := *s
	other.Tables = maps.Clone(s.Tables)
	other.Tables["grants"] = &renamed
	if got := diff(s, &other); len(got) != 1 || !strings.HasPrefix(got[0], "column grants.user_id:") {
		t.Errorf("a column nullable on one engine: %q", got)
	}
}

// Both sets hold the same migration versions, so a database's version
// means the same schema on either engine.
func TestSchema_SameVersionsOnBothEngines(t *testing.T) {
	versions := func(set fs.FS) []int64 {
		files, err := fs.Glob(set, "*.sql")
		if err != nil {
			t.Fatal(err)
		}
		var vs []int64
		for _, f := range files {
			v, err := goose.NumericComponent(f)
			if err != nil {
				t.Fatal(err)
			}
			vs = append(vs, v)
		}
		return vs
	}
	s, p := versions(migrations.FS), versions(migrations.Postgres)
	if len(s) < 17 || !slices.Equal(s, p) {
		t.Fatalf("SQLite versions %v, PostgreSQL versions %v", s, p)
	}
}

// describeSQLite reads e's schema from sqlite_schema and the table pragmas.
func describeSQLite(t *testing.T, e *engine) *schema {
	t.Helper()
	q := func(query string, args ...any) [][]any {
		t.Helper()
		return queryAll(t, e, query, args...)
	}
	s := &schema{Tables: map[string]*table{}, Indexes: map[string]index{}, Triggers: map[string]trigger{}}
	for _, r := range q(`SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'goose_db_version'`) {
		name, ddl := str(r[0]), str(r[1])
		tb := &table{}
		var pk []string
		pkOrder := map[string]int64{}
		for _, c := range q(`SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?) ORDER BY cid`, name) {
			col := column{Name: str(c[0]), Type: sqliteType(str(c[1])), NotNull: num(c[2]) == 1 || num(c[4]) > 0, Default: unquote(str(c[3]))}
			col.AutoID = regexp.MustCompile(`(?i)\b` + col.Name + `\s+INTEGER\s+PRIMARY\s+KEY\s+AUTOINCREMENT\b`).MatchString(ddl)
			tb.Columns = append(tb.Columns, col)
			if num(c[4]) > 0 {
				pk = append(pk, col.Name)
				pkOrder[col.Name] = num(c[4])
			}
		}
		slices.SortFunc(pk, func(a, b string) int { return int(pkOrder[a] - pkOrder[b]) })
		tb.PrimaryKey = strings.Join(pk, ",")
		for _, ix := range q(`SELECT name FROM pragma_index_list(?) WHERE origin = 'u'`, name) {
			var cols []string
			for _, c := range q(`SELECT name FROM pragma_index_info(?) ORDER BY seqno`, str(ix[0])) {
				cols = append(cols, str(c[0]))
			}
			tb.Uniques = append(tb.Uniques, strings.Join(cols, ","))
		}
		fks := map[int64]*[5]string{}
		for _, f := range q(`SELECT id, "table", "from", "to", on_update, on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq`, name) {
			id := num(f[0])
			if fks[id] == nil {
				fks[id] = &[5]string{"", str(f[1]), "", strings.ToLower(str(f[4])), strings.ToLower(str(f[5]))}
			}
			fk := fks[id]
			fk[0] = join(fk[0], str(f[2]))
			fk[2] = join(fk[2], str(f[3]))
		}
		for _, fk := range fks {
			tb.ForeignKeys = append(tb.ForeignKeys, fmt.Sprintf("%s -> %s(%s) on update %s, on delete %s", fk[0], fk[1], fk[2], fk[3], fk[4]))
		}
		for _, expr := range sqliteChecks(ddl) {
			tb.Checks = append(tb.Checks, checkColumns(expr, names(tb.Columns)))
		}
		sortAll(tb)
		s.Tables[name] = tb
	}
	for _, r := range q(`SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL`) {
		s.Indexes[str(r[0])] = parseIndex(t, str(r[1]), str(r[2]))
	}
	for _, r := range q(`SELECT name, sql FROM sqlite_schema WHERE type = 'trigger'`) {
		s.Triggers[str(r[0])] = parseTrigger(t, str(r[1]))
	}
	return s
}

// describePostgres reads e's schema from information_schema and pg_catalog.
func describePostgres(t *testing.T, e *engine) *schema {
	t.Helper()
	q := func(query string, args ...any) [][]any {
		t.Helper()
		return queryAll(t, e, query, args...)
	}
	s := &schema{Tables: map[string]*table{}, Indexes: map[string]index{}, Triggers: map[string]trigger{}}
	for _, r := range q(`SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relname <> 'goose_db_version'`) {
		name := str(r[0])
		tb := &table{}
		for _, c := range q(`SELECT column_name, data_type, is_nullable, coalesce(column_default, ''), is_identity, coalesce(collation_name, '')
			FROM information_schema.columns WHERE table_schema = 'public' AND table_name = ? ORDER BY ordinal_position`, name) {
			col := column{Name: str(c[0]), Type: pgType(str(c[1]), str(c[5])), NotNull: str(c[2]) == "NO", Default: pgDefault(str(c[3])), AutoID: str(c[4]) == "YES"}
			tb.Columns = append(tb.Columns, col)
		}
		for _, c := range q(`SELECT con.contype::text,
				array_to_string(ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(n, i)
					JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY k.i), ','),
				coalesce(con.confrelid::regclass::text, ''),
				array_to_string(ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(n, i)
					JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n ORDER BY k.i), ','),
				con.confupdtype::text, con.confdeltype::text
			FROM pg_constraint con WHERE con.conrelid = ?::regclass`, name) {
			cols := str(c[1])
			switch str(c[0]) {
			case "p":
				tb.PrimaryKey = cols
			case "u":
				tb.Uniques = append(tb.Uniques, cols)
			case "f":
				tb.ForeignKeys = append(tb.ForeignKeys, fmt.Sprintf("%s -> %s(%s) on update %s, on delete %s",
					cols, str(c[2]), str(c[3]), pgAction(str(c[4])), pgAction(str(c[5]))))
			case "c":
				set := strings.Split(cols, ",")
				slices.Sort(set)
				tb.Checks = append(tb.Checks, strings.Join(set, ","))
			default:
				tb.Checks = append(tb.Checks, "constraint of kind "+str(c[0])+" on "+cols)
			}
		}
		sortAll(tb)
		s.Tables[name] = tb
	}
	for _, r := range q(`SELECT i.relname, t.relname, pg_get_indexdef(ix.indexrelid) FROM pg_index ix
			JOIN pg_class i ON i.oid = ix.indexrelid
			JOIN pg_class t ON t.oid = ix.indrelid
			JOIN pg_namespace n ON n.oid = t.relnamespace
		WHERE n.nspname = 'public' AND t.relname <> 'goose_db_version' AND NOT EXISTS (
			SELECT 1 FROM pg_constraint c WHERE c.conindid = ix.indexrelid AND c.conrelid = ix.indrelid AND c.contype IN ('p', 'u'))`) {
		s.Indexes[str(r[0])] = parseIndex(t, str(r[1]), str(r[2]))
	}
	for _, r := range q(`SELECT t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t
			JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND NOT t.tgisinternal`) {
		s.Triggers[str(r[0])] = parseTrigger(t, str(r[1]))
	}
	return s
}

func sortAll(tb *table) {
	slices.Sort(tb.Uniques)
	slices.Sort(tb.ForeignKeys)
	slices.Sort(tb.Checks)
}

func queryAll(t *testing.T, e *engine, query string, args ...any) [][]any {
	t.Helper()
	rows, err := e.db.Query(e.rebind(query), args...)
	if err != nil {
		t.Fatalf("%s: %s: %v", e.name, query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]any
	for rows.Next() {
		r := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range r {
			ptrs[i] = &r[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func str(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(v)
	case string:
		return v
	}
	return fmt.Sprint(v)
}

func num(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case bool:
		if v {
			return 1
		}
	}
	return 0
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

func sqliteType(t string) string {
	switch strings.ToUpper(t) {
	case "TEXT":
		return "text"
	case "INTEGER":
		return "integer"
	case "BLOB":
		return "bytes"
	}
	return "sqlite " + t
}

// pgType names PostgreSQL's types as sqliteType does SQLite's: TEXT must
// compare bytes (COLLATE "C"), and INTEGER be 64 bits.
func pgType(t, collation string) string {
	switch {
	case t == "text" && collation == "C":
		return "text"
	case t == "bigint":
		return "integer"
	case t == "bytea":
		return "bytes"
	case t == "text" && collation == "":
		return "text in the database's collation"
	case t == "text":
		return `text collate "` + collation + `"`
	}
	return "postgres " + t
}

// unquote is a default's value: 'Workspace' is Workspace.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	}
	return s
}

var pgCast = regexp.MustCompile(`^(.*)::[a-z ]+$`)

// pgDefault is a default's value: '{}'::text is {}.
func pgDefault(s string) string {
	if m := pgCast.FindStringSubmatch(s); m != nil {
		s = m[1]
	}
	return unquote(s)
}

func pgAction(c string) string {
	return map[string]string{"a": "no action", "r": "restrict", "c": "cascade", "n": "set null", "d": "set default"}[c]
}

// sqliteChecks returns the expression of every CHECK in a CREATE TABLE
// statement, comments and string literals left alone.
func sqliteChecks(ddl string) []string {
	var out []string
	for i := 0; i < len(ddl); {
		switch {
		case ddl[i] == '\'' || ddl[i] == '"':
			i = skipQuoted(ddl, i)
		case strings.HasPrefix(ddl[i:], "--"):
			for i < len(ddl) && ddl[i] != '\n' {
				i++
			}
		case i+5 <= len(ddl) && strings.EqualFold(ddl[i:i+5], "CHECK") && (i == 0 || !isWord(ddl[i-1])) &&
			(i+5 == len(ddl) || !isWord(ddl[i+5])):
			j := i + 5
			for j < len(ddl) && ddl[j] == ' ' {
				j++
			}
			end := matchParen(ddl, j)
			out = append(out, ddl[j+1:end])
			i = end + 1
		default:
			i++
		}
	}
	return out
}

func isWord(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// skipQuoted returns the index after the literal or identifier starting
// at s[i].
func skipQuoted(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		if s[i] == q {
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return i
}

// matchParen returns the index of the parenthesis closing the one at s[i].
func matchParen(s string, i int) int {
	depth := 0
	for i < len(s) {
		switch s[i] {
		case '\'', '"':
			i = skipQuoted(s, i)
			continue
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return len(s) - 1
}

var identifier = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// checkColumns is the sorted set of the table's columns a check's
// expression names.
func checkColumns(expr string, columns []string) string {
	var bare strings.Builder
	for i := 0; i < len(expr); {
		if expr[i] == '\'' {
			i = skipQuoted(expr, i)
			bare.WriteByte(' ')
			continue
		}
		bare.WriteByte(expr[i])
		i++
	}
	var set []string
	for _, w := range identifier.FindAllString(bare.String(), -1) {
		if slices.Contains(columns, w) && !slices.Contains(set, w) {
			set = append(set, w)
		}
	}
	slices.Sort(set)
	return strings.Join(set, ",")
}

var (
	indexHead   = regexp.MustCompile(`(?is)^CREATE\s+(UNIQUE\s+)?INDEX\s+(\S+)\s+ON\s+(?:public\.)?(\w+)\s*(?:USING\s+btree\s*)?\(`)
	triggerHead = regexp.MustCompile(`(?is)^CREATE\s+TRIGGER\s+(\S+)\s+(BEFORE|AFTER|INSTEAD\s+OF)\s+(INSERT|DELETE|TRUNCATE|UPDATE(?:\s+OF\s+[\w\s,]+?)?)\s+ON\s+(?:public\.)?(\w+)\b`)
	pgNoise     = regexp.MustCompile(`::(text|bigint|bytea)|collate"c"|[()]`)
)

// parseIndex reads a CREATE INDEX statement, SQLite's as written or
// PostgreSQL's as pg_get_indexdef prints it.
func parseIndex(t *testing.T, tableName, ddl string) index {
	t.Helper()
	m := indexHead.FindStringSubmatchIndex(ddl)
	if m == nil {
		t.Fatalf("unreadable index: %s", ddl)
	}
	open := m[1] - 1
	end := matchParen(ddl, open)
	ix := index{Table: tableName, Unique: m[2] >= 0, Keys: indexText(ddl[open+1 : end])}
	if rest := strings.TrimSpace(ddl[end+1:]); rest != "" {
		where, ok := strings.CutPrefix(strings.ToUpper(rest[:5])+rest[5:], "WHERE")
		if !ok {
			t.Fatalf("unreadable index: %s", ddl)
		}
		ix.Where = indexText(where)
	}
	return ix
}

// indexText is an index's keys or predicate without layout, parentheses
// or the casts PostgreSQL prints.
func indexText(s string) string {
	return pgNoise.ReplaceAllString(normalise(s), "")
}

func parseTrigger(t *testing.T, ddl string) trigger {
	t.Helper()
	m := triggerHead.FindStringSubmatch(ddl)
	if m == nil {
		t.Fatalf("unreadable trigger: %s", ddl)
	}
	event := strings.ToLower(strings.Join(strings.Fields(m[3]), " "))
	if cols, ok := strings.CutPrefix(event, "update of "); ok {
		set := strings.Split(strings.ReplaceAll(cols, " ", ""), ",")
		slices.Sort(set)
		event = "update of " + strings.Join(set, ",")
	}
	return trigger{Table: m[4], Timing: strings.ToLower(m[2]), Event: event}
}
