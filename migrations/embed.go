// Package migrations holds admit's goose SQL migrations, embedded in the binary.
package migrations

import "embed"

// FS holds every migration, applied in order at start.
//
//go:embed *.sql
var FS embed.FS
