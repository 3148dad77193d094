package systemtest

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"admit/internal/pgtest"
)

// With ADMIT_DATABASE_URL set, the built binary's commands name the engine,
// never print the database's password, start no Litestream, and the
// Litestream commands say they do not apply and exit 1
// (docs/DEPLOY.md#postgresql).
func TestPostgres_CommandsNameTheEngineHideThePasswordAndLitestreamDoesNotApply(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	const password = "pa55-not-to-be-printed"
	u.User = url.UserPassword(u.User.Username(), password) // the test server trusts loopback: any password does
	bin, dir := MustBuildAdmit(t), t.TempDir()
	// A litestream.yml naming a replica, as a SQLite installation moved to
	// PostgreSQL may keep: it does not apply there.
	yml := filepath.Join(dir, "litestream.yml")
	replica := filepath.Join(dir, "replica")
	if err := os.WriteFile(yml, []byte("dbs:\n  - path: "+filepath.Join(dir, "data", "admit.db")+"\n    replica:\n      type: file\n      path: "+replica+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(binaryEnv(dir), "ADMIT_DATABASE_URL="+u.String(), "ADMIT_LITESTREAM_CONFIG="+yml)
	shown := strings.Replace(u.String(), password, "xxxxx", 1)

	// The first owner may be added before the first start: the command
	// migrates a new database.
	if r := runAdmit(t, bin, dir, env, "owner", "add", "--workspace", "Acme", "--user", "user_first"); r.code != 0 {
		t.Fatalf("admit owner add on a new PostgreSQL database: exit %d\n%s", r.code, r.stderr)
	}
	cfg := runAdmit(t, bin, dir, env, "config")
	if cfg.code != 0 || !strings.Contains(cfg.stdout, "database: PostgreSQL at "+shown) ||
		!strings.Contains(cfg.stdout, "backup: Litestream does not apply to PostgreSQL") {
		t.Fatalf("admit config: exit %d\n%s%s", cfg.code, cfg.stdout, cfg.stderr)
	}
	if !strings.Contains(cfg.stdout, yml) {
		t.Fatalf("admit config does not read %s:\n%s", yml, cfg.stdout)
	}
	if !strings.Contains(cfg.stdout, "ADMIT_DATABASE_URL") || !strings.Contains(cfg.stdout, "every server on this database needs the same keys") {
		t.Errorf("admit config lists no ADMIT_DATABASE_URL, or does not say the servers share their keys:\n%s", cfg.stdout)
	}

	p := MustStartAdmit(t, bin, dir, env)
	if code, body := get(t, newAPIClient().c, p.URL+"/readyz"); code != 200 {
		t.Fatalf("/readyz on PostgreSQL: %d %s", code, body)
	}
	if err := p.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.stderr)
	}
	logs := p.stderr.String()
	if n := strings.Count(logs, "Litestream does not apply"); n != 1 {
		t.Errorf("the log says %d times that Litestream does not apply, want once:\n%s", n, logs)
	}
	if strings.Contains(logs, "replicating the database") || strings.Contains(logs, "continuous backup is off") {
		t.Errorf("serve on PostgreSQL speaks of Litestream's backup:\n%s", logs)
	}
	for _, name := range []string{"admit.db", "admit.db-wal", "admit.db-shm"} {
		if _, err := os.Stat(filepath.Join(dir, "data", name)); !os.IsNotExist(err) {
			t.Errorf("%s in ADMIT_DATA on PostgreSQL (stat: %v)", name, err)
		}
	}
	if _, err := os.Stat(replica); !os.IsNotExist(err) {
		t.Errorf("serve on PostgreSQL wrote a Litestream replica (stat: %v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "admit.lock")); err != nil {
		t.Errorf("no data-directory lock file on PostgreSQL: %v", err)
	}

	status := runAdmit(t, bin, dir, env, "migrate", "-status")
	if status.code != 0 || !strings.Contains(status.stdout, "database "+shown) || !strings.Contains(status.stdout, "up to date") {
		t.Errorf("admit migrate -status: exit %d\n%s%s", status.code, status.stdout, status.stderr)
	}
	// The owner commands work on the database beside nothing but it.
	if r := runAdmit(t, bin, dir, env, "owner", "add", "--workspace", "Acme", "--user", "user_pg"); r.code != 0 {
		t.Errorf("admit owner add on PostgreSQL: exit %d\n%s", r.code, r.stderr)
	}
	if r := runAdmit(t, bin, dir, env, "owner", "list", "--workspace", "Acme"); r.code != 0 || ownerStatus(t, r.stdout, "user_pg") != "active" {
		t.Errorf("admit owner list on PostgreSQL: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"backup", "verify"}, {"restore", "-o", filepath.Join(dir, "restored.db")}} {
		r := runAdmit(t, bin, dir, env, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "does not apply to PostgreSQL") || !strings.Contains(r.stderr, "Backups on PostgreSQL") {
			t.Errorf("admit %s: exit %d, stderr %q; want 1 and that it does not apply", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	for _, r := range []cmdResult{cfg, status, {stderr: logs}} {
		if strings.Contains(r.stdout+r.stderr, password) {
			t.Errorf("the password is printed:\n%s%s", r.stdout, r.stderr)
		}
	}
}

// A second server on a PostgreSQL database admit already runs on, with
// neither ADMIT_SECRET_* nor a secrets file, is refused before it makes
// keys of its own; `admit config` refuses it alike; with the first
// server's secrets file it starts, and a session made on the first works
// on it.
func TestPostgres_ASecondServerWithoutTheSharedKeysIsRefused(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	envOf := func(data string) map[string]string {
		return map[string]string{"ADMIT_ADDR": "127.0.0.1:0", "ADMIT_DATA": data, "ADMIT_DATABASE_URL": dbURL}
	}
	dataA, dataB := t.TempDir(), t.TempDir()
	a := MustRunServe(t, envOf(dataA))
	for _, cmd := range []string{"serve", "config"} {
		_, err := runCmd(t, hermetic(t, envOf(dataB)), cmd)
		if err == nil || !strings.Contains(err.Error(), "ADMIT_SECRET_*") || !strings.Contains(err.Error(), filepath.Join(dataB, "secrets")) {
			t.Fatalf("admit %s without the shared keys: err=%v, want a refusal naming ADMIT_SECRET_* and the secrets file", cmd, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dataB, "secrets")); !os.IsNotExist(err) {
		t.Fatalf("the refused server made a secrets file (stat: %v)", err)
	}
	keys, err := os.ReadFile(filepath.Join(dataA, "secrets"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataB, "secrets"), keys, 0o600); err != nil {
		t.Fatal(err)
	}
	b := MustRunServe(t, envOf(dataB))
	owner := newAPIClient()
	owner.signIn(t, a.URL, a.DevLink, "owner@example.test")
	demoProgramID(t, owner, b.URL)

	// A server with a secrets file of its own whose binding key differs
	// (a mistyped copy): refused by the fingerprint the first server
	// recorded, naming where its keys came from.
	dataC := t.TempDir()
	other := regexp.MustCompile(`(?m)^binding=[0-9a-f]{64}$`).ReplaceAll(keys, []byte("binding="+strings.Repeat("ab", 32)))
	if bytes.Equal(other, keys) {
		t.Fatal("the secrets file has no binding line to change")
	}
	if err := os.WriteFile(filepath.Join(dataC, "secrets"), other, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"serve", "owner"} {
		args := []string{cmd}
		if cmd == "owner" {
			args = append(args, "list", "--workspace", "admit demo")
		}
		_, err := runCmd(t, hermetic(t, envOf(dataC)), args...)
		if err == nil || !strings.Contains(err.Error(), "differ from those of the servers already on") ||
			!strings.Contains(err.Error(), filepath.Join(dataC, "secrets")) {
			t.Fatalf("admit %s with another binding key: err=%v, want a refusal naming the secrets file", cmd, err)
		}
	}
}
