// Package version reports which admit build is running, from the build
// information the Go toolchain embeds in the binary.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// stamped is set by the release build (just release) with
// -ldflags "-X admit/internal/version.stamped=v1.2.3"; it takes precedence
// over the module version when the build has no tag to derive one from.
var stamped string

// stampedRevision, stampedTime and stampedModified ("true" or "false") are
// set by the release build from git when the toolchain cannot read the
// checkout itself (a git worktree, whose .git is a file); the toolchain's
// own VCS stamp wins when present.
var stampedRevision, stampedTime, stampedModified string

// Info describes the running build. Its JSON form is the version object
// /healthz answers.
type Info struct {
	// Version is the module version: a release tag, a pseudo-version
	// derived from the commit, or "(devel)" for an unstamped build.
	Version string `json:"version"`
	// Revision and Time are the VCS commit and its time; empty when the
	// binary was built outside a checkout.
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	// Modified reports uncommitted changes in the checkout at build time.
	Modified bool `json:"modified"`
	// Go is the toolchain that built the binary.
	Go string `json:"go"`
}

// Get returns the running binary's build information.
func Get() Info { return current() }

// current reads the build information once.
var current = sync.OnceValue(func() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fromBuildInfo(nil)
	}
	return fromBuildInfo(bi)
})

// fromBuildInfo extracts Info; bi may be nil.
func fromBuildInfo(bi *debug.BuildInfo) Info {
	info := Info{Version: "(devel)", Go: runtime.Version()}
	if bi == nil {
		return info
	}
	if bi.GoVersion != "" {
		info.Go = bi.GoVersion
	}
	if v := bi.Main.Version; v != "" {
		info.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	if stamped != "" {
		info.Version = stamped
	}
	if info.Revision == "" && stampedRevision != "" {
		info.Revision, info.Time, info.Modified = stampedRevision, stampedTime, stampedModified == "true"
	}
	return info
}

// String is the one-line form `admit version` prints, e.g.
// "admit v1.2.0 (revision 0123abcd4567, 2026-11-30T23:55:45Z, modified) go1.26.8".
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "admit %s", i.Version)
	var parts []string
	if i.Revision != "" {
		parts = append(parts, "revision "+i.Revision)
	}
	if i.Time != "" {
		parts = append(parts, i.Time)
	}
	if i.Modified {
		parts = append(parts, "modified")
	}
	if len(parts) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, " %s", i.Go)
	return b.String()
}
