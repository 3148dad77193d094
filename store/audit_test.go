package store

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// storeSource parses the store package's non-test Go files.
func storeSource(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		files = append(files, f)
	}
	return fset, files
}

// declaredEventTypes are the EventType constants the store's code declares:
// constant name → event type. Only these can reach appendEvent (see
// TestAudit_EventTypesReachAppendEventOnlyAsConstants).
func declaredEventTypes(t *testing.T, files []*ast.File) map[string]EventType {
	t.Helper()
	out := map[string]EventType{}
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "EventType" {
					continue
				}
				for i, name := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("event type %s is not a string literal", name.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[name.Name] = EventType(v)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("found no EventType constants: the scan is broken")
	}
	return out
}

// TestAudit_EventTypesReachAppendEventOnlyAsConstants proves the declared
// constants are every type the code can emit: an EventType argument to
// appendEvent (or to any function passing one on) is always a declared
// constant or the caller's own EventType parameter, never a literal or a
// conversion.
func TestAudit_EventTypesReachAppendEventOnlyAsConstants(t *testing.T) {
	fset, files := storeSource(t)
	consts := declaredEventTypes(t, files)

	// Which parameters of which functions are EventTypes.
	eventParams := map[string][]int{}
	paramsOf := func(fd *ast.FuncDecl) (idx []int, names map[string]bool) {
		names = map[string]bool{}
		i := 0
		for _, field := range fd.Type.Params.List {
			n := max(len(field.Names), 1)
			if id, ok := field.Type.(*ast.Ident); ok && id.Name == "EventType" {
				for j := 0; j < n; j++ {
					idx = append(idx, i+j)
					if len(field.Names) > 0 {
						names[field.Names[j].Name] = true
					}
				}
			}
			i += n
		}
		return idx, names
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok {
				if idx, _ := paramsOf(fd); len(idx) > 0 {
					eventParams[fd.Name.Name] = idx
				}
			}
		}
	}
	if _, ok := eventParams["appendEvent"]; !ok {
		t.Fatal("appendEvent takes no EventType: the scan is broken")
	}

	calls := 0
	for _, f := range files {
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			_, own := paramsOf(fd)
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var name string
				switch fn := call.Fun.(type) {
				case *ast.Ident:
					name = fn.Name
				case *ast.SelectorExpr:
					name = fn.Sel.Name
				}
				if name == "EventType" {
					t.Errorf("%s: a conversion to EventType makes an event type the allowlist test cannot see", fset.Position(call.Pos()))
				}
				for _, i := range eventParams[name] {
					calls++
					arg, ok := call.Args[i].(*ast.Ident)
					if !ok || (consts[arg.Name] == "" && !own[arg.Name]) {
						t.Errorf("%s: %s gets an event type that is not a declared EventType constant", fset.Position(call.Args[i].Pos()), name)
					}
				}
				return true
			})
		}
	}
	if calls < len(consts) {
		t.Fatalf("found %d calls passing event types for %d types: the scan is broken", calls, len(consts))
	}
}

// TestAudit_EveryEventTypeHasAnAllowlistEntry: each declared type has its
// allowlist entry and is accepted by the schema, and neither lists a type
// the code does not declare.
func TestAudit_EveryEventTypeHasAnAllowlistEntry(t *testing.T) {
	_, files := storeSource(t)
	var declared []string
	for _, v := range declaredEventTypes(t, files) {
		declared = append(declared, string(v))
	}
	sort.Strings(declared)

	var allowed []string
	for k := range eventDetails {
		allowed = append(allowed, string(k))
	}
	sort.Strings(allowed)
	if !reflect.DeepEqual(declared, allowed) {
		t.Errorf("allowlist types %v, declared %v", allowed, declared)
	}

	db := MustOpenDB(t)
	var schema string
	mustUpdate(t, db, func(tx *Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT sql FROM sqlite_schema WHERE name = 'audit_events'`).Scan(&schema)
	})
	list := regexp.MustCompile(`(?s)event_type\s+TEXT NOT NULL CHECK \(event_type IN \((.*?)\)\)`).FindStringSubmatch(schema)
	if list == nil {
		t.Fatalf("no event_type check in the schema:\n%s", schema)
	}
	var inSchema []string
	for _, m := range regexp.MustCompile(`'([a-z_]+)'`).FindAllStringSubmatch(list[1], -1) {
		inSchema = append(inSchema, m[1])
	}
	sort.Strings(inSchema)
	if !reflect.DeepEqual(declared, inSchema) {
		t.Errorf("schema accepts %v, code declares %v", inSchema, declared)
	}

	// The documented table lists each type with exactly its allowed keys.
	doc, err := os.ReadFile(filepath.Join("..", "docs", "history.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string][]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (.*) \\|$").FindAllStringSubmatch(string(doc), -1) {
		keys := []string{}
		for _, k := range regexp.MustCompile("`([A-Za-z]+)`").FindAllStringSubmatch(m[2], -1) {
			keys = append(keys, k[1])
		}
		sort.Strings(keys)
		documented[m[1]] = keys
	}
	for typ, rules := range eventDetails {
		keys := []string{}
		for k := range rules {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		got, ok := documented[string(typ)]
		if !ok || !reflect.DeepEqual(got, keys) {
			t.Errorf("docs/history.md lists %s with %v (listed: %v), allowlist has %v", typ, got, ok, keys)
		}
		delete(documented, string(typ))
	}
	for typ := range documented {
		t.Errorf("docs/history.md lists %s, which the code does not declare", typ)
	}
}

// sampleDetails is, for every event type, details the allowlist accepts,
// shaped like those the code records.
func sampleDetails() map[EventType]Details {
	id := uuid.NewString()
	return map[EventType]Details{
		EventProgramCreated:   {},
		EventNoticePublished:  {"version": 2},
		EventSignup:           {"noticeVersion": 1},
		EventSelected:         {"reason": "meets_policy", "from": StateWaiting, "batch": true},
		EventDeclined:         {"reason": "capacity", "from": StateSelected},
		EventInviteIssued:     {"invitationId": id},
		EventDeliveryRecorded: {"invitationId": id, "channel": ChannelInPerson},
		EventInviteRevoked:    {"invitationId": id, "cause": "withdrawn"},
		EventInviteExpired:    {"invitationId": id},
		EventRedeemed:         {"invitationId": id, "grantId": uuid.NewString()},
		EventGrantRevoked:     {"grantId": id, "cause": "withdrawn"},
		EventWithdrawn:        {"from": StateInvited, "via": "removal_link"},
		EventContentUpdated:   {"revision": int64(3)},
		EventAssetUploaded:    {"bytes": 2048},
		EventProgramChanged: {"signupOpen": true, "accessEnabled": false,
			"queueCap": 100, "hourlyCap": 10, "seatCap": 5},
		EventProgramRetired: {"entries": 12, "invitationsRevoked": int64(1), "grantsRevoked": int64(0)},
		EventQueueExported:  {"rows": 40},
		EventErased:         {"reason": "retention"},
	}
}

// TestAudit_DetailsOutsideTheAllowlistAreNeverStored runs every event type
// the code declares through appendEvent: its allowed details are stored as
// given; an unknown key, free text or an email in a string value, a negative
// count, or a wrong type fails and leaves the history exactly as it was.
func TestAudit_DetailsOutsideTheAllowlistAreNeverStored(t *testing.T) {
	_, files := storeSource(t)
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "audit-allowlist")
	samples := sampleDetails()

	appendOne := func(typ EventType, d Details) error {
		return db.Update(ctx, func(tx *Tx) error { return appendEvent(ctx, tx, p.ID, "", a, typ, d) })
	}
	refused := func(t *testing.T, typ EventType, d Details) {
		t.Helper()
		before := historyRows(t, db, "audit_events")
		if err := appendOne(typ, d); err == nil {
			t.Errorf("%s %v was stored, want an error", typ, d)
		}
		if after := historyRows(t, db, "audit_events"); !reflect.DeepEqual(before, after) {
			t.Errorf("%s %v changed the history", typ, d)
		}
	}
	with := func(d Details, k string, v any) Details {
		out := Details{}
		for kk, vv := range d {
			out[kk] = vv
		}
		out[k] = v
		return out
	}

	for _, typ := range declaredEventTypes(t, files) {
		t.Run(string(typ), func(t *testing.T) {
			d, ok := samples[typ]
			if !ok {
				t.Fatalf("no sample details for %s: add one with the details the code records", typ)
			}
			before := len(historyRows(t, db, "audit_events"))
			if err := appendOne(typ, d); err != nil {
				t.Fatalf("allowed details refused: %v", err)
			}
			var stored string
			mustUpdate(t, db, func(tx *Tx) error {
				return tx.QueryRowContext(ctx, `SELECT details FROM audit_events WHERE program_id = ? AND event_type = ?
					ORDER BY id DESC LIMIT 1`, p.ID, string(typ)).Scan(&stored)
			})
			want, _ := json.Marshal(d)
			if stored != string(want) || len(historyRows(t, db, "audit_events")) != before+1 {
				t.Fatalf("stored %s, want %s once", stored, want)
			}

			refused(t, typ, with(d, "note", "sent by hand"))
			refused(t, typ, with(d, "email", "alice@example.com"))
			for k, v := range d {
				switch v.(type) {
				case string:
					refused(t, typ, with(d, k, "alice@example.com"))
					refused(t, typ, with(d, k, "called them on Tuesday"))
					refused(t, typ, with(d, k, 7))
				case int, int64:
					refused(t, typ, with(d, k, -1))
					refused(t, typ, with(d, k, "12"))
				case bool:
					refused(t, typ, with(d, k, "true"))
				}
			}
		})
	}
	t.Run("unknown type", func(t *testing.T) {
		refused(t, EventType("note_added"), Details{})
		refused(t, EventType(""), nil)
	})
}
