package store

import (
	"context"
	"fmt"
	"strings"
)

// A signup batch leaves each signup's audit event (queueEvent) to the end
// of its transaction. Just before the commit the queued rows are written
// many a statement (writeQueued): SQLite then sets up the audit table's
// cursors, its two guard triggers and the statement journal they need,
// and updates the AUTOINCREMENT counter, once per statement instead of
// once per event (docs/PERFORMANCE.md#signup-events-written-together). Rows
// keep the order they were queued in, so event IDs follow the order of
// admission. A queued row was checked when it was queued; a transaction
// that does not commit writes none of its rows.
//
// A signup's other inserts stay where they are: they fire no trigger, so
// a single row needs no statement journal, and several rows a statement
// would (tried with the receipts: no fewer instructions).

// manyRows inserts rows of the same columns into one table, with one
// statement for each of a few fixed numbers of rows (manyRowsSizes), so
// that the prepared statements stay few.
type manyRows struct {
	table string
	width int
	sqls  map[int]string
}

// manyRowsSizes are the numbers of rows one statement of manyRows
// inserts, largest first.
var manyRowsSizes = []int{32, 16, 8, 4, 2, 1}

// newManyRows is the insert of rows of columns into table.
func newManyRows(table string, columns ...string) manyRows {
	row := "(" + strings.Repeat("?, ", len(columns)-1) + "?)"
	m := manyRows{table: table, width: len(columns), sqls: map[int]string{}}
	for _, n := range manyRowsSizes {
		m.sqls[n] = "INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES " +
			strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
	}
	return m
}

// insert writes the rows whose values follow each other in values, in
// their order.
func (m *manyRows) insert(ctx context.Context, tx *Tx, values []any) error {
	if len(values)%m.width != 0 {
		return fmt.Errorf("insert into %s: %d values for rows of %d", m.table, len(values), m.width)
	}
	for len(values) > 0 {
		n := 1
		for _, size := range manyRowsSizes {
			if size*m.width <= len(values) {
				n = size
				break
			}
		}
		if _, err := tx.ExecContext(ctx, m.sqls[n], values[:n*m.width]...); err != nil {
			return fmt.Errorf("insert into %s: %w", m.table, err)
		}
		values = values[n*m.width:]
	}
	return nil
}

// writeQueued inserts the audit events queued in tx.
func (tx *Tx) writeQueued(ctx context.Context) error {
	values := tx.queuedEvents
	tx.queuedEvents = nil
	return eventRows.insert(ctx, tx, values)
}
