package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// MustFullDisk mounts a small tmpfs (4 MiB) as a test's data directory and
// returns it with fill, which fills the file system to its last page so
// that every write needing a new page fails with ENOSPC, as on a full
// disk. fill frees the space again before the test's earlier cleanups (a
// database closing last checkpoints) and the tmpfs is unmounted at the end.
// Mounting needs root: without it the test is skipped, unless CI is set.
func MustFullDisk(tb testing.TB) (dir string, fill func()) {
	tb.Helper()
	dir = tb.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=4m,mode=0700"); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("mount a tmpfs to fill: %v", err)
		}
		tb.Skipf("mount a tmpfs to fill (needs root): %v", err)
	}
	tb.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			tb.Errorf("unmount %s: %v", dir, err)
		}
	})
	filler := filepath.Join(dir, "filler")
	fill = func() {
		tb.Helper()
		f, err := os.OpenFile(filler, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			tb.Fatalf("filler: %v", err)
		}
		// Cleanups run last in, first out: this one runs before those
		// registered earlier, such as closing the database.
		tb.Cleanup(func() { os.Remove(filler) })
		page := make([]byte, 4096)
		for _, err = f.Write(page); err == nil; _, err = f.Write(page) {
		}
		f.Close()
		if !errors.Is(err, syscall.ENOSPC) {
			tb.Fatalf("fill the disk: %v, want ENOSPC", err)
		}
	}
	return dir, fill
}
