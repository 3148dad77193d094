package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo_ReadsModuleVersionVCSAndGo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "admit", Version: "v0.0.0-20261130235545-0123abcd4567+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "-trimpath", Value: "true"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123abcd456789abcdef0123abcd456789abcdef"},
			{Key: "vcs.time", Value: "2026-11-30T23:55:45Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	got := fromBuildInfo(bi)
	want := Info{Version: "v0.0.0-20261130235545-0123abcd4567+dirty", Revision: "0123abcd456789abcdef0123abcd456789abcdef",
		Time: "2026-11-30T23:55:45Z", Modified: true, Go: "go1.26.8"}
	if got != want {
		t.Fatalf("fromBuildInfo=%+v, want %+v", got, want)
	}
	if s := got.String(); s != "admit v0.0.0-20261130235545-0123abcd4567+dirty (revision 0123abcd456789abcdef0123abcd456789abcdef, 2026-11-30T23:55:45Z, modified) go1.26.8" {
		t.Fatalf("String()=%q", s)
	}
}

func TestFromBuildInfo_StampedVersionWinsAndCleanTreeIsNotModified(t *testing.T) {
	old := stamped
	stamped = "v1.4.0"
	defer func() { stamped = old }()
	got := fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "false"}}})
	if got.Version != "v1.4.0" || got.Modified {
		t.Fatalf("got %+v, want the stamped v1.4.0, not modified", got)
	}
}

func TestFromBuildInfo_NoBuildInfoIsDevelWithRuntimeGo(t *testing.T) {
	got := fromBuildInfo(nil)
	if got.Version != "(devel)" || got.Go != runtime.Version() || got.Revision != "" {
		t.Fatalf("got %+v", got)
	}
	if s := got.String(); !strings.HasPrefix(s, "admit (devel) go") {
		t.Fatalf("String()=%q", s)
	}
}

func TestFromBuildInfo_ReleaseStampFillsInMissingVCS(t *testing.T) {
	defer func(a, b, c string) { stampedRevision, stampedTime, stampedModified = a, b, c }(stampedRevision, stampedTime, stampedModified)
	stampedRevision, stampedTime, stampedModified = "abc123", "2026-12-01T00:19:37Z", "true"
	got := fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}})
	if got.Revision != "abc123" || got.Time != "2026-12-01T00:19:37Z" || !got.Modified {
		t.Fatalf("got %+v, want the release stamp's commit", got)
	}
	// The toolchain's own stamp wins.
	got = fromBuildInfo(&debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "def456"}}})
	if got.Revision != "def456" || got.Modified {
		t.Fatalf("got %+v, want the toolchain's commit", got)
	}
}
