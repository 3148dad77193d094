// Command release builds admit's release binaries: static (CGO_ENABLED=0),
// with -trimpath, no build ID and the version stamped, for every target,
// into one directory with a SHA256SUMS file. The same commit built with the
// same Go toolchain gives byte-identical binaries.
//
//	go run ./cmd/release [-o dist] [-version v1.2.0] [-targets linux/amd64,...]
//
// Without -version (or $VERSION) the version is `git describe --tags
// --always --dirty`.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Targets are the platforms a release is built for.
var Targets = []string{"linux/amd64", "linux/arm64", "darwin/arm64"}

func main() {
	out := flag.String("o", "dist", "output directory")
	version := flag.String("version", os.Getenv("VERSION"), "version to stamp (default: git describe --tags --always --dirty)")
	targets := flag.String("targets", strings.Join(Targets, ","), "comma-separated GOOS/GOARCH list")
	flag.Parse()
	if err := run(context.Background(), ".", *out, *version, strings.Split(*targets, ","), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, src, out, version string, targets []string, stdout io.Writer) error {
	if version == "" {
		v, err := describe(ctx, src)
		if err != nil {
			return err
		}
		version = v
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	sums := map[string]string{}
	for _, t := range targets {
		path, err := Build(ctx, src, out, version, strings.TrimSpace(t))
		if err != nil {
			return err
		}
		sum, err := fileSHA256(path)
		if err != nil {
			return err
		}
		sums[filepath.Base(path)] = sum
		fmt.Fprintf(stdout, "%s  %s\n", sum, path)
	}
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	return os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(b.String()), 0o644)
}

// describe is the version git gives the checkout at src.
func describe(ctx context.Context, src string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "describe", "--tags", "--always", "--dirty")
	cmd.Dir = src
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git describe (set -version): %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Build builds admit from src for target (GOOS/GOARCH) into
// out/admit-GOOS-GOARCH and returns its path.
func Build(ctx context.Context, src, out, version, target string) (string, error) {
	goos, goarch, ok := strings.Cut(target, "/")
	if !ok || goos == "" || goarch == "" {
		return "", fmt.Errorf("target %q is not GOOS/GOARCH", target)
	}
	abs, err := filepath.Abs(filepath.Join(out, "admit-"+goos+"-"+goarch))
	if err != nil {
		return "", err
	}
	ldflags := "-s -w -buildid= -X admit/internal/version.stamped=" + version
	if rev, when, modified, err := gitState(ctx, src); err == nil {
		ldflags += " -X admit/internal/version.stampedRevision=" + rev +
			" -X admit/internal/version.stampedTime=" + when +
			" -X admit/internal/version.stampedModified=" + modified
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", abs, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", target, err, b)
	}
	return abs, nil
}

// gitState is the checkout's commit, its time (UTC, RFC 3339) and whether
// the tree has uncommitted changes, as the Go toolchain would stamp them.
func gitState(ctx context.Context, src string) (rev, when, modified string, err error) {
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "TZ=UTC")
		b, err := cmd.Output()
		return strings.TrimSpace(string(b)), err
	}
	if rev, err = git("rev-parse", "HEAD"); err != nil {
		return "", "", "", err
	}
	if when, err = git("log", "-1", "--format=%cd", "--date=format-local:%Y-%m-%dT%H:%M:%SZ"); err != nil {
		return "", "", "", err
	}
	status, err := git("status", "--porcelain")
	if err != nil {
		return "", "", "", err
	}
	return rev, when, strconv.FormatBool(status != ""), nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
