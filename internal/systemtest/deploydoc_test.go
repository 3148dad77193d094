package systemtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"admit/internal/proc"
)

// docBlock is one fenced sh block of docs/DEPLOY.md.
type docBlock struct {
	heading string // the nearest heading above it
	text    string
}

// deployDocBlocks returns docs/DEPLOY.md's sh blocks in order.
func deployDocBlocks(tb testing.TB) []docBlock {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(moduleRoot, "docs", "DEPLOY.md"))
	if err != nil {
		tb.Fatal(err)
	}
	var blocks []docBlock
	var heading string
	var cur *strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case cur != nil && line == "```":
			blocks = append(blocks, docBlock{heading, cur.String()})
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		case line == "```sh":
			cur = &strings.Builder{}
		case strings.HasPrefix(line, "#"):
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	return blocks
}

// How the test runs each block of docs/DEPLOY.md.
const (
	runOnPrimary  = "run on the primary machine"
	runRelease    = "build a release (with ADMIT_TEST_RELEASE=1)"
	checkEnv      = "settings for admit.env, checked with admit config"
	runUpgrade    = "run on the primary, noting the time once backup verify has passed"
	runRollback   = "run on the primary, restoring the point noted during the upgrade"
	runTakeover   = "run on the primary, then from \"# On the standby:\" on the standby"
	runDrillAlone = "run as written, in a directory of its own"
)

// deployDocPlan names, for each sh block of docs/DEPLOY.md in order, its
// section, the start of its first line and how the test runs it. A block
// added, removed or moved fails the test until it is listed here.
var deployDocPlan = []struct{ heading, first, how string }{
	{"The binary", "go run ./cmd/release", runRelease},
	{"The binary", "install -m 0755 dist/admit-linux-amd64", runOnPrimary},
	{"The service", "useradd", runOnPrimary},
	{"Admin commands", "sudo -u admit admit --env-file /etc/admit/admit.env owner add", runOnPrimary},
	{"Admin commands", "sudo -u admit admit --env-file /etc/admit/admit.env config", runOnPrimary},
	{"Admin commands without sudo", "runuser -u admit -- admit --env-file", runOnPrimary},
	{"Secrets through systemd credentials", "install -d -m 0700 /etc/admit/credentials", runOnPrimary},
	{"Secrets through systemd credentials", "install -m 0400 -o admit -g admit /root/oidc-client-secret", runOnPrimary},
	{"The reverse proxy", "cp deploy/Caddyfile", runOnPrimary},
	{"OpenID Connect", "ADMIT_OIDC_ISSUER=https://id.example.com", checkEnv},
	{"Keycloak", "ADMIT_OIDC_ISSUER=", checkEnv},
	{"Authentik", "ADMIT_OIDC_ISSUER=", checkEnv},
	{"Zitadel", "ADMIT_OIDC_ISSUER=", checkEnv},
	{"Google", "ADMIT_OIDC_ISSUER=", checkEnv},
	{"Microsoft Entra ID", "ADMIT_OIDC_ISSUER=", checkEnv},
	{"The secrets file", "install -m 0600 /var/lib/admit/secrets /root/", runOnPrimary},
	{"Rotating a key", "cd /var/lib/admit", runOnPrimary},
	{"Upgrading and rolling back", "sudo -u admit admit --env-file /etc/admit/admit.env backup verify", runUpgrade},
	{"Upgrading and rolling back", "systemctl stop admit", runRollback},
	{"Upgrading and rolling back", "sed -i", runOnPrimary},
	{"A cold standby", "# On the old machine", runTakeover},
	{"A cold standby", "mkdir -p /tmp/drill/p /tmp/drill/s", runDrillAlone},
}

// machine is one server of the test: where its / is, and its addresses.
type machine struct {
	root    string // stands for /
	addr    string // stands for 127.0.0.1:8080
	metrics string // stands for 127.0.0.1:9464
}

// mapper rewrites a text's absolute paths and addresses for machine m.
func (m machine) mapper(drill, drillP, drillS string) *strings.Replacer {
	return strings.NewReplacer(
		"/etc/admit", m.root+"/etc/admit",
		"/etc/systemd/system", m.root+"/etc/systemd/system",
		"/etc/caddy", m.root+"/etc/caddy",
		"/var/lib/admit", m.root+"/var/lib/admit",
		"/usr/local/bin/admit", m.root+"/usr/local/bin/admit",
		"/root/", m.root+"/root/",
		"/tmp/drill", drill,
		"127.0.0.1:8080", m.addr,
		"127.0.0.1:9464", m.metrics,
		"127.0.0.1:18181", drillP,
		"127.0.0.1:18182", drillS,
		"2026-11-30T23:00:00Z", "$ROLLBACK_AT",
	)
}

// deployDocPrelude stands in for what the test cannot do on a shared
// machine: create users, switch to them (the commands run as the test's
// user), and systemd, which it emulates for the one unit from the unit
// file the doc installed: `systemctl start` runs its ExecStart with its
// Environment= and EnvironmentFile= (read by admit --env-file, as systemd
// reads them) in its StateDirectory, and logs to a journal file.
const deployDocPrelude = `set -euo pipefail
trap 'for p in $(jobs -p); do kill -9 $p 2>/dev/null || true; done' EXIT
useradd() { echo "(the test does not create users: useradd $*)"; }
install() {
  local a=()
  while [ $# -gt 0 ]; do case "$1" in -o|-g) shift 2;; *) a+=("$1"); shift;; esac; done
  command install "${a[@]}"
}
sudo() { if [ "$1" = -u ]; then shift 2; fi; "$@"; }
runuser() { while [ "$1" != -- ]; do shift; done; shift; "$@"; }
journalctl() {
  case " $* " in *" -n "*) tail -n 20 "$M/journal";; *) cat "$M/journal";; esac
}
unit_start() {
  local unit="$M/etc/systemd/system/admit.service"
  mkdir -p "$M/var/lib/admit" && chmod 0700 "$M/var/lib/admit"
  sed -n 's/^Environment=//p' "$unit" | tr ' ' '\n' > "$M/unit.env"
  local envfile exe seen
  envfile=$(sed -n 's/^EnvironmentFile=//p' "$unit")
  exe=$(sed -n 's/^ExecStart=//p' "$unit")
  touch "$M/journal"; seen=$(wc -l < "$M/journal")
  (cd "$M/var/lib/admit" && exec env -i PATH="$PATH" HOME="$M/var/lib/admit" TMPDIR="$M/tmp" \
    ${exe%% *} --env-file "$M/unit.env" --env-file "$envfile" ${exe#* }) >> "$M/journal" 2>&1 &
  echo $! > "$M/admit.pid"
  until tail -n +$((seen + 1)) "$M/journal" | grep -q '^listening on'; do
    if ! kill -0 "$(cat "$M/admit.pid")" 2>/dev/null; then echo "admit serve exited:"; tail -n +$((seen + 1)) "$M/journal"; return 1; fi
    sleep 0.1
  done
}
unit_stop() {
  [ -f "$M/admit.pid" ] || return 0
  local pid; pid=$(cat "$M/admit.pid")
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" || true
  rm -f "$M/admit.pid"
}
systemctl() {
  case "$*" in
    daemon-reload) ;;
    "enable --now admit"|"start admit") unit_start ;;
    "stop admit"|"disable --now admit") unit_stop ;;
    "restart admit") unit_stop; unit_start ;;
    "edit admit"|"reload caddy") echo "(the test does not run: systemctl $*)" ;;
    *) echo "systemctl $*: not emulated by the test" >&2; return 1 ;;
  esac
}
`

// TestDeployDoc_EveryCommandBlockRunsAgainstTheBuiltBinary runs every sh
// block of docs/DEPLOY.md, in order, with the built binary: two machines
// (a primary and a standby) under temporary directories standing for /,
// a directory standing for the S3 bucket, and the systemd unit emulated
// from deploy/admit.service. The operator's edits come first, as the doc
// says: deploy/admit.env's placeholders replaced, deploy/litestream.yml's
// S3 replica replaced by a file replica (there is no network here). Blocks
// of settings for admit.env are checked with admit config.
func TestDeployDoc_EveryCommandBlockRunsAgainstTheBuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	for _, tool := range []string{"curl", "sqlite3", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("docs/DEPLOY.md's commands use %s, which is not installed (.ci/run installs it)", tool)
			}
			t.Skipf("docs/DEPLOY.md's commands use %s, which is not installed", tool)
		}
	}
	blocks := deployDocBlocks(t)
	if len(blocks) != len(deployDocPlan) {
		for i, b := range blocks {
			t.Logf("block %d (%s): %s", i, b.heading, strings.SplitN(b.text, "\n", 2)[0])
		}
		t.Fatalf("docs/DEPLOY.md has %d sh blocks, the plan lists %d", len(blocks), len(deployDocPlan))
	}
	for i, b := range blocks {
		p := deployDocPlan[i]
		if b.heading != p.heading || !strings.HasPrefix(b.text, p.first) {
			t.Fatalf("block %d is %q under %q; the plan expects %q under %q", i, strings.SplitN(b.text, "\n", 2)[0], b.heading, p.first, p.heading)
		}
	}

	bin := MustBuildAdmit(t)
	root := t.TempDir()
	addr := func() string {
		a, err := proc.FreeLoopbackAddr()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	primary, standby := machine{filepath.Join(root, "a"), addr(), addr()}, machine{filepath.Join(root, "b"), addr(), addr()}
	drill, drillP, drillS := filepath.Join(root, "drill"), addr(), addr()
	bucket := filepath.Join(root, "bucket")
	for _, m := range []machine{primary, standby} {
		for _, d := range []string{"etc/systemd/system", "etc/caddy", "usr/local/bin", "root", "var/lib", "tmp", "src/dist"} {
			if err := os.MkdirAll(filepath.Join(m.root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		prepareOperatorCopy(t, m, bucket, m.mapper(drill, drillP, drillS))
		copyFile(t, bin, filepath.Join(m.root, "src/dist/admit-linux-amd64"), 0o755)
	}
	// The operator saved the provider's client secret (Secrets through systemd credentials).
	if err := os.WriteFile(filepath.Join(primary.root, "root/oidc-client-secret"), []byte("the-client-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	var script strings.Builder
	script.WriteString(deployDocPrelude)
	fmt.Fprintf(&script, "BASEPATH=%q\n", os.Getenv("PATH"))
	on := func(m machine) {
		fmt.Fprintf(&script, "M=%q; PATH=\"$M/usr/local/bin:$BASEPATH\"\n", m.root)
	}
	placeholders := strings.NewReplacer("<realm>", "admit", "<slug>", "admit", "<instance>", "admit-example",
		"<tenant-id>", "9188040d-6c67-4c5b-b112-36a304b66dad")
	for i, b := range blocks {
		how := deployDocPlan[i].how
		fmt.Fprintf(&script, "echo '=== block %d (%s)'\n", i, b.heading)
		text := b.text
		switch how {
		case runRelease:
			if os.Getenv("ADMIT_TEST_RELEASE") == "" {
				script.WriteString("echo '(skipped without ADMIT_TEST_RELEASE=1: dist/ holds the test build)'\n")
				continue
			}
			// The build runs in a checkout; the operator copies dist/ to the server.
			src, err := filepath.Abs(moduleRoot)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&script, "rel=$(mktemp -d)\n(cd %q && go run ./cmd/release -o \"$rel/dist\" -targets linux/amd64)\n", src)
			text = strings.Replace(text, "go run ./cmd/release -targets linux/amd64", "true", 1)
			on(primary)
			fmt.Fprintf(&script, "cd \"$rel\"\n%s\ncp -p \"$rel\"/dist/* \"$M/src/dist/\"\n", text)
			continue
		case checkEnv:
			on(primary)
			fmt.Fprintf(&script, "cd \"$M/src\"\ngrep -v '^CLERK_' \"$M/etc/admit/admit.env\" > \"$M/oidc.env\"\n")
			oidc := blocks[9].text + placeholders.Replace(text) // the section's settings on top of the general ones
			fmt.Fprintf(&script, "cat >> \"$M/oidc.env\" <<'ADMIT_ENV_EOF'\n%sADMIT_ENV_EOF\n", primary.mapper(drill, drillP, drillS).Replace(oidc))
			script.WriteString("admit --env-file \"$M/oidc.env\" config | grep '^identity: OpenID Connect'\n")
			continue
		case runUpgrade:
			// The time to roll back to, as the operator reads it from the
			// journal: once backup verify has found the replica complete
			// (restore points are named to the second, so the next one).
			first, rest, _ := strings.Cut(text, "\n")
			text = first + "\nROLLBACK_AT=$(date -u -d '+1 second' +%Y-%m-%dT%H:%M:%SZ)\n" + rest
		case runTakeover:
			// The standby was prepared once as the doc says: binary, admit.env,
			// litestream.yml (the primary's, now naming admit-rollback-1) and
			// the unit installed, the unit not enabled, the secrets file copied.
			sm := standby.mapper(drill, drillP, drillS)
			on(standby)
			fmt.Fprintf(&script, "install -m 0755 \"$M/src/dist/admit-linux-amd64\" \"$M/usr/local/bin/admit\"\n")
			fmt.Fprintf(&script, "install -d -m 0750 \"$M/etc/admit\" && mkdir -p -m 0700 \"$M/var/lib/admit\"\n")
			fmt.Fprintf(&script, "sed 's|%s|%s|g' %q > \"$M/etc/admit/litestream.yml\"\n", primary.root, standby.root, filepath.Join(primary.root, "etc/admit/litestream.yml"))
			fmt.Fprintf(&script, "install -m 0640 \"$M/src/deploy/admit.env\" \"$M/etc/admit/\"\n")
			fmt.Fprintf(&script, "install -m 0644 \"$M/src/deploy/admit.service\" \"$M/etc/systemd/system/\"\n")
			fmt.Fprintf(&script, "install -m 0600 %q \"$M/var/lib/admit/secrets\"\n", filepath.Join(primary.root, "var/lib/admit/secrets"))
			before, after, ok := strings.Cut(text, "# On the standby:\n")
			if !ok {
				t.Fatal("the takeover block has no \"# On the standby:\" line")
			}
			on(primary)
			fmt.Fprintf(&script, "cd \"$M/src\"\n%s", primary.mapper(drill, drillP, drillS).Replace(before))
			on(standby)
			fmt.Fprintf(&script, "cd \"$M/src\"\n%s", sm.Replace(after))
			script.WriteString("echo '--- standby owners'\nadmit --env-file \"$M/etc/admit/admit.env\" owner list --workspace \"My company\"\n")
			script.WriteString("curl -sf \"http://" + standby.addr + "/readyz\"; echo\n")
			continue
		case runDrillAlone:
			fmt.Fprintf(&script, "PATH=%q\n", filepath.Dir(bin)+":"+os.Getenv("PATH"))
			script.WriteString(primary.mapper(drill, drillP, drillS).Replace(text))
			continue
		}
		on(primary)
		fmt.Fprintf(&script, "cd \"$M/src\"\n%s", primary.mapper(drill, drillP, drillS).Replace(text))
		if i == 19 { // the rollback is complete: its database holds the owner added before the upgrade
			script.WriteString("echo '--- rolled-back owners'\nadmit --env-file \"$M/etc/admit/admit.env\" owner list --workspace \"My company\"\n")
		}
	}
	script.WriteString("echo '=== done'\n")

	limit := 4 * time.Minute
	if os.Getenv("ADMIT_TEST_RELEASE") != "" {
		limit += 10 * time.Minute // a release build from a cold cache
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "TMPDIR=" + filepath.Join(root, "a", "tmp"), "LANG=C.UTF-8"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t.Cleanup(func() { killPidFiles(root) })
	err := cmd.Run()
	output := out.String()
	if err != nil || !strings.HasSuffix(output, "=== done\n") {
		t.Fatalf("docs/DEPLOY.md's commands failed (%v); the last block started is the one that failed:\n%s", err, tail(output, 80))
	}
	if testing.Verbose() {
		t.Log(output)
	}
	if strings.Contains(output, "admit: --env-file") {
		t.Errorf("an --env-file could not be read:\n%s", output)
	}
	owner := "user_2abc…"
	for _, section := range []string{"--- rolled-back owners", "--- standby owners"} {
		_, after, _ := strings.Cut(output, section)
		if after, _, _ = strings.Cut(after, "==="); !strings.Contains(after, owner) {
			t.Errorf("%s: the owner added before the upgrade is missing:\n%s", section, after)
		}
	}
	if !strings.Contains(output, `{"status":"ready"}`) {
		t.Errorf("no standby answered /readyz ready:\n%s", tail(output, 40))
	}
	m := regexp.MustCompile(`acknowledged (\d+) in (\d+) ms, restored (\d+), lost (-?\d+)`).FindStringSubmatch(output)
	if m == nil {
		t.Fatalf("the drill printed no count:\n%s", tail(output, 40))
	}
	acked, _ := strconv.Atoi(m[1])
	restored, _ := strconv.Atoi(m[3])
	if acked != 200 || restored > acked || restored < 1 {
		t.Errorf("drill: %d acknowledged, %d restored; want 200 acknowledged and at most that many restored", acked, restored)
	}
	t.Logf("drill: %s acknowledged in %s ms, %s restored, %s lost", m[1], m[2], m[3], m[4])
}

// prepareOperatorCopy writes m's working copy of deploy/ as the operator
// has it before installing: placeholders replaced, the S3 replica replaced
// by a file replica in bucket, every path rewritten for m.
func prepareOperatorCopy(tb testing.TB, m machine, bucket string, paths *strings.Replacer) {
	tb.Helper()
	dir := filepath.Join(m.root, "src", "deploy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	env := strings.NewReplacer("sk_live_replace_me", "sk_live_0123456789", "pk_live_replace_me", "pk_live_0123456789",
		"waitlist.example.com", "admit.example.org").Replace(readDeployFile(tb, "admit.env"))
	yml := regexp.MustCompile(`(?s)    replica:\n.*?\n\n`).ReplaceAllString(readDeployFile(tb, "litestream.yml"),
		"    replica:\n      type: file\n      path: "+filepath.Join(bucket, "admit")+"\n\n")
	for name, text := range map[string]string{"admit.env": env, "litestream.yml": yml,
		"admit.service": readDeployFile(tb, "admit.service"), "Caddyfile": readDeployFile(tb, "Caddyfile")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(paths.Replace(text)), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

func copyFile(tb testing.TB, from, to string, mode os.FileMode) {
	tb.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		tb.Fatal(err)
	}
}

// killPidFiles kills, by PID, any server the emulated units left running.
func killPidFiles(root string) {
	files, _ := filepath.Glob(filepath.Join(root, "*", "admit.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
