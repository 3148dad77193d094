package systemtest

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"admit/internal/pgtest"

	"github.com/google/uuid"
)

// readyzReason polls /readyz until its answer has the status want, and
// returns the reason it gives; it fails after 30 seconds.
func readyzReason(t *testing.T, c *http.Client, base string, want int) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := get(t, c, base+"/readyz")
		if code == want {
			var r struct {
				Reason string `json:"reason"`
			}
			_ = json.Unmarshal([]byte(body), &r)
			return r.Reason
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz answers %d %s, want %d within 30s", code, body, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// On PostgreSQL /readyz follows the database: not ready while it takes no
// connection, nor while it takes only reads (a standby, or a primary
// demoted under admit), ready again once it takes writes; no backup check
// is part of it.
func TestReadyz_OnPostgreSQLFollowsTheDatabase(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	admin, err := sql.Open("pgx", pgtest.Require(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := admin.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Ends every connection admit has, so that it reconnects.
	dropConnections := func() {
		t.Helper()
		if _, err := admin.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, name); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		admin.Exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS true`)
		admin.Exec(`ALTER DATABASE "` + name + `" RESET default_transaction_read_only`)
	})

	srv := MustRunServe(t, map[string]string{"ADMIT_ADDR": "127.0.0.1:0", "ADMIT_DATA": t.TempDir(),
		"ADMIT_DATABASE_URL": dbURL, "ADMIT_NETWORK_HOURLY_LIMIT": "1000"})
	c := &http.Client{Timeout: 10 * time.Second}
	readyzReason(t, c, srv.URL, http.StatusOK)
	version := demoNoticeVersion(t, c, srv.URL)

	// The database takes no connection.
	exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS false`)
	dropConnections()
	if got := readyzReason(t, c, srv.URL, http.StatusServiceUnavailable); got != "database" {
		t.Errorf("/readyz reason %q while the database takes no connection, want database", got)
	}
	exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS true`)
	readyzReason(t, c, srv.URL, http.StatusOK)

	// The database takes only reads: a signup fails, and /readyz says
	// writes are failing until a write succeeds again.
	exec(`ALTER DATABASE "` + name + `" SET default_transaction_read_only = on`)
	dropConnections()
	if code, _, err := trySignup(c, srv.URL, uuid.NewString(), "read.only@example.test", version); err != nil || code != http.StatusServiceUnavailable {
		t.Fatalf("a signup while the database takes only reads: %d %v, want 503", code, err)
	}
	if got := readyzReason(t, c, srv.URL, http.StatusServiceUnavailable); got != "database writes are failing" {
		t.Errorf("/readyz reason %q while writes fail, want database writes are failing", got)
	}
	exec(`ALTER DATABASE "` + name + `" RESET default_transaction_read_only`)
	dropConnections()
	readyzReason(t, c, srv.URL, http.StatusOK)
	if code, r, err := trySignup(c, srv.URL, uuid.NewString(), "writable.again@example.test", version); err != nil || code != http.StatusAccepted || r.RemovalToken == "" {
		t.Fatalf("a signup once the database takes writes again: %d %v", code, err)
	}
	if strings.Contains(srv.Stderr.String(), "backup") && strings.Contains(srv.Stderr.String(), "replica") {
		t.Errorf("serve on PostgreSQL logs a backup replica:\n%s", srv.Stderr)
	}
}
