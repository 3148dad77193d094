package store

import (
	"context"
	"regexp"
	"strconv"
	"testing"
)

// capCheckRE matches a cap column's CHECK in the programs table's schema.
var capCheckRE = regexp.MustCompile(`(?i)\b(queue_cap|hourly_cap|seat_cap)\s+INTEGER\s+NOT\s+NULL\s+CHECK\s*\(\s*(\w+)\s+BETWEEN\s+(\d+)\s+AND\s+(\d+)\s*\)`)

// TestProgramCaps_SchemaChecksHoldTheStoresRange reads the programs table as
// the migrations left it and holds each cap's CHECK to the range the store
// checks (MinProgramCap..MaxProgramCap), so that a cap the store accepts is
// never refused by the schema, nor the other way round.
func TestProgramCaps_SchemaChecksHoldTheStoresRange(t *testing.T) {
	sqliteOnly(t, "reads SQLite's schema text (the migrations' test compares the PostgreSQL schema with it)")
	db := MustOpenDB(t)
	var schema string
	err := db.View(context.Background(), func(tx *Tx) error {
		return tx.QueryRowContext(context.Background(),
			`SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'programs'`).Scan(&schema)
	})
	if err != nil {
		t.Fatalf("read the programs table's schema: %v", err)
	}
	found := map[string]bool{}
	for _, m := range capCheckRE.FindAllStringSubmatch(schema, -1) {
		col, checked, lo, hi := m[1], m[2], m[3], m[4]
		found[col] = true
		if checked != col {
			t.Errorf("%s's CHECK bounds %s", col, checked)
		}
		if lo != strconv.Itoa(MinProgramCap) || hi != strconv.Itoa(MaxProgramCap) {
			t.Errorf("%s: CHECK BETWEEN %s AND %s, want %d AND %d (MinProgramCap, MaxProgramCap)", col, lo, hi, MinProgramCap, MaxProgramCap)
		}
	}
	for _, col := range []string{"queue_cap", "hourly_cap", "seat_cap"} {
		if !found[col] {
			t.Errorf("no CHECK (%s BETWEEN … AND …) in the programs table:\n%s", col, schema)
		}
	}
}

// TestProgramCaps_CreateAndUpdateCheckTheOneRange holds creating a program
// and changing its caps to the same range and message.
func TestProgramCaps_CreateAndUpdateCheckTheOneRange(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	newProgram := func(slug string, queue, hourly, seat int) NewProgram {
		return NewProgram{WorkspaceID: w.ID, Slug: slug, Name: "Caps", Purpose: testPurpose,
			QueueCap: queue, HourlyCap: hourly, SeatCap: seat, MaxInvitationDays: 14}
	}
	p, err := db.CreateProgram(ctx, a, newProgram("caps-at-bounds", MaxProgramCap, MinProgramCap, MaxProgramCap))
	if err != nil {
		t.Fatalf("create at the bounds: %v", err)
	}
	for _, tc := range []struct {
		name                string
		queue, hourly, seat int
		want                string
	}{
		{"queue below", MinProgramCap - 1, 1, 1, "The queue cap must be between 1 and 100000."},
		{"queue above", MaxProgramCap + 1, 1, 1, "The queue cap must be between 1 and 100000."},
		{"hourly above", 1, MaxProgramCap + 1, 1, "The hourly cap must be between 1 and 100000."},
		{"seat below", 1, 1, MinProgramCap - 1, "The seat cap must be between 1 and 100000."},
	} {
		_, cerr := db.CreateProgram(ctx, a, newProgram("caps-refused", tc.queue, tc.hourly, tc.seat))
		s := ProgramSettings{ExpectedRevision: p.Revision}
		for _, c := range []struct {
			v   int
			set **int
		}{{tc.queue, &s.QueueCap}, {tc.hourly, &s.HourlyCap}, {tc.seat, &s.SeatCap}} {
			if c.v != 1 {
				*c.set = ptrTo(c.v)
			}
		}
		_, uerr := db.UpdateProgram(ctx, a, p.ID, s)
		for op, err := range map[string]error{"create": cerr, "update": uerr} {
			if ErrorCode(err) != EINVALID || ErrorMessage(err) != tc.want {
				t.Errorf("%s, %s: %v, want %s %q", tc.name, op, err, EINVALID, tc.want)
			}
		}
	}
}
