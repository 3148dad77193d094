package systemtest

import (
	"strings"
	"testing"

	"admit/internal/version"
)

func TestRun_VersionPrintsTheBuild(t *testing.T) {
	out := mustRunCmd(t, nil, "version")
	if got, want := strings.TrimSpace(out), version.Get().String(); got != want {
		t.Fatalf("admit version printed %q, want %q", got, want)
	}
	if got := strings.TrimSpace(mustRunCmd(t, nil, "--version")); got != version.Get().String() {
		t.Fatalf("admit --version printed %q", got)
	}
	if !strings.Contains(mustRunCmd(t, nil, "help"), "admit version") {
		t.Fatal("help does not list admit version")
	}
}
