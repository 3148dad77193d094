package main

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBuild_StaticStampedReproducible builds the linux/amd64 release
// target twice: a static binary (no ELF interpreter) whose `admit version`
// names the stamped version and the commit, byte-identical both times.
func TestBuild_StaticStampedReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds admit twice")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	ctx := context.Background()
	src, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var bins [2]string
	for i := range bins {
		if bins[i], err = Build(ctx, src, t.TempDir(), "v9.8.7-test", "linux/amd64"); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := os.ReadFile(bins[0])
	b, _ := os.ReadFile(bins[1])
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("two builds of the same tree differ (%d and %d bytes)", len(a), len(b))
	}
	f, err := elf.Open(bins[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary is dynamically linked (it has an ELF interpreter)")
		}
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return
	}
	out, err := exec.Command(bins[0], "version").Output()
	if err != nil {
		t.Fatalf("admit version: %v", err)
	}
	rev, err := exec.Command("git", "-C", src, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	if got := string(out); !strings.HasPrefix(got, "admit v9.8.7-test (revision "+strings.TrimSpace(string(rev))) ||
		!strings.Contains(got, runtime.Version()) {
		t.Fatalf("admit version printed %q, want v9.8.7-test at %s", got, rev)
	}
}
