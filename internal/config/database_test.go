package config

import (
	"strings"
	"testing"
)

func TestLoadConfig_DatabaseURLSelectsPostgreSQL(t *testing.T) {
	for _, tc := range []struct {
		url, shown string
	}{
		{"postgres://admit:pa55word@db.internal:5432/admit?sslmode=verify-full", "postgres://admit:xxxxx@db.internal:5432/admit?sslmode=verify-full"},
		{"postgresql://db.internal/admit", "postgresql://db.internal/admit"},
		{"postgres://admit@db.internal/admit?password=pa55word&sslmode=require", "postgres://admit@db.internal/admit?password=xxxxx&sslmode=require"},
		{"postgres:///admit?host=/run/postgresql", "postgres:///admit?host=/run/postgresql"},
	} {
		cfg := mustLoad(t, map[string]string{"ADMIT_DATABASE_URL": tc.url})
		if !cfg.PostgreSQL() || cfg.DatabaseURL != tc.url {
			t.Errorf("ADMIT_DATABASE_URL=%s: PostgreSQL()=%t DatabaseURL=%q", tc.url, cfg.PostgreSQL(), cfg.DatabaseURL)
		}
		if got := cfg.DatabaseLocation(); strings.ContainsAny(got, "@?") || !strings.HasPrefix(got, "postgres") {
			t.Errorf("DatabaseLocation()=%q, want no user, password or parameters", got)
		}
		if got := cfg.DatabaseShown(); got != tc.shown {
			t.Errorf("DatabaseShown()=%q, want %q", got, tc.shown)
		}
		for _, s := range cfg.Settings() {
			if strings.Contains(s.Name+s.Value, "pa55word") {
				t.Errorf("Settings shows the password: %+v", s)
			}
			if s.Name == "ADMIT_DATABASE_URL" && (s.Value != tc.shown || s.Source != "environment") {
				t.Errorf("Settings shows %+v, want %q from the environment", s, tc.shown)
			}
		}
	}
	if cfg := mustLoad(t, nil); cfg.PostgreSQL() || cfg.DatabaseShown() != "" {
		t.Errorf("unset: PostgreSQL()=%t DatabaseShown()=%q, want SQLite", cfg.PostgreSQL(), cfg.DatabaseShown())
	}
}

func TestLoadConfig_DatabaseURLOtherThanPostgresIsRefusedWithoutShowingIt(t *testing.T) {
	for _, v := range []string{
		"mysql://admit:pa55word@db/admit",
		"sqlite:///var/lib/admit/admit.db",
		"host=db user=admit password=pa55word",
		"/var/lib/admit/admit.db",
		"postgres://admit:pa55word@db:badport/admit",
	} {
		_, err := Load(fakeEnv(map[string]string{"ADMIT_DATABASE_URL": v}))
		if err == nil {
			t.Errorf("ADMIT_DATABASE_URL=%q accepted, want it refused", v)
			continue
		}
		if !strings.Contains(err.Error(), "ADMIT_DATABASE_URL") || !strings.Contains(err.Error(), "postgres://") {
			t.Errorf("ADMIT_DATABASE_URL=%q: error %q names neither the variable nor what it takes", v, err)
		}
		if strings.Contains(err.Error(), "pa55word") {
			t.Errorf("ADMIT_DATABASE_URL=%q: the error shows the password: %q", v, err)
		}
	}
}
