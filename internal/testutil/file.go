package testutil

import (
	"errors"
	"os"
	"testing"
)

// FileSize returns the size of the file at path, 0 when it does not exist.
func FileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}
