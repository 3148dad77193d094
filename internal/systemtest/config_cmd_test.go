package systemtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"admit/internal/config"
)

// secretValues is a Clerk-mode environment whose every credential-like
// variable holds a value a test can search the output for.
func secretValues(tb testing.TB) map[string]string {
	env := clerkEnv(map[string]string{
		"CLERK_SECRET_KEY":      "sk_live_clerk-secret-value",
		"ADMIT_DATA":            tb.TempDir(),
		"AWS_ACCESS_KEY_ID":     "aws-key-id-value",
		"AWS_SECRET_ACCESS_KEY": "aws-secret-value",
	})
	for i, n := range append(append([]string{}, config.SecretNames...), config.PreviousSecretNames...) {
		env["ADMIT_SECRET_"+strings.ToUpper(n)] = strings.Repeat(string("0123456789abcdef"[i]), 64)
	}
	return hermetic(tb, env)
}

func TestConfigCmd_PrintsEveryVariableWithSecretsHidden(t *testing.T) {
	env := secretValues(t)
	out := mustRunCmd(t, env, "config")
	for _, v := range config.Vars {
		for _, n := range v.Names() {
			if !strings.Contains(out, n+" ") {
				t.Errorf("admit config does not show %s", n)
			}
		}
	}
	for _, k := range []string{"CLERK_SECRET_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "ADMIT_SECRET_CSRF", "ADMIT_SECRET_PREVIOUS_CSRF"} {
		if !strings.Contains(out, k) || strings.Contains(out, env[k]) {
			t.Errorf("%s: its value is shown, or the variable is not:\n%s", k, out)
		}
	}
	for k, v := range env {
		if strings.Contains(k, "SECRET") && strings.Contains(out, v) {
			t.Errorf("the value of %s is in the output", k)
		}
	}
	if !regexp.MustCompile(`\nCLERK_ISSUER +https://clerk\.example\.com +environment\n`).MatchString(out) {
		t.Errorf("admit config does not show CLERK_ISSUER's value and source:\n%s", out)
	}
	for _, want := range []string{"(hidden)", "identity: Clerk (https://clerk.example.com)", "server keys: the environment (ADMIT_SECRET_*)", "backup: off: no "} {
		if !strings.Contains(out, want) {
			t.Errorf("admit config does not say %q:\n%s", want, out)
		}
	}
}

func TestConfigCmd_NeverShowsTheOIDCClientSecretFromItsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "client-secret")
	if err := os.WriteFile(file, []byte("oidc-secret-from-the-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustRunCmd(t, hermetic(t, map[string]string{
		"ADMIT_DATA": t.TempDir(), "ADMIT_PUBLIC_URL": "https://admit.example.com",
		"ADMIT_OIDC_ISSUER": "https://id.example.com", "ADMIT_OIDC_CLIENT_ID": "admit", "ADMIT_OIDC_CLIENT_SECRET_FILE": file,
	}), "config")
	if strings.Contains(out, "oidc-secret-from-the-file") {
		t.Fatalf("the client secret read from its file is shown:\n%s", out)
	}
	if !strings.Contains(out, file) || !strings.Contains(out, "identity: OpenID Connect (https://id.example.com)") {
		t.Fatalf("want the file's path and the mode shown:\n%s", out)
	}
}

func TestConfigCmd_RefusesAnInvalidConfigurationWithServesMessage(t *testing.T) {
	badYML := filepath.Join(t.TempDir(), "litestream.yml")
	if err := os.WriteFile(badYML, []byte("dbs:\n  - path: data/admit.db\n    replica:\n      pth: /backups\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s3YML := filepath.Join(t.TempDir(), "litestream.yml")
	if err := os.WriteFile(s3YML, []byte("dbs:\n  - path: ${ADMIT_DATA}/admit.db\n    replica:\n      type: s3\n      bucket: backups-of-admit\n      path: admit\n      endpoint: http://127.0.0.1:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, wantVar string
		env           map[string]string
		// data prepares the data directory, when set.
		data func(t *testing.T, dir string)
	}{
		{"development mode off loopback", "ADMIT_ADDR", map[string]string{"ADMIT_ADDR": "0.0.0.0:8080"}, nil},
		{"a bad log level", "ADMIT_LOG_LEVEL", map[string]string{"ADMIT_LOG_LEVEL": "loud"}, nil},
		{"a bad drill interval", "ADMIT_BACKUP_DRILL_INTERVAL", map[string]string{"ADMIT_BACKUP_DRILL_INTERVAL": "hourly"}, nil},
		{"half the server keys", "ADMIT_SECRET_", map[string]string{"ADMIT_SECRET_CSRF": strings.Repeat("ab", 32)}, nil},
		{"an unknown litestream.yml key", "pth", map[string]string{"ADMIT_LITESTREAM_CONFIG": badYML}, nil},
		{"the Clerk key placeholder shipped in deploy/admit.env", "CLERK_SECRET_KEY", clerkEnv(map[string]string{"CLERK_SECRET_KEY": "sk_live_replace_me"}), nil},
		{"the example site shipped in deploy/admit.env", "ADMIT_PUBLIC_URL", clerkEnv(map[string]string{"ADMIT_PUBLIC_URL": "https://waitlist.example.com"}), nil},
		{"an S3 replica without credentials", "AWS_ACCESS_KEY_ID", map[string]string{"ADMIT_LITESTREAM_CONFIG": s3YML}, nil},
		{"a secrets file others can read", "secrets file", nil, func(t *testing.T, dir string) {
			var sb strings.Builder
			for i, n := range config.SecretNames {
				fmt.Fprintf(&sb, "%s=%s\n", n, strings.Repeat(string("0123456789abcdef"[i]), 64))
			}
			if err := os.WriteFile(filepath.Join(dir, "secrets"), []byte(sb.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(dir, "secrets"), 0o644); err != nil { // past the umask
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := hermetic(t, tc.env)
			env["ADMIT_DATA"] = t.TempDir()
			if tc.data != nil {
				tc.data(t, env["ADMIT_DATA"])
			}
			_, cfgErr := runCmd(t, env, "config")
			_, serveErr := runCmd(t, env, "serve")
			if cfgErr == nil || serveErr == nil {
				t.Fatalf("config: %v; serve: %v; want both refused", cfgErr, serveErr)
			}
			if got, want := cfgErr.Error(), serveErr.Error(); got != want || !strings.Contains(got, tc.wantVar) {
				t.Fatalf("admit config said\n%s\nadmit serve said\n%s\nwant the same, naming %s", got, want, tc.wantVar)
			}
		})
	}
}

func TestConfigCmd_BinaryExitsNonZeroWithServesMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin, dir := MustBuildAdmit(t), t.TempDir()
	env := append(binaryEnv(dir), "ADMIT_NETWORK_HOURLY_LIMIT=many")
	cfg, serve := runAdmit(t, bin, dir, env, "config"), runAdmit(t, bin, dir, env, "serve")
	if cfg.code == 0 || cfg.code != serve.code || cfg.stderr != serve.stderr || !strings.Contains(cfg.stderr, "ADMIT_NETWORK_HOURLY_LIMIT") {
		t.Fatalf("admit config: exit %d, stderr %q; admit serve: exit %d, stderr %q; want the same refusal", cfg.code, cfg.stderr, serve.code, serve.stderr)
	}
	if ok := runAdmit(t, bin, dir, binaryEnv(dir), "config"); ok.code != 0 || !strings.Contains(ok.stdout, "identity: development") {
		t.Fatalf("admit config with a valid configuration: exit %d\n%s%s", ok.code, ok.stdout, ok.stderr)
	}
}

// deploy/admit.env as shipped, read as systemd reads it, is refused by
// `admit config` and `admit serve` alike, naming every placeholder the
// operator must replace; the same file with its placeholders replaced passes.
func TestConfigCmd_ShippedAdmitEnvIsRefusedNamingEachPlaceholder(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin, dir := MustBuildAdmit(t), t.TempDir()
	shipped, err := filepath.Abs(filepath.Join(moduleRoot, "deploy", "admit.env"))
	if err != nil {
		t.Fatal(err)
	}
	env := binaryEnv(dir)
	cfg := runAdmit(t, bin, dir, env, "--env-file", shipped, "config")
	serve := runAdmit(t, bin, dir, env, "--env-file", shipped, "serve")
	if cfg.code == 0 || serve.code == 0 || cfg.stderr != serve.stderr {
		t.Fatalf("admit config: exit %d, stderr %q; admit serve: exit %d, stderr %q; want the same refusal", cfg.code, cfg.stderr, serve.code, serve.stderr)
	}
	for _, name := range []string{"CLERK_SECRET_KEY", "CLERK_PUBLISHABLE_KEY", "ADMIT_PUBLIC_URL", "CLERK_ISSUER"} {
		if !strings.Contains(cfg.stderr, name) {
			t.Errorf("the refusal does not name %s:\n%s", name, cfg.stderr)
		}
	}
	if strings.Contains(cfg.stderr, "sk_live_replace_me") {
		t.Errorf("the refusal prints the secret key's value:\n%s", cfg.stderr)
	}
	// The operator's edit: real-looking values in place of the placeholders.
	text, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.NewReplacer("sk_live_replace_me", "sk_live_0123", "pk_live_replace_me", "pk_live_0123",
		"waitlist.example.com", "admit.example.org").Replace(string(text))
	mine := filepath.Join(dir, "admit.env")
	if err := os.WriteFile(mine, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if ok := runAdmit(t, bin, dir, env, "--env-file", mine, "config"); ok.code != 0 || !strings.Contains(ok.stdout, "identity: Clerk (https://clerk.admit.example.org)") {
		t.Fatalf("admit config with the placeholders replaced: exit %d\n%s%s", ok.code, ok.stdout, ok.stderr)
	}
}

// A misspelt ADMIT_ variable is named, with the variable it most likely
// meant, by admit config on stderr and by admit serve in its log.
func TestConfigCmd_WarnsOfAMisspeltVariableWithTheClosestName(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin, dir := MustBuildAdmit(t), t.TempDir()
	env := append(binaryEnv(dir), "ADMIT_NETWROK_HOURLY_LIMIT=5")
	res := runAdmit(t, bin, dir, env, "config")
	if res.code != 0 || !strings.Contains(res.stderr, "ADMIT_NETWROK_HOURLY_LIMIT is not a variable admit reads") ||
		!strings.Contains(res.stderr, "did you mean ADMIT_NETWORK_HOURLY_LIMIT?") {
		t.Fatalf("admit config: exit %d, stderr %q; want a warning naming both", res.code, res.stderr)
	}
	if ok := runAdmit(t, bin, dir, binaryEnv(dir), "config"); strings.Contains(ok.stderr, "warning") {
		t.Fatalf("admit config warned without a misspelt variable: %q", ok.stderr)
	}
	p := MustStartAdmit(t, bin, dir, env)
	if err := p.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("admit serve after SIGTERM: %v\n%s", err, p.stderr)
	}
	if log := p.stderr.String(); !strings.Contains(log, "name=ADMIT_NETWROK_HOURLY_LIMIT did_you_mean=ADMIT_NETWORK_HOURLY_LIMIT") {
		t.Fatalf("admit serve did not log the misspelt variable:\n%s", log)
	}
}
