// Package pgtest gives a test a PostgreSQL database of its own on the
// server named by ADMIT_TEST_DATABASE_URL (.ci/postgres starts one). Without
// that variable the PostgreSQL tests skip with a message saying how to run
// them, except under CI, where they fail: CI must run them.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// EnvURL names the variable holding the address of a PostgreSQL server the
// tests may create and drop databases on, e.g.
// postgres://postgres@127.0.0.1:5433/postgres?sslmode=disable.
const EnvURL = "ADMIT_TEST_DATABASE_URL"

// ServerURL returns the server's address from EnvURL, or an error saying
// how to provide one.
func ServerURL() (string, error) {
	u := strings.TrimSpace(os.Getenv(EnvURL))
	if u == "" {
		return "", fmt.Errorf("PostgreSQL tests need %s (start a server with `.ci/postgres start`)", EnvURL)
	}
	return u, nil
}

// Available reports whether a PostgreSQL server is configured; required
// reports whether its absence must fail the tests (under CI).
func Available() (ok, required bool) {
	_, err := ServerURL()
	return err == nil, os.Getenv("CI") != ""
}

// Require skips t when no PostgreSQL server is configured, or fails it
// under CI, and returns the server's address.
func Require(t testing.TB) string {
	t.Helper()
	u, err := ServerURL()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI runs the PostgreSQL tests: %v", err)
		}
		t.Skip(err.Error())
	}
	return u
}

// NewDatabase creates an empty database for t on the configured server
// and returns its address; the database is dropped when t ends. It skips
// or fails as Require does when no server is configured.
func NewDatabase(t testing.TB) string {
	t.Helper()
	server := Require(t)
	u, drop, err := Create(context.Background(), server)
	if err != nil {
		t.Fatalf("create a PostgreSQL database: %v", err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Errorf("drop the test's PostgreSQL database: %v", err)
		}
	})
	return u
}

// Create makes an empty database with a fresh name on the server at
// serverURL and returns its address and a function that drops it, ending
// the connections still open to it.
func Create(ctx context.Context, serverURL string) (dbURL string, drop func() error, err error) {
	admin, err := sql.Open("pgx", serverURL)
	if err != nil {
		return "", nil, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "admit_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+name+` TEMPLATE template0 ENCODING 'UTF8'`); err != nil {
		admin.Close()
		return "", nil, err
	}
	parsed, err := url.Parse(serverURL)
	if err != nil {
		admin.Close()
		return "", nil, errors.New("parse " + EnvURL + ": not a URL")
	}
	parsed.Path = "/" + name
	drop = func() error {
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := admin.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
		return err
	}
	return parsed.String(), drop, nil
}
