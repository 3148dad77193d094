package store

import (
	"context"
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
// TestAudit_EachDetailsTypeNamesOneDeclaredEventType).
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

// eventTypeMethods reads, for every type with an EventType method in the
// store's code, the constant that method returns: type name → constant
// name. It fails on a method that returns anything but one identifier.
func eventTypeMethods(t *testing.T, fset *token.FileSet, files []*ast.File) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range files {
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Name.Name != "EventType" {
				continue
			}
			recv, ok := fd.Recv.List[0].Type.(*ast.Ident)
			if !ok {
				t.Fatalf("%s: EventType on a pointer or generic receiver", fset.Position(fd.Pos()))
			}
			var ret *ast.ReturnStmt
			if len(fd.Body.List) == 1 {
				ret, _ = fd.Body.List[0].(*ast.ReturnStmt)
			}
			if ret == nil || len(ret.Results) != 1 {
				t.Fatalf("%s: %s.EventType must be one return of a constant", fset.Position(fd.Pos()), recv.Name)
			}
			id, ok := ret.Results[0].(*ast.Ident)
			if !ok {
				t.Fatalf("%s: %s.EventType returns an expression, not a declared constant", fset.Position(fd.Pos()), recv.Name)
			}
			out[recv.Name] = id.Name
		}
	}
	if len(out) == 0 {
		t.Fatal("found no EventType methods: the scan is broken")
	}
	return out
}

// TestAudit_EachDetailsTypeNamesOneDeclaredEventType proves the declared
// constants are every type the code can emit, each with one details type:
// an event's type comes only from its details' EventType method
// (appendEvent takes no other), every such method returns a declared
// constant, no two details types share one, every details type is in the
// registry, and no code converts a value to EventType.
func TestAudit_EachDetailsTypeNamesOneDeclaredEventType(t *testing.T) {
	fset, files := storeSource(t)
	consts := declaredEventTypes(t, files)
	methods := eventTypeMethods(t, fset, files)

	byConst := map[string]string{}
	for typ, c := range methods {
		if _, ok := consts[c]; !ok {
			t.Errorf("%s.EventType returns %s, which is not a declared EventType constant", typ, c)
		}
		if other, ok := byConst[c]; ok {
			t.Errorf("%s and %s both record %s events", typ, other, c)
		}
		byConst[c] = typ
	}
	for c := range consts {
		if _, ok := byConst[c]; !ok {
			t.Errorf("no details type records %s events", c)
		}
	}
	registry := map[string]bool{}
	for _, dt := range eventRegistry {
		name := reflect.TypeOf(dt.zero).Name()
		registry[name] = true
		if c, ok := methods[name]; !ok || consts[c] != dt.zero.EventType() {
			t.Errorf("registry entry %s records %s, its source says %s", name, dt.zero.EventType(), c)
		}
	}
	for typ := range methods {
		if !registry[typ] {
			t.Errorf("%s has an EventType method but is not in eventRegistry", typ)
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "EventType" {
					t.Errorf("%s: a conversion to EventType makes an event type the registry test cannot see", fset.Position(call.Pos()))
				}
			}
			return true
		})
	}
}

// detailKeys are the JSON keys of a details struct, sorted.
func detailKeys(t *testing.T, d EventDetails) []string {
	t.Helper()
	rt := reflect.TypeOf(d)
	keys := []string{}
	for i := 0; i < rt.NumField(); i++ {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			t.Fatalf("%s.%s has no JSON name", rt.Name(), rt.Field(i).Name)
		}
		keys = append(keys, name)
	}
	sort.Strings(keys)
	return keys
}

// TestAudit_RegistrySchemaAndDocsAgree: each declared type has its details
// type in the registry and is accepted by the schema, docs/history.md lists
// each with exactly its struct's JSON keys, and none of them lists a type
// the code does not declare.
func TestAudit_RegistrySchemaAndDocsAgree(t *testing.T) {
	sqliteOnly(t, "reads SQLite's schema text (the migrations' test compares the PostgreSQL schema with it)")
	_, files := storeSource(t)
	var declared []string
	for _, v := range declaredEventTypes(t, files) {
		declared = append(declared, string(v))
	}
	sort.Strings(declared)

	registered := append([]string(nil), EventTypes...)
	sort.Strings(registered)
	if !reflect.DeepEqual(declared, registered) {
		t.Errorf("registry types %v, declared %v", registered, declared)
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

	// The documented table lists each type with exactly its struct's keys.
	doc, err := os.ReadFile(filepath.Join("..", "docs", "history.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string][]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| `([A-Za-z]+Details)` \\| (.*) \\|$").FindAllStringSubmatch(string(doc), -1) {
		keys := []string{}
		for _, k := range regexp.MustCompile("`([A-Za-z]+)`").FindAllStringSubmatch(m[3], -1) {
			keys = append(keys, k[1])
		}
		sort.Strings(keys)
		documented[m[1]] = append([]string{m[2]}, keys...)
	}
	for _, dt := range eventRegistry {
		typ := string(dt.zero.EventType())
		want := append([]string{reflect.TypeOf(dt.zero).Name()}, detailKeys(t, dt.zero)...)
		got, ok := documented[typ]
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("docs/history.md lists %s as %v (listed: %v), the code has %v", typ, got, ok, want)
		}
		delete(documented, typ)
	}
	for typ := range documented {
		t.Errorf("docs/history.md lists %s, which the code does not declare", typ)
	}
}

// pinnedDetails are, for every event type, details shaped like those the
// code records and the exact JSON history stores for them and the JSON API
// shows (docs/API.md#shapes, "Event"): the same bytes the details had when
// they were written as a map, keys sorted.
func pinnedDetails() []struct {
	d    EventDetails
	json string
} {
	const inv, grant = "0190f2a8-7c1e-7b3a-9f00-00000000abcd", "0190f2a8-7c1e-7b3a-9f00-00000000beef"
	return []struct {
		d    EventDetails
		json string
	}{
		{ProgramCreatedDetails{}, `{}`},
		{NoticePublishedDetails{Version: 2}, `{"version":2}`},
		{SignupDetails{NoticeVersion: 1}, `{"noticeVersion":1}`},
		{SelectedDetails{Reason: SelectMeetsPolicy, From: StateWaiting, Batch: true}, `{"batch":true,"from":"waiting","reason":"meets_policy"}`},
		{SelectedDetails{Reason: SelectOwnerDiscretion, From: StateWaiting}, `{"from":"waiting","reason":"owner_discretion"}`},
		{DeclinedDetails{Reason: DeclineCapacity, From: StateSelected}, `{"from":"selected","reason":"capacity"}`},
		{DeclinedDetails{Reason: DeclineNotEligible, From: StateWaiting, Batch: true}, `{"batch":true,"from":"waiting","reason":"not_eligible"}`},
		{InviteIssuedDetails{InvitationID: inv}, `{"invitationId":"` + inv + `"}`},
		{DeliveryRecordedDetails{InvitationID: inv, Channel: ChannelInPerson}, `{"channel":"in_person","invitationId":"` + inv + `"}`},
		{InviteRevokedDetails{InvitationID: inv}, `{"invitationId":"` + inv + `"}`},
		{InviteRevokedDetails{Cause: CauseWithdrawn}, `{"cause":"withdrawn"}`},
		{InviteExpiredDetails{InvitationID: inv}, `{"invitationId":"` + inv + `"}`},
		{RedeemedDetails{InvitationID: inv, GrantID: grant}, `{"grantId":"` + grant + `","invitationId":"` + inv + `"}`},
		{GrantRevokedDetails{GrantID: grant}, `{"grantId":"` + grant + `"}`},
		{GrantRevokedDetails{Cause: CauseWithdrawn}, `{"cause":"withdrawn"}`},
		{WithdrawnDetails{From: StateInvited, Via: ViaRemovalLink}, `{"from":"invited","via":"removal_link"}`},
		{WithdrawnDetails{From: StateWaiting, Via: ViaApplicant}, `{"from":"waiting","via":"applicant"}`},
		{WithdrawnDetails{From: StateActive, Via: ViaApplicantRequest}, `{"from":"active","via":"applicant_request"}`},
		{ContentUpdatedDetails{Revision: 3}, `{"revision":3}`},
		{AssetUploadedDetails{Bytes: 2048}, `{"bytes":2048}`},
		{ProgramChangedDetails{SignupOpen: true, QueueCap: 100, HourlyCap: 10, SeatCap: 5},
			`{"accessEnabled":false,"hourlyCap":10,"queueCap":100,"renamed":false,"seatCap":5,"signupOpen":true}`},
		{ProgramChangedDetails{AccessEnabled: true, Renamed: true, QueueCap: 100000, HourlyCap: 1, SeatCap: 0},
			`{"accessEnabled":true,"hourlyCap":1,"queueCap":100000,"renamed":true,"seatCap":0,"signupOpen":false}`},
		{ProgramRetiredDetails{Entries: 12, InvitationsRevoked: 1}, `{"entries":12,"grantsRevoked":0,"invitationsRevoked":1}`},
		{QueueExportedDetails{Rows: 40}, `{"rows":40}`},
		{QueueExportedDetails{}, `{"rows":0}`},
		{ErasedDetails{Reason: ErasedByRetention}, `{"reason":"retention"}`},
		{ErasedDetails{Reason: ErasedByRemovalLink}, `{"reason":"removal_link"}`},
	}
}

// TestAudit_DetailsJSONIsPinnedPerEventType writes every event type through
// appendEvent and reads it back: history stores exactly the pinned JSON,
// the event read back carries those bytes for the JSON API, and they decode
// into the details written.
func TestAudit_DetailsJSONIsPinnedPerEventType(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "audit-pinned")
	seen := map[EventType]bool{}
	for _, tc := range pinnedDetails() {
		typ := tc.d.EventType()
		seen[typ] = true
		mustUpdate(t, db, func(tx *Tx) error { return appendEvent(ctx, tx, p.ID, "", a, tc.d) })
		var stored string
		mustUpdate(t, db, func(tx *Tx) error {
			return tx.QueryRowContext(ctx, `SELECT details FROM audit_events WHERE program_id = ? ORDER BY id DESC LIMIT 1`, p.ID).Scan(&stored)
		})
		if stored != tc.json {
			t.Errorf("%s %+v stored %s, want %s", typ, tc.d, stored, tc.json)
		}
		page, err := db.FilteredEvents(ctx, a, p.ID, EventFilter{Type: string(typ), Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		ev := page.Events[0]
		if string(ev.StoredDetails) != tc.json || !reflect.DeepEqual(ev.Details, tc.d) {
			t.Errorf("%s read back as %s %#v, want %s %#v", typ, ev.StoredDetails, ev.Details, tc.json, tc.d)
		}
	}
	for _, typ := range EventTypes {
		if !seen[EventType(typ)] {
			t.Errorf("no pinned JSON for %s: add the details the code records", typ)
		}
	}
}

// TestAudit_ValuesOutsideTheirRulesAreNeverStored: a details struct's keys
// are fixed by its type, and each value keeps its rule: free text or an
// email in a string field, or a negative count, fails and leaves the
// history exactly as it was.
func TestAudit_ValuesOutsideTheirRulesAreNeverStored(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "audit-rules")
	refused := func(t *testing.T, d EventDetails) {
		t.Helper()
		before := historyRows(t, db, "audit_events")
		err := db.Update(ctx, func(tx *Tx) error { return appendEvent(ctx, tx, p.ID, "", a, d) })
		if err == nil {
			t.Errorf("%#v was stored, want an error", d)
		}
		if after := historyRows(t, db, "audit_events"); !reflect.DeepEqual(before, after) {
			t.Errorf("%#v changed the history", d)
		}
	}
	checked := 0
	for _, tc := range pinnedDetails() {
		rv := reflect.ValueOf(tc.d)
		for i := 0; i < rv.NumField(); i++ {
			field := rv.Type().Field(i).Name
			with := func(set func(reflect.Value)) EventDetails {
				c := reflect.New(rv.Type()).Elem()
				c.Set(rv)
				set(c.Field(i))
				return c.Interface().(EventDetails)
			}
			switch rv.Field(i).Kind() {
			case reflect.String:
				for _, bad := range []string{"alice@example.com", "called them on Tuesday", "0190F2A8-7C1E-7B3A-9F00-00000000ABCD"} {
					t.Run(string(tc.d.EventType())+"."+field, func(t *testing.T) {
						refused(t, with(func(v reflect.Value) { v.SetString(bad) }))
					})
					checked++
				}
			case reflect.Int, reflect.Int64:
				t.Run(string(tc.d.EventType())+"."+field, func(t *testing.T) {
					refused(t, with(func(v reflect.Value) { v.SetInt(-1) }))
				})
				checked++
			}
		}
	}
	if checked < len(EventTypes) {
		t.Fatalf("checked %d values for %d types: the mutation is broken", checked, len(EventTypes))
	}
	t.Run("no details", func(t *testing.T) { refused(t, nil) })
}

// TestAudit_StoredRowsOfOlderShapesStillRead: rows written before a key was
// added (renamed, channel), holding a key no current type has, or left at
// the schema's default read into their type, keys they lack as zero and
// keys unknown ignored, while the bytes the JSON API shows stay as stored.
func TestAudit_StoredRowsOfOlderShapesStillRead(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "audit-older")
	const inv = "0190f2a8-7c1e-7b3a-9f00-00000000abcd"
	for _, tc := range []struct {
		typ    EventType
		stored string
		want   EventDetails
	}{
		{EventProgramChanged, `{"accessEnabled":true,"hourlyCap":10,"queueCap":100,"seatCap":5,"signupOpen":true}`,
			ProgramChangedDetails{AccessEnabled: true, HourlyCap: 10, QueueCap: 100, SeatCap: 5, SignupOpen: true}},
		{EventDeliveryRecorded, `{"invitationId":"` + inv + `"}`, DeliveryRecordedDetails{InvitationID: inv}},
		{EventQueueExported, `{"note":"kept by an older version","rows":3}`, QueueExportedDetails{Rows: 3}},
		{EventSignup, `{}`, SignupDetails{}},
	} {
		if err := execRaw(db, `INSERT INTO audit_events (program_id, actor_kind, event_type, event_at, details)
			VALUES (?, 'system', ?, 1, ?)`, p.ID, string(tc.typ), tc.stored); err != nil {
			t.Fatal(err)
		}
		page, err := db.FilteredEvents(ctx, a, p.ID, EventFilter{Type: string(tc.typ), Limit: 1})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.typ, tc.stored, err)
		}
		ev := page.Events[0]
		if string(ev.StoredDetails) != tc.stored || !reflect.DeepEqual(ev.Details, tc.want) {
			t.Errorf("%s %s read as %s %#v, want %#v", tc.typ, tc.stored, ev.StoredDetails, ev.Details, tc.want)
		}
	}

	// A value of the wrong JSON type, or a type no details struct records,
	// is an error, not details made up.
	if _, err := DecodeEventDetails(string(EventQueueExported), []byte(`{"rows":"3"}`)); err == nil {
		t.Error("rows as a string decoded")
	}
	if _, err := DecodeEventDetails("note_added", []byte(`{}`)); err == nil {
		t.Error("an unregistered event type decoded")
	}
}
