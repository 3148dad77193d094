package config

import (
	"net/url"
	"strings"
)

// databaseURL reads ADMIT_DATABASE_URL: "" for the SQLite file in the data
// directory, else a postgres:// or postgresql:// URL. Its problems never
// quote the value: it may hold a password.
func (r *reader) databaseURL() string {
	v := r.env("ADMIT_DATABASE_URL", "")
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil {
		r.bad("ADMIT_DATABASE_URL is not a URL: it must look like postgres://user:password@host:5432/admit?sslmode=verify-full (the value is not shown: it may hold a password)")
		return ""
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		scheme := u.Scheme
		if scheme == "" {
			scheme = "none"
		}
		r.bad("ADMIT_DATABASE_URL has the scheme %q: admit's only other engine is PostgreSQL, a postgres:// or postgresql:// URL; "+
			"unset ADMIT_DATABASE_URL to keep the SQLite file in ADMIT_DATA", scheme)
		return ""
	}
	return v
}

// PostgreSQL reports whether admit's database is PostgreSQL
// (ADMIT_DATABASE_URL set) rather than the SQLite file in the data directory.
func (c *Config) PostgreSQL() bool { return c.DatabaseURL != "" }

// DatabaseShown is ADMIT_DATABASE_URL as admit may print or log it: the
// password, in the user part or as a password parameter, replaced by
// "xxxxx". It is "" when the URL is unset.
func (c *Config) DatabaseShown() string { return RedactDatabaseURL(c.DatabaseURL) }

// RedactDatabaseURL is a PostgreSQL URL with its password, in the user part
// or as a password parameter, replaced by "xxxxx"; a value that does not
// parse shows as "(hidden)" whole.
func RedactDatabaseURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return hidden
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "password") {
			q.Set(k, "xxxxx")
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
}

// DatabaseLocation names the PostgreSQL database for the log: scheme, host
// and database only, no user, password or parameters (a user@host would
// read as an address to whoever scans logs for them). "" when unset.
func (c *Config) DatabaseLocation() string {
	if c.DatabaseURL == "" {
		return ""
	}
	u, err := url.Parse(c.DatabaseURL)
	if err != nil {
		return hidden
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
