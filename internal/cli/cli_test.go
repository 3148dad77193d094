package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"admit/internal/config"
)

func TestRun_HelpPrintsUsage(t *testing.T) {
	out := mustRunCmd(t, nil, "help")
	for _, want := range []string{"admit owner add", "admit migrate"} {
		if !strings.Contains(out, want) {
			t.Errorf("help output lacks %q:\n%s", want, out)
		}
	}
}

// TestOwnerCLI_RejectsBadArguments: each mistake is an error naming it; a
// mistake in the command line (not in the data) is a usageError, after
// which main prints the usage.
func TestOwnerCLI_RejectsBadArguments(t *testing.T) {
	env := map[string]string{"ADMIT_DATA": t.TempDir()}
	for _, tc := range []struct {
		name  string
		args  []string
		want  string
		usage bool
	}{
		{"no subcommand", []string{"owner"}, "add, remove or list", true},
		{"add without --user", []string{"owner", "add", "--workspace", "Acme"}, "--user", true},
		{"remove without --user", []string{"owner", "remove", "--workspace", "Acme"}, "--user", true},
		{"without --workspace", []string{"owner", "add", "--user", "user_1"}, "--workspace", true},
		{"unknown subcommand", []string{"owner", "promote", "--workspace", "Acme", "--user", "user_1"}, "unknown subcommand", true},
		{"unknown flag", []string{"owner", "add", "--workspace", "Acme", "--user", "user_1", "--role", "admin"}, "role", true},
		{"list of an unknown workspace", []string{"owner", "list", "--workspace", "Nope"}, "Nope", false},
		{"add with --user and --email", []string{"owner", "add", "--workspace", "Acme", "--user", "user_1", "--email", "a@example.com"}, "not both", true},
		{"remove with --email", []string{"owner", "remove", "--workspace", "Acme", "--user", "user_1", "--email", "a@example.com"}, "for add", true},
		{"--name without --email", []string{"owner", "add", "--workspace", "Acme", "--user", "user_1", "--name", "Ada"}, "--name goes with --email", true},
		{"add a malformed address", []string{"owner", "add", "--workspace", "Acme", "--email", "not-an-address"}, "address", false},
		{"unknown command", []string{"frobnicate"}, "unknown command", true},
		{"backup without verify", []string{"backup"}, "want verify", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCmd(t, env, tc.args...)
			if err == nil {
				t.Fatalf("admit %s succeeded, want an error", strings.Join(tc.args, " "))
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q lacks %q", err, tc.want)
			}
			if strings.HasSuffix(err.Error(), "\n") || strings.Contains(err.Error(), "usage:") {
				t.Fatalf("error %q carries the usage text; main prints it", err)
			}
			if got := errors.As(err, new(usageError)); got != tc.usage {
				t.Fatalf("usage error=%v, want %v (%v)", got, tc.usage, err)
			}
		})
	}
}

// fakeEnv is an environment over a fixed map, so tests never read the real
// environment.
func fakeEnv(m map[string]string) config.Environment {
	return func(k string) string { return m[k] }
}

// mustLoadConfig is config.Load over env, failing the test on an error.
func mustLoadConfig(tb testing.TB, env map[string]string) *config.Config {
	tb.Helper()
	cfg, err := config.Load(fakeEnv(env))
	if err != nil {
		tb.Fatalf("config.Load: %v", err)
	}
	return cfg
}

// runCmd runs one admit command in-process with env and returns its
// stdout.
func runCmd(tb testing.TB, env map[string]string, args ...string) (string, error) {
	tb.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := Run(ctx, args, fakeEnv(env), &stdout, &stderr)
	return stdout.String(), err
}

// mustRunCmd is runCmd that fails the test on an error.
func mustRunCmd(tb testing.TB, env map[string]string, args ...string) string {
	tb.Helper()
	out, err := runCmd(tb, env, args...)
	if err != nil {
		tb.Fatalf("admit %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// TestOwnerCLI_AddByEmailWaitsForTheAddress: `owner add --email` creates
// the workspace and a place that waits for that address; adding the same
// address again while it waits is refused, and the address is printed
// nowhere.
func TestOwnerCLI_AddByEmailWaitsForTheAddress(t *testing.T) {
	env := map[string]string{"ADMIT_DATA": t.TempDir()}
	out := mustRunCmd(t, env, "owner", "add", "--workspace", "Acme", "--email", "first@example.com", "--name", "Ada")
	if !strings.Contains(out, `becomes an owner of "Acme"`) || strings.Contains(out, "first@example.com") {
		t.Fatalf("output %q", out)
	}
	_, err := runCmd(t, env, "owner", "add", "--workspace", "Acme", "--email", "first@example.com")
	if err == nil || !strings.Contains(err.Error(), "already") {
		t.Fatalf("second add of the same address: %v, want a refusal", err)
	}
}
