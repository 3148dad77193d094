package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// configTable reads the rows of the configuration table of the document
// at path (from the module root).
func configTable(tb testing.TB, path string) []Var {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		tb.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n| variable | default | meaning |\n|---|---|---|\n")
	if !ok {
		tb.Fatalf("%s has no configuration table", path)
	}
	var rows []Var
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") {
			break
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |"), " | ")
		if len(cells) != 3 {
			tb.Fatalf("%s configuration row has %d cells, want 3: %s", path, len(cells), line)
		}
		rows = append(rows, Var{Name: strings.Trim(cells[0], "`"), Default: cells[1], Meaning: cells[2]})
	}
	return rows
}

// TestVars_MatchTheREADMETable holds README.md's table, one line a
// variable, to Vars' summaries, and docs/DEPLOY.md's configuration
// reference to their meanings in full.
func TestVars_MatchTheREADMETable(t *testing.T) {
	for _, doc := range []struct {
		path string
		text func(Var) string
	}{
		{"README.md", func(v Var) string { return v.Summary }},
		{"docs/DEPLOY.md", func(v Var) string { return v.Meaning }},
	} {
		rows := configTable(t, doc.path)
		for i := range max(len(rows), len(Vars)) {
			switch {
			case i >= len(rows):
				t.Errorf("%s has no row for %s", doc.path, Vars[i].Name)
			case i >= len(Vars):
				t.Errorf("%s's row %s is not in config.Vars", doc.path, rows[i].Name)
			case rows[i].Name != Vars[i].Name:
				t.Errorf("%s row %d: %s, config.Vars %s", doc.path, i+1, rows[i].Name, Vars[i].Name)
			case rows[i].Default != Vars[i].Default:
				t.Errorf("%s: %s's default %q, config.Vars %q", rows[i].Name, doc.path, rows[i].Default, Vars[i].Default)
			case rows[i].Meaning != doc.text(Vars[i]):
				t.Errorf("%s: %s's text\n\t%q\nconfig.Vars\n\t%q", rows[i].Name, doc.path, rows[i].Meaning, doc.text(Vars[i]))
			}
		}
	}
	for _, v := range Vars {
		if v.Summary == "" || len(v.Summary) > 64 || strings.ContainsAny(v.Summary, ";(") {
			t.Errorf("%s: the summary %q is not a few words (at most 64 bytes, no clauses)", v.Name, v.Summary)
		}
	}
}

// TestVars_ListEveryVariableLoadReads records what Load asks the
// environment for, in each identity mode, and holds it to Vars both ways.
func TestVars_ListEveryVariableLoadReads(t *testing.T) {
	read := map[string]bool{}
	allKeys := map[string]string{}
	for _, n := range SecretNames {
		allKeys[secretVar(n)] = strings.Repeat("ab", 32)
	}
	metrics := map[string]string{"ADMIT_METRICS_ADDR": "127.0.0.1:9090"}
	for _, env := range []map[string]string{nil, clerkEnv(nil), oidcEnv(nil), allKeys, metrics} {
		_, _ = Load(func(k string) string {
			read[k] = true
			return env[k]
		})
	}
	var listed []string
	for _, v := range Vars {
		listed = append(listed, v.Names()...)
	}
	for k := range read {
		if !slices.Contains(listed, k) {
			t.Errorf("Load reads %s, which config.Vars (and README.md) does not list", k)
		}
	}
	for _, k := range listed {
		if !read[k] {
			t.Errorf("config.Vars lists %s, which Load never reads", k)
		}
	}
}

func TestSettings_ShowEveryVariableAndNoSecret(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "client-secret")
	if err := os.WriteFile(secretFile, []byte("oidc-secret-from-the-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"Clerk", clerkEnv(map[string]string{"CLERK_SECRET_KEY": "sk_live_clerk-secret"})},
		{"OpenID Connect", oidcEnv(map[string]string{"ADMIT_OIDC_CLIENT_SECRET": "oidc-secret-in-the-environment"})},
		{"OpenID Connect, secret from a file", oidcEnv(map[string]string{"ADMIT_OIDC_CLIENT_SECRET": "", "ADMIT_OIDC_CLIENT_SECRET_FILE": secretFile})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{
				"AWS_ACCESS_KEY_ID": "aws-key-id", "AWS_SECRET_ACCESS_KEY": "aws-secret",
				"LITESTREAM_ACCESS_KEY_ID": "ls-key-id", "LITESTREAM_SECRET_ACCESS_KEY": "ls-secret",
			}
			for i, n := range append(slices.Clone(SecretNames), PreviousSecretNames...) {
				env[secretVar(n)] = strings.Repeat(string("0123456789abcdef"[i]), 64)
			}
			for k, v := range tc.env {
				env[k] = v
			}
			cfg := mustLoad(t, env)
			settings := cfg.Settings()
			shown := map[string]Setting{}
			for _, s := range settings {
				shown[s.Name] = s
			}
			for _, v := range Vars {
				for _, n := range v.Names() {
					if _, ok := shown[n]; !ok {
						t.Errorf("Settings has no %s", n)
					}
				}
			}
			for k, v := range env {
				if v == "" || !isSecret(varOf(k), k) {
					continue
				}
				// LITESTREAM_* are not read while AWS_* are set.
				if got := shown[k]; (got.Value != hidden || got.Source != "environment") && !strings.HasPrefix(k, "LITESTREAM_") {
					t.Errorf("%s shows as %+v, want %q from the environment", k, got, hidden)
				}
			}
			var all strings.Builder
			for _, s := range settings {
				all.WriteString(s.Name + "=" + s.Value + " " + s.Source + "\n")
			}
			for k, v := range env {
				if v != "" && isSecret(varOf(k), k) && strings.Contains(all.String(), v) {
					t.Errorf("the value of %s is shown:\n%s", k, all.String())
				}
			}
			if cfg.OIDC.ClientSecret != "" && strings.Contains(all.String(), cfg.OIDC.ClientSecret) {
				t.Errorf("the OpenID Connect client secret is shown:\n%s", all.String())
			}
		})
	}
}

// varOf is the Var that lists name.
func varOf(name string) Var {
	for _, v := range Vars {
		if slices.Contains(v.Names(), name) {
			return v
		}
	}
	return Var{}
}
