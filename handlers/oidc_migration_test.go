package handlers

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"admit/internal/identity"
	"admit/internal/oidcprovider"
	"admit/internal/proc"
)

// mustBuildAdmit builds the admit binary into a directory of the test's.
func mustBuildAdmit(t *testing.T) string {
	t.Helper()
	var log bytes.Buffer
	bin, err := proc.BuildAdmit(context.Background(), "..", t.TempDir(), &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	return bin
}

// admitCLI runs the built admit binary with env and returns its output.
func admitCLI(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("admit %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// getFollowing GETs url with client, following redirects, and returns
// the final status and body.
func getFollowing(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestOIDC_MovingOwnersFromClerkFollowsDeploy follows docs/DEPLOY.md's
// "Moving owners from Clerk to OpenID Connect" with the built binary: a
// workspace owned by a Clerk user ID, `admit owner list`, admit serve
// switched to OpenID Connect, the owner's sign-in and user ID from
// /me/account, `admit owner add` and `admit owner remove` as written,
// beside the running server; then the same session reaches the workspace.
func TestOIDC_MovingOwnersFromClerkFollowsDeploy(t *testing.T) {
	doc, err := os.ReadFile("../docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "### Moving owners from Clerk to OpenID Connect\n")
	section, _, _ = strings.Cut(section, "\n## ")
	section = strings.Join(strings.Fields(section), " ") // commands may wrap
	for _, cmd := range []string{"admit owner list --workspace NAME", "admit owner add --workspace NAME --user oidc_…",
		"admit owner remove --workspace NAME --user user_…"} {
		if !strings.Contains(section, "`"+cmd+"`") {
			t.Fatalf("the section no longer says `%s`; update this test with it", cmd)
		}
	}

	ctx := context.Background()
	bin := mustBuildAdmit(t)
	data := t.TempDir()
	env := append(proc.ParentEnv(), "ADMIT_DATA="+data)
	const workspace, clerkOwner = "Acme Labs", "user_2abcDEFghiJKLmnoPQR"

	// Under Clerk: the workspace and its owner (docs/DEPLOY.md#clerk, step 7).
	admitCLI(t, bin, env, "owner", "add", "--workspace", workspace, "--user", clerkOwner)
	// Step 1: list the owners.
	if out := admitCLI(t, bin, env, "owner", "list", "--workspace", workspace); !strings.Contains(out, clerkOwner+"\tactive") {
		t.Fatalf("owner list before the switch:\n%s", out)
	}

	// Step 2: switch to OpenID Connect and restart.
	p := oidcprovider.Start(t)
	addr, err := proc.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	serveEnv := append(env, "ADMIT_ADDR="+addr, "ADMIT_PUBLIC_URL=http://"+addr, "ADMIT_OIDC_ISSUER="+p.Issuer,
		"ADMIT_OIDC_CLIENT_ID="+p.ClientID, "ADMIT_OIDC_CLIENT_SECRET="+p.ClientSecret)
	p.AllowRedirect("http://"+addr+"/auth/callback", "http://"+addr+"/")
	srv, err := proc.Start(ctx, bin, data, serveEnv, filepath.Join(t.TempDir(), "admit.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(10 * time.Second) })

	// Step 3: the owner signs in and reads their user ID on /me/account.
	const sub = "0d7c5c2e-owner"
	p.SetUser(oidcprovider.User{Sub: sub, Email: "owner@acme.example", EmailVerified: oidcprovider.Verified})
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	status, body := getFollowing(t, browser, srv.BaseURL+"/auth/start?redirect_url=%2Fme%2Faccount")
	m := regexp.MustCompile(`data-testid="user-id"[^>]*>\s*(oidc_[0-9a-f]+)`).FindStringSubmatch(body)
	if status != http.StatusOK || m == nil {
		t.Fatalf("/me/account after signing in: status %d, no oidc_ user ID shown", status)
	}
	oidcOwner := m[1]
	if oidcOwner != identity.OIDCUserID(p.Issuer, sub) {
		t.Fatalf("/me/account shows %s, want the issuer+sub digest", oidcOwner)
	}
	if status, _ := getFollowing(t, browser, srv.BaseURL+"/owner"); status != http.StatusNotFound {
		t.Fatalf("/owner before being added: status %d, want 404 (signing in makes no owner)", status)
	}

	// …add the new ID, then remove the old one, beside the running server.
	admitCLI(t, bin, env, "owner", "add", "--workspace", workspace, "--user", oidcOwner)
	admitCLI(t, bin, env, "owner", "remove", "--workspace", workspace, "--user", clerkOwner)
	out := admitCLI(t, bin, env, "owner", "list", "--workspace", workspace)
	if !strings.Contains(out, oidcOwner+"\tactive") || !strings.Contains(out, clerkOwner+"\tremoved") {
		t.Fatalf("owner list after the move:\n%s", out)
	}
	status, body = getFollowing(t, browser, srv.BaseURL+"/owner")
	if status != http.StatusOK || !strings.Contains(body, workspace) {
		t.Fatalf("/owner after the move: status %d, want 200 with the workspace", status)
	}
}
