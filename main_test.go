package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinary_ShipsNoTestOnlyPackage keeps the test harness, the fakes and the test provider
// out of the binary: the packages the admit command imports, directly or
// not, include none of them.
func TestBinary_ShipsNoTestOnlyPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 || !strings.Contains(string(out), "admit/internal/identity") {
		t.Fatalf("go list -deps listed %d packages, not admit's", len(deps))
	}
	for _, d := range deps {
		for _, banned := range []string{"admit/internal/apptest", "admit/internal/clerkfake", "admit/internal/oidcprovider", "github.com/zitadel/oidc"} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("the binary imports the test-only package %s", d)
			}
		}
	}
}
