package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// oidcEnv is a complete OpenID Connect environment; tests override entries
// (an empty value unsets one).
func oidcEnv(over map[string]string) map[string]string {
	m := map[string]string{
		"ADMIT_ADDR":               "127.0.0.1:8080",
		"ADMIT_PUBLIC_URL":         "https://admit.example.com",
		"ADMIT_OIDC_ISSUER":        "https://id.example.com/realms/admit",
		"ADMIT_OIDC_CLIENT_ID":     "admit",
		"ADMIT_OIDC_CLIENT_SECRET": "s3cret",
	}
	for k, v := range over {
		m[k] = v
	}
	return m
}

func TestLoadConfig_OIDCMode(t *testing.T) {
	cfg, err := Load(fakeEnv(oidcEnv(nil)))
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if !cfg.OIDCMode() || cfg.DevMode() {
		t.Fatalf("OIDCMode=%v DevMode=%v, want OIDC mode", cfg.OIDCMode(), cfg.DevMode())
	}
	if got, want := cfg.OIDC.Scopes, []string{"openid", "email"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("scopes=%q, want %q", got, want)
	}
	if cfg.OIDC.ClientSecret != "s3cret" || cfg.OIDC.TrustEmail {
		t.Fatalf("secret or trust wrong: trust=%v", cfg.OIDC.TrustEmail)
	}
}

func TestLoadConfig_OIDCClientSecretFromAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(fakeEnv(oidcEnv(map[string]string{"ADMIT_OIDC_CLIENT_SECRET": "", "ADMIT_OIDC_CLIENT_SECRET_FILE": path,
		"ADMIT_OIDC_SCOPES": "openid email offline_access", "ADMIT_OIDC_TRUST_EMAIL": "1"})))
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if cfg.OIDC.ClientSecret != "from-file" || !cfg.OIDC.TrustEmail || len(cfg.OIDC.Scopes) != 3 {
		t.Fatalf("secret from file, scopes or trust wrong: %d scopes, trust=%v", len(cfg.OIDC.Scopes), cfg.OIDC.TrustEmail)
	}
}

func TestLoadConfig_OIDCRefusesBadSettingsNamingTheVariable(t *testing.T) {
	for _, tc := range []struct {
		name string
		over map[string]string
		want string
	}{
		{"with Clerk", map[string]string{"CLERK_SECRET_KEY": "sk_test_x"}, "CLERK_SECRET_KEY and ADMIT_OIDC_ISSUER are both set"},
		{"http issuer off loopback", map[string]string{"ADMIT_OIDC_ISSUER": "http://id.example.com"}, "ADMIT_OIDC_ISSUER"},
		{"relative issuer", map[string]string{"ADMIT_OIDC_ISSUER": "id.example.com"}, "ADMIT_OIDC_ISSUER"},
		{"no client ID", map[string]string{"ADMIT_OIDC_CLIENT_ID": ""}, "ADMIT_OIDC_CLIENT_ID"},
		{"no secret", map[string]string{"ADMIT_OIDC_CLIENT_SECRET": ""}, "ADMIT_OIDC_CLIENT_SECRET"},
		{"secret and file", map[string]string{"ADMIT_OIDC_CLIENT_SECRET_FILE": "/nonexistent"}, "both set"},
		{"unreadable file", map[string]string{"ADMIT_OIDC_CLIENT_SECRET": "", "ADMIT_OIDC_CLIENT_SECRET_FILE": "/nonexistent/secret"},
			"ADMIT_OIDC_CLIENT_SECRET_FILE"},
		{"scopes without openid", map[string]string{"ADMIT_OIDC_SCOPES": "email"}, "ADMIT_OIDC_SCOPES"},
		{"trust not 0 or 1", map[string]string{"ADMIT_OIDC_TRUST_EMAIL": "yes"}, "ADMIT_OIDC_TRUST_EMAIL"},
		{"client without issuer", map[string]string{"ADMIT_OIDC_ISSUER": ""}, "ADMIT_OIDC_ISSUER is not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := oidcEnv(tc.over)
			if tc.name == "client without issuer" {
				env["ADMIT_PUBLIC_URL"] = ""
			}
			_, err := Load(fakeEnv(env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err=%v, want one containing %q", err, tc.want)
			}
		})
	}
	// An http:// issuer is accepted on a loopback host (tests, development).
	if _, err := Load(fakeEnv(oidcEnv(map[string]string{"ADMIT_OIDC_ISSUER": "http://127.0.0.1:9000"}))); err != nil {
		t.Fatalf("loopback http issuer: %v", err)
	}
}
