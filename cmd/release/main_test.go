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

// ReleaseTestsVar names the environment variable that opts into the tests
// that build admit as a release does: with -trimpath and CGO_ENABLED=0 the
// Go toolchain compiles every dependency again (several minutes on two
// cores with an empty build cache), so plain `go test ./...` skips them.
// .ci/run sets it.
const ReleaseTestsVar = "ADMIT_TEST_RELEASE"

// mustOptIn skips the test unless ReleaseTestsVar is 1 and the go command
// is there.
func mustOptIn(t *testing.T) {
	t.Helper()
	if os.Getenv(ReleaseTestsVar) != "1" {
		t.Skipf("builds admit as a release does (a rebuild of every dependency); set %s=1 to run it", ReleaseTestsVar)
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("needs the go command")
	}
}

// TestBuild_StaticStampedReproducible builds the linux/amd64 release
// target twice: a static binary (no ELF interpreter) whose `admit version`
// names the stamped version and the commit, byte-identical both times.
func TestBuild_StaticStampedReproducible(t *testing.T) {
	mustOptIn(t)
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

// TestRun_EveryTargetAndItsChecksum runs the release build, as `go run
// ./cmd/release` does, on a small program with no dependencies: a binary for
// every target, named admit-GOOS-GOARCH, and a SHA256SUMS file listing
// each with its digest, in the format `sha256sum -c` reads.
func TestRun_EveryTargetAndItsChecksum(t *testing.T) {
	mustOptIn(t)
	src := t.TempDir()
	for name, body := range map[string]string{
		"go.mod":  "module example.test/tiny\n\ngo 1.26\n",
		"main.go": "package main\n\nfunc main() { println(\"tiny\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	var log bytes.Buffer
	if err := run(context.Background(), src, out, "v0.0.1-test", Targets, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n")
	if got, want := len(lines), len(Targets); got != want {
		t.Fatalf("SHA256SUMS has %d lines, want %d:\n%s", got, want, sums)
	}
	for i, target := range []string{"darwin/arm64", "linux/amd64", "linux/arm64"} {
		goos, goarch, _ := strings.Cut(target, "/")
		name := "admit-" + goos + "-" + goarch
		sum, err := fileSHA256(filepath.Join(out, name))
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if got, want := lines[i], sum+"  "+name; got != want {
			t.Errorf("SHA256SUMS line %d=%q, want %q", i+1, got, want)
		}
	}
	if _, err := exec.LookPath("sha256sum"); err == nil {
		check := exec.Command("sha256sum", "-c", "SHA256SUMS")
		check.Dir = out
		if b, err := check.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, b)
		}
	}
}
