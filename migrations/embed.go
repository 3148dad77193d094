// Package migrations holds admit's goose SQL migrations, embedded in the
// binary: one set per store engine, with the same version numbers.
package migrations

import (
	"embed"
	"io/fs"
)

// FS holds every SQLite migration, applied in order at start.
//
//go:embed *.sql
var FS embed.FS

//go:embed postgres/*.sql
var postgres embed.FS

// Postgres holds every PostgreSQL migration at its root, applied in order
// at start with goose's postgres dialect.
var Postgres fs.FS = mustSub(postgres, "postgres")

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // dir is a literal that the embed directive above proves exists
	}
	return sub
}
