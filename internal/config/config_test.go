package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"admit/store"
)

// fakeEnv is a getenv over a fixed map, so tests never read the real
// environment.
func fakeEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// clerkEnv is a complete Clerk-mode environment; tests override entries.
func clerkEnv(over map[string]string) map[string]string {
	m := map[string]string{
		"CLERK_SECRET_KEY":      "sk_test_x",
		"CLERK_PUBLISHABLE_KEY": "pk_test_x",
		"CLERK_ISSUER":          "https://clerk.example.com",
	}
	for k, v := range over {
		m[k] = v
	}
	return m
}

func TestLoadConfig_Defaults(t *testing.T) {
	cfg, err := Load(fakeEnv(nil))
	if err != nil {
		t.Fatalf("LoadConfig with an empty environment: %v", err)
	}
	if got, want := cfg.Addr, "127.0.0.1:8080"; got != want {
		t.Errorf("Addr=%q, want %q", got, want)
	}
	if got, want := cfg.DataDir, "./data"; got != want {
		t.Errorf("DataDir=%q, want %q", got, want)
	}
	if got, want := cfg.DBPath(), filepath.Join("data", "admit.db"); got != want {
		t.Errorf("DBPath=%q, want %q", got, want)
	}
	if cfg.PublicURL == nil {
		t.Fatal("PublicURL is nil")
	}
	if got, want := cfg.PublicURL.String(), "http://127.0.0.1:8080"; got != want {
		t.Errorf("PublicURL=%q, want %q", got, want)
	}
	if got, want := cfg.NetworkHourlyLimit, 20; got != want {
		t.Errorf("NetworkHourlyLimit=%d, want %d", got, want)
	}
	if got, want := cfg.WriteQueue, store.DefaultSignupQueue; got != want {
		t.Errorf("WriteQueue=%d, want %d", got, want)
	}
	if got, want := cfg.Clerk.AuthorizedParties, []string{"http://127.0.0.1:8080"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ClerkAuthorizedParties=%q, want %q", got, want)
	}
	if !cfg.DevMode() {
		t.Error("DevMode()=false without CLERK_SECRET_KEY, want true")
	}
	if got, want := cfg.DevOwnerEmail, "owner@example.test"; got != want {
		t.Errorf("DevOwnerEmail=%q, want %q", got, want)
	}
}

func TestLoadConfig_ValuesFromTheEnvironment(t *testing.T) {
	cfg, err := Load(fakeEnv(clerkEnv(map[string]string{
		"ADMIT_ADDR":                 "0.0.0.0:9000",
		"ADMIT_DATA":                 "/srv/admit",
		"ADMIT_PUBLIC_URL":           "https://admit.example.com/",
		"ADMIT_NETWORK_HOURLY_LIMIT": "7",
		"CLERK_API_URL":              "https://api.clerk.example/v1/",
		"CLERK_AUTHORIZED_PARTIES":   "https://a.example, https://b.example,",
		"ADMIT_CLIENT_IP_HEADER":     "X-Real-IP",
		"ADMIT_WRITE_QUEUE":          "900",
	})))
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if cfg.DevMode() {
		t.Error("DevMode()=true with CLERK_SECRET_KEY set")
	}
	if got, want := cfg.PublicURL.String(), "https://admit.example.com"; got != want {
		t.Errorf("PublicURL=%q, want %q (the trailing slash dropped)", got, want)
	}
	if got, want := cfg.NetworkHourlyLimit, 7; got != want {
		t.Errorf("NetworkHourlyLimit=%d, want %d", got, want)
	}
	if got, want := cfg.Clerk.APIURL, "https://api.clerk.example/v1"; got != want {
		t.Errorf("ClerkAPIURL=%q, want %q", got, want)
	}
	if got, want := cfg.Clerk.AuthorizedParties, []string{"https://a.example", "https://b.example"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ClerkAuthorizedParties=%q, want %q", got, want)
	}
	if got, want := cfg.ClientIPHeader, "X-Real-IP"; got != want {
		t.Errorf("ClientIPHeader=%q, want %q", got, want)
	}
	if got, want := cfg.WriteQueue, 900; got != want {
		t.Errorf("WriteQueue=%d, want %d", got, want)
	}
}

func TestLoadConfig_DevIdentityOnlyOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		wantErr bool
	}{
		{"127.0.0.1:8080", false},
		{"127.0.0.1:0", false},
		{"localhost:8080", false},
		{"[::1]:8080", false},
		{"0.0.0.0:8080", true},
		{":8080", true},
		{":0", true},
		{"[::]:8080", true},
		{"192.0.2.1:80", true},
		{"example.com:80", true},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			_, err := Load(fakeEnv(map[string]string{"ADMIT_ADDR": tc.addr}))
			if got := err != nil; got != tc.wantErr {
				t.Fatalf("ADMIT_ADDR=%q: err=%v, want error %v", tc.addr, err, tc.wantErr)
			}
			if tc.wantErr && !strings.Contains(err.Error(), "ADMIT_ADDR") {
				t.Fatalf("error %q does not name ADMIT_ADDR", err)
			}
		})
	}
}

func TestLoadConfig_ClerkModeRequiresPublishableKeyAndIssuer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr []string // substrings; nil means no error
	}{
		{"complete", clerkEnv(nil), nil},
		{"all interfaces allowed", clerkEnv(map[string]string{"ADMIT_ADDR": "0.0.0.0:8080"}), nil},
		{"unspecified host allowed", clerkEnv(map[string]string{"ADMIT_ADDR": ":8080"}), nil},
		{"no publishable key", clerkEnv(map[string]string{"CLERK_PUBLISHABLE_KEY": ""}), []string{"CLERK_PUBLISHABLE_KEY"}},
		{"no issuer", clerkEnv(map[string]string{"CLERK_ISSUER": ""}), []string{"CLERK_ISSUER"}},
		{"neither", clerkEnv(map[string]string{"CLERK_PUBLISHABLE_KEY": "", "CLERK_ISSUER": ""}),
			[]string{"CLERK_PUBLISHABLE_KEY", "CLERK_ISSUER"}},
		{"http issuer", clerkEnv(map[string]string{"CLERK_ISSUER": "http://clerk.example.com"}), []string{"CLERK_ISSUER"}},
		{"dev mode with a stray issuer", map[string]string{"CLERK_ISSUER": "https://clerk.example.com"}, []string{"CLERK_SECRET_KEY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(fakeEnv(tc.env))
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("LoadConfig: %v", err)
				}
				if cfg.DevMode() {
					t.Fatal("DevMode()=true with CLERK_SECRET_KEY set")
				}
				return
			}
			if err == nil {
				t.Fatal("LoadConfig succeeded, want an error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		})
	}
}

func TestLoadConfig_RejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantVar string
	}{
		{"public URL with a path", map[string]string{"ADMIT_PUBLIC_URL": "https://admit.example.com/app"}, "ADMIT_PUBLIC_URL"},
		{"public URL with a query", map[string]string{"ADMIT_PUBLIC_URL": "https://admit.example.com/?a=1"}, "ADMIT_PUBLIC_URL"},
		{"public URL with a fragment", map[string]string{"ADMIT_PUBLIC_URL": "https://admit.example.com#x"}, "ADMIT_PUBLIC_URL"},
		{"public URL with user info", map[string]string{"ADMIT_PUBLIC_URL": "https://u:p@admit.example.com"}, "ADMIT_PUBLIC_URL"},
		{"public URL ftp", map[string]string{"ADMIT_PUBLIC_URL": "ftp://admit.example.com"}, "ADMIT_PUBLIC_URL"},
		{"public URL without a host", map[string]string{"ADMIT_PUBLIC_URL": "https://"}, "ADMIT_PUBLIC_URL"},
		{"limit 0", map[string]string{"ADMIT_NETWORK_HOURLY_LIMIT": "0"}, "ADMIT_NETWORK_HOURLY_LIMIT"},
		{"limit -1", map[string]string{"ADMIT_NETWORK_HOURLY_LIMIT": "-1"}, "ADMIT_NETWORK_HOURLY_LIMIT"},
		{"limit abc", map[string]string{"ADMIT_NETWORK_HOURLY_LIMIT": "abc"}, "ADMIT_NETWORK_HOURLY_LIMIT"},
		{"write queue 0", map[string]string{"ADMIT_WRITE_QUEUE": "0"}, "ADMIT_WRITE_QUEUE"},
		{"write queue too deep", map[string]string{"ADMIT_WRITE_QUEUE": "100001"}, "ADMIT_WRITE_QUEUE"},
		{"write queue abc", map[string]string{"ADMIT_WRITE_QUEUE": "abc"}, "ADMIT_WRITE_QUEUE"},
		{"addr without port", map[string]string{"ADMIT_ADDR": "127.0.0.1"}, "ADMIT_ADDR"},
		{"addr with a bad port", map[string]string{"ADMIT_ADDR": "127.0.0.1:99999"}, "ADMIT_ADDR"},
		{"client IP header with a colon", map[string]string{"ADMIT_CLIENT_IP_HEADER": "X-Real-IP: 1"}, "ADMIT_CLIENT_IP_HEADER"},
		{"Clerk API URL v2", clerkEnv(map[string]string{"CLERK_API_URL": "https://api.clerk.com/v2"}), "CLERK_API_URL"},
		{"Clerk API URL without a version", clerkEnv(map[string]string{"CLERK_API_URL": "https://api.clerk.com"}), "CLERK_API_URL"},
		{"Clerk API URL without a host", clerkEnv(map[string]string{"CLERK_API_URL": "/v1"}), "CLERK_API_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(fakeEnv(tc.env))
			if err == nil {
				t.Fatalf("Load(%v) succeeded, want an error naming %s", tc.env, tc.wantVar)
			}
			if !strings.Contains(err.Error(), tc.wantVar) {
				t.Fatalf("error %q does not name %s", err, tc.wantVar)
			}
		})
	}
}

func TestLoadConfig_ReportsEveryProblemAtOnce(t *testing.T) {
	_, err := Load(fakeEnv(map[string]string{
		"ADMIT_ADDR":                 "0.0.0.0:8080",
		"ADMIT_PUBLIC_URL":           "ftp://admit.example.com",
		"ADMIT_NETWORK_HOURLY_LIMIT": "abc",
	}))
	if err == nil {
		t.Fatal("LoadConfig succeeded, want errors")
	}
	for _, want := range []string{"ADMIT_ADDR", "ADMIT_PUBLIC_URL", "ADMIT_NETWORK_HOURLY_LIMIT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if got, want := len(strings.Split(err.Error(), "\n")), 3; got != want {
		t.Errorf("error has %d lines, want %d (one per problem): %q", got, want, err)
	}
}

func TestConfigPath_EnvironmentOverridesTheWorkingDirectoryFile(t *testing.T) {
	if got, want := mustLoad(t, nil).Backup.ConfigFile, "litestream.yml"; got != want {
		t.Errorf("ConfigPath()=%q, want %q", got, want)
	}
	if got, want := mustLoad(t, map[string]string{"ADMIT_LITESTREAM_CONFIG": "/etc/admit/litestream.yml"}).Backup.ConfigFile, "/etc/admit/litestream.yml"; got != want {
		t.Errorf("ConfigPath()=%q, want %q", got, want)
	}
}

// mustLoad is Load over env, failing the test on an error.
func mustLoad(tb testing.TB, env map[string]string) *Config {
	tb.Helper()
	c, err := Load(fakeEnv(env))
	if err != nil {
		tb.Fatalf("Load: %v", err)
	}
	return c
}
