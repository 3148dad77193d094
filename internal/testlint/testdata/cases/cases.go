// Package cases holds code that testlint must and must not report; each
// line it must report ends in a want comment.
package cases

import (
	"context"
	"database/sql"
)

func scan(rows *sql.Rows) (int, error) {
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}

func scanNoErr(rows *sql.Rows) int {
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n
}

// Checked directly.
func direct(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "SELECT 1")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}

// Checked by the function it hands the rows to.
func handed(ctx context.Context, db *sql.DB) (int, error) {
	rows, err := db.QueryContext(ctx, "SELECT 1")
	if err != nil {
		return 0, err
	}
	return scan(rows)
}

// Never checked.
func unchecked(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "SELECT 1") // want "rows.Err() is never checked"
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	return rows.Close()
}

// Handed to a function that does not check it either.
func handedUnchecked(ctx context.Context, db *sql.DB) int {
	other, err := db.QueryContext(ctx, "SELECT 1") // want "other.Err() is never checked"
	if err != nil {
		return 0
	}
	return scanNoErr(other)
}
