// Package config is admit's configuration: every environment variable
// admit reads (Vars, the list README.md's configuration table shows), read
// in one place (Load) into one typed Config and checked at start. Nothing
// else in admit reads the environment; the rest takes typed values from
// Config.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"admit/backup"
	"admit/store"
)

// Config is admit's configuration, read from the environment (README.md#configuration).
type Config struct {
	Addr    string
	DataDir string
	// DatabaseURL is ADMIT_DATABASE_URL: a postgres:// URL selects
	// PostgreSQL; "" keeps the SQLite file in DataDir. It may hold a
	// password: show it only as DatabaseShown.
	DatabaseURL string
	PublicURL   *url.URL
	// PublicURLDerived reports that ADMIT_PUBLIC_URL was not set and the
	// public URL comes from the listen address.
	PublicURLDerived bool
	// Clerk configures Clerk mode (CLERK_*); Clerk.SecretKey set means
	// that mode.
	Clerk Clerk
	// OIDC configures OpenID Connect mode (ADMIT_OIDC_*); OIDC.Issuer set
	// means that mode.
	OIDC               OIDC
	ClientIPHeader     string
	NetworkHourlyLimit int
	DevOwnerEmail      string
	// Retention is the erasure policy by entry state (ADMIT_RETENTION_*_DAYS).
	Retention store.Retention
	// PprofAddr, when set (ADMIT_PPROF_ADDR), is a loopback host:port where
	// a separate listener serves net/http/pprof for profiling. Off by default.
	PprofAddr string
	// RequestIDHeader names the trusted proxy header carrying a request ID
	// (ADMIT_REQUEST_ID_HEADER, e.g. X-Request-ID); empty: admit makes them.
	RequestIDHeader string
	// MetricsAddr, when set (ADMIT_METRICS_ADDR), is a loopback or private
	// host:port where a separate listener serves Prometheus metrics.
	MetricsAddr string
	// WriteQueue bounds the signups that may wait for the database writer
	// (ADMIT_WRITE_QUEUE); past it a signup is answered 503 at once.
	WriteQueue int

	// Log is how the server logs (ADMIT_LOG_FORMAT, ADMIT_LOG_LEVEL).
	Log Log
	// GC says which garbage collector settings the operator chose (GOGC,
	// GOMEMLIMIT); admit tunes only the others.
	GC GC
	// Backup is what replication, restore and the drill take from the
	// environment (ADMIT_LITESTREAM_CONFIG, ADMIT_BACKUP_*, the S3 keys).
	Backup Backup
	// Secrets is where the server keys come from (ADMIT_SECRET_*,
	// CREDENTIALS_DIRECTORY); the secrets file otherwise.
	Secrets Secrets

	partiesDerived bool
	// set holds the trimmed value of every variable Load read that is
	// set, for Settings.
	set map[string]string
}

// Clerk is Clerk mode's configuration.
type Clerk struct {
	SecretKey         string
	PublishableKey    string
	APIURL            string
	Issuer            string
	AuthorizedParties []string
}

// OIDC is OpenID Connect mode's configuration.
type OIDC struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	Scopes       []string
	TrustEmail   bool
	ProviderName string
}

// Log is the logger's configuration.
type Log struct {
	// JSON is true for ADMIT_LOG_FORMAT=json (one object a line); false is
	// text (key=value lines).
	JSON bool
	// Level is ADMIT_LOG_LEVEL.
	Level slog.Level
}

// GC says whether the operator chose the garbage collector's settings
// themselves; the Go runtime has applied them at start.
type GC struct {
	GOGCSet       bool
	GOMEMLIMITSet bool
}

// Backup is the backup configuration that comes from the environment;
// litestream.yml itself is read by package backup.
type Backup struct {
	// ConfigFile is litestream.yml's path (ADMIT_LITESTREAM_CONFIG).
	ConfigFile string
	// MaxLag is ADMIT_BACKUP_MAX_LAG; zero means backup.DefaultMaxLag.
	MaxLag time.Duration
	// DrillInterval is ADMIT_BACKUP_DRILL_INTERVAL; zero means off.
	DrillInterval time.Duration
	// Credentials are the S3 replica's access keys (AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY, or LITESTREAM_ACCESS_KEY_ID and
	// LITESTREAM_SECRET_ACCESS_KEY); empty means the AWS SDK's default chain.
	Credentials backup.Credentials
	// CredentialSource names the variable that points the AWS SDK's
	// default chain at credentials (AWS_PROFILE, a web identity, a
	// container's credentials, or AWS_EC2_METADATA_DISABLED=false for an
	// instance role) when Credentials is empty; "" when none does.
	CredentialSource string
	// Expand gives $VAR and ${VAR} in litestream.yml their values, as the
	// official Litestream CLI does: the file may name any variable.
	Expand func(string) string
}

// Secrets is where the server keys come from.
type Secrets struct {
	// Env holds the keys set as ADMIT_SECRET_<NAME>, by name (SecretNames
	// and PreviousSecretNames); empty when none is set, and then the keys
	// come from the secrets file.
	Env map[string][]byte
	// CredentialsDir is $CREDENTIALS_DIRECTORY: a systemd credential named
	// "secrets" there replaces the data directory's file.
	CredentialsDir string
}

// UseListener fixes the public URL once the listener has its port: with
// ADMIT_ADDR=host:0 and no ADMIT_PUBLIC_URL, the allowed Origin (and the
// default authorized party) must name the port actually bound.
func (c *Config) UseListener(addr net.Addr) {
	if !c.PublicURLDerived || c.PublicURL == nil {
		return
	}
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return
	}
	u := *c.PublicURL
	u.Host = net.JoinHostPort(u.Hostname(), port)
	c.PublicURL = &u
	if c.partiesDerived {
		c.Clerk.AuthorizedParties = []string{u.String()}
	}
}

// DevMode reports whether admit runs with the development identity:
// neither Clerk nor OpenID Connect is configured.
func (c *Config) DevMode() bool { return c.Clerk.SecretKey == "" && c.OIDC.Issuer == "" }

// OIDCMode reports whether admit signs in through an OpenID Connect provider.
func (c *Config) OIDCMode() bool { return c.OIDC.Issuer != "" }

// DBPath is the SQLite file in the data directory (unused on PostgreSQL).
func (c *Config) DBPath() string { return filepath.Join(c.DataDir, "admit.db") }

// Environment gives an environment variable's value, "" when unset:
// os.Getenv in the binary, a fixed map in tests. Only Load reads it.
type Environment func(name string) string

// Load reads and validates the configuration from env. Every problem is
// reported at once, each with the variable that causes it.
func Load(env Environment) (*Config, error) {
	r := &reader{getenv: env, set: map[string]string{}}
	c := &Config{
		Addr:    r.env("ADMIT_ADDR", "127.0.0.1:8080"),
		DataDir: r.env("ADMIT_DATA", "./data"),
		Clerk: Clerk{
			SecretKey:      r.env("CLERK_SECRET_KEY", ""),
			PublishableKey: r.env("CLERK_PUBLISHABLE_KEY", ""),
			APIURL:         r.env("CLERK_API_URL", "https://api.clerk.com/v1"),
			Issuer:         r.env("CLERK_ISSUER", ""),
		},
		ClientIPHeader:  r.env("ADMIT_CLIENT_IP_HEADER", ""),
		RequestIDHeader: r.env("ADMIT_REQUEST_ID_HEADER", ""),
		MetricsAddr:     r.env("ADMIT_METRICS_ADDR", ""),
		DevOwnerEmail:   r.env("ADMIT_DEV_OWNER_EMAIL", "owner@example.test"),
		PprofAddr:       r.env("ADMIT_PPROF_ADDR", ""),
		OIDC: OIDC{
			Issuer:       r.env("ADMIT_OIDC_ISSUER", ""),
			ClientID:     r.env("ADMIT_OIDC_CLIENT_ID", ""),
			ProviderName: r.env("ADMIT_OIDC_PROVIDER_NAME", ""),
		},
	}
	c.DatabaseURL = r.databaseURL()
	host, port := r.listenAddr(c.Addr)
	c.PublicURL, c.PublicURLDerived = r.publicURL(host, port)
	c.NetworkHourlyLimit = r.networkHourlyLimit()
	c.WriteQueue = r.writeQueue()
	c.Retention = r.retention()
	r.checkPprof(c.PprofAddr)
	if c.ClientIPHeader != "" && strings.ContainsAny(c.ClientIPHeader, " :\t") {
		r.bad("ADMIT_CLIENT_IP_HEADER=%q is not a header name", c.ClientIPHeader)
	}
	if c.MetricsAddr != "" {
		if err := CheckMetricsAddr(c.MetricsAddr, c.Addr, r.env("ADMIT_METRICS_ALLOW_PUBLIC", "") == "1"); err != nil {
			r.errs = append(r.errs, err)
		}
	}
	if c.RequestIDHeader != "" && strings.ContainsAny(c.RequestIDHeader, " :\t") {
		r.bad("ADMIT_REQUEST_ID_HEADER=%q is not a header name", c.RequestIDHeader)
	}
	switch {
	case c.Clerk.SecretKey != "" && c.OIDC.Issuer != "":
		r.bad("CLERK_SECRET_KEY and ADMIT_OIDC_ISSUER are both set: admit signs in through one identity provider, unset one of them")
	case c.OIDCMode():
		r.checkOIDC(c)
	case c.DevMode():
		r.checkDev(c, host)
	default:
		r.checkClerk(c)
	}
	c.Clerk.AuthorizedParties, c.partiesDerived = r.authorizedParties(c.PublicURL)
	c.Log = r.log()
	c.GC = GC{GOGCSet: r.get("GOGC") != "", GOMEMLIMITSet: r.get("GOMEMLIMIT") != ""}
	c.Backup = r.backup()
	c.Secrets = r.secrets()
	r.checkPlaceholders()
	c.set = r.set
	return c, errors.Join(r.errs...)
}

// reader reads environment variables, collecting every problem.
type reader struct {
	getenv Environment
	errs   []error
	// set holds the trimmed value of every variable read that is set.
	set map[string]string
}

// env is the trimmed value of k, or def when it is unset or blank.
func (r *reader) env(k, def string) string {
	if v := strings.TrimSpace(r.get(k)); v != "" {
		return v
	}
	return def
}

// bad records one problem.
func (r *reader) bad(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf(format, args...))
}

// listenAddr splits ADMIT_ADDR into host and port.
func (r *reader) listenAddr(addr string) (host, port string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		r.bad("ADMIT_ADDR=%q is not host:port (for example 127.0.0.1:8080 or :0)", addr)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		r.bad("ADMIT_ADDR=%q has an invalid port", addr)
	}
	return host, port
}

// publicURL is ADMIT_PUBLIC_URL, or an origin made from the listen address
// when it is unset (derived); nil when it is invalid.
func (r *reader) publicURL(host, port string) (u *url.URL, derived bool) {
	public := r.env("ADMIT_PUBLIC_URL", "")
	derived = public == ""
	if public == "" {
		h := host
		if h == "" || h == "0.0.0.0" || h == "::" {
			h = "localhost"
		}
		public = "http://" + net.JoinHostPort(h, port)
	}
	u, err := url.Parse(public)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		r.bad("ADMIT_PUBLIC_URL=%q must be an origin like https://admit.example.com (no path or query)", public)
		return nil, derived
	}
	u.Path = ""
	return u, derived
}

// networkHourlyLimit is ADMIT_NETWORK_HOURLY_LIMIT; 0 when it is invalid.
func (r *reader) networkHourlyLimit() int {
	limit := r.env("ADMIT_NETWORK_HOURLY_LIMIT", "20")
	n, err := strconv.Atoi(limit)
	if err != nil || n < 1 || n > 1000000 {
		r.bad("ADMIT_NETWORK_HOURLY_LIMIT=%q must be a whole number from 1 to 1000000", limit)
		return 0
	}
	return n
}

// writeQueue is ADMIT_WRITE_QUEUE: how many signups may wait for the
// database writer; store.DefaultSignupQueue when unset, 0 when invalid.
func (r *reader) writeQueue() int {
	v := r.env("ADMIT_WRITE_QUEUE", strconv.Itoa(store.DefaultSignupQueue))
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > store.MaxWriteQueue {
		r.bad("ADMIT_WRITE_QUEUE=%q must be a whole number from 1 to %d", v, store.MaxWriteQueue)
		return 0
	}
	return n
}

// retention is the erasure policy from ADMIT_RETENTION_*_DAYS.
func (r *reader) retention() store.Retention {
	days := func(name string, def int) time.Duration {
		v := r.env(name, strconv.Itoa(def))
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 3650 {
			r.bad("%s=%q must be a whole number of days from 1 to 3650", name, v)
			return time.Duration(def) * 24 * time.Hour
		}
		return time.Duration(n) * 24 * time.Hour
	}
	return store.Retention{
		Withdrawn:      days("ADMIT_RETENTION_WITHDRAWN_DAYS", store.DefaultWithdrawnDays),
		Declined:       days("ADMIT_RETENTION_DECLINED_DAYS", store.DefaultDeclinedDays),
		Revoked:        days("ADMIT_RETENTION_REVOKED_DAYS", store.DefaultRevokedDays),
		RetiredProgram: days("ADMIT_RETENTION_RETIRED_DAYS", store.DefaultRetiredProgramDays),
	}
}

// checkPprof refuses a profiling address off this machine: profiles expose
// internals.
func (r *reader) checkPprof(addr string) {
	if addr == "" {
		return
	}
	if h, _, err := net.SplitHostPort(addr); err != nil || !isLoopbackHost(h) {
		r.bad("ADMIT_PPROF_ADDR=%q must be a loopback host:port such as 127.0.0.1:6060", addr)
	}
}

// devRealSignIn is how a refused development setting is fixed: sign-in
// through a real identity provider (README.md#configuration).
const devRealSignIn = "to serve admit at another address, configure real sign-in: " +
	"Clerk (CLERK_SECRET_KEY, CLERK_PUBLISHABLE_KEY, CLERK_ISSUER) or OpenID Connect (ADMIT_OIDC_ISSUER)"

// checkDev checks the development identity's settings. It trusts any
// address typed into its form, so it must be reachable only from this
// machine, never through a proxy (docs/DEPLOY.md#development-mode): it
// listens on loopback, its public URL is http:// on a loopback host, and no
// client address header names a proxy in front.
func (r *reader) checkDev(c *Config, host string) {
	if !isLoopbackHost(host) {
		r.bad("ADMIT_ADDR=%q: development mode (no real sign-in configured) only listens on a loopback address such as 127.0.0.1; %s", c.Addr, devRealSignIn)
	}
	// rule: a public URL off this machine means a proxy forwards the
	// internet to the development sign-in.
	if u := c.PublicURL; u != nil && !c.PublicURLDerived && (u.Scheme != "http" || !isLoopbackHost(u.Hostname())) {
		r.bad("ADMIT_PUBLIC_URL=%q: development mode (no real sign-in configured) only runs at http:// on a loopback host such as http://127.0.0.1:8080, where any address typed into its sign-in form is trusted; %s", u.String(), devRealSignIn)
	}
	if c.ClientIPHeader != "" {
		r.bad("ADMIT_CLIENT_IP_HEADER=%q: development mode (no real sign-in configured) must not run behind a proxy; unset it, or %s", c.ClientIPHeader, devRealSignIn)
	}
	if c.Clerk.PublishableKey != "" || c.Clerk.Issuer != "" {
		r.bad("CLERK_PUBLISHABLE_KEY or CLERK_ISSUER is set but CLERK_SECRET_KEY is not: set all three for Clerk mode")
	}
	for _, k := range []string{"ADMIT_OIDC_CLIENT_ID", "ADMIT_OIDC_CLIENT_SECRET", "ADMIT_OIDC_CLIENT_SECRET_FILE"} {
		if r.env(k, "") != "" {
			r.bad("%s is set but ADMIT_OIDC_ISSUER is not: set the issuer for OpenID Connect mode", k)
		}
	}
}

// checkOIDC reads and checks the OpenID Connect settings.
func (r *reader) checkOIDC(c *Config) {
	if u, err := url.Parse(c.OIDC.Issuer); err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil ||
		(u.Scheme != "https" && !(u.Scheme == "http" && isLoopbackHost(u.Hostname()))) {
		r.bad("ADMIT_OIDC_ISSUER=%q must be the provider's https issuer URL (http:// only on a loopback host, for tests)", c.OIDC.Issuer)
	}
	if c.OIDC.ClientID == "" {
		r.bad("ADMIT_OIDC_CLIENT_ID is required with ADMIT_OIDC_ISSUER: the client ID registered at the provider")
	}
	secret, file := r.env("ADMIT_OIDC_CLIENT_SECRET", ""), r.env("ADMIT_OIDC_CLIENT_SECRET_FILE", "")
	switch {
	case secret != "" && file != "":
		r.bad("ADMIT_OIDC_CLIENT_SECRET and ADMIT_OIDC_CLIENT_SECRET_FILE are both set: set one")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			r.bad("ADMIT_OIDC_CLIENT_SECRET_FILE=%q cannot be read: %v", file, errors.Unwrap(err))
		} else if secret = strings.TrimSpace(string(b)); secret == "" {
			r.bad("ADMIT_OIDC_CLIENT_SECRET_FILE=%q is empty", file)
		}
	case secret == "":
		r.bad("ADMIT_OIDC_CLIENT_SECRET (or ADMIT_OIDC_CLIENT_SECRET_FILE) is required with ADMIT_OIDC_ISSUER")
	}
	c.OIDC.ClientSecret = secret
	c.OIDC.Scopes = strings.Fields(strings.ReplaceAll(r.env("ADMIT_OIDC_SCOPES", "openid email"), ",", " "))
	if !slices.Contains(c.OIDC.Scopes, "openid") {
		r.bad("ADMIT_OIDC_SCOPES=%q must include openid", strings.Join(c.OIDC.Scopes, " "))
	}
	switch v := r.env("ADMIT_OIDC_TRUST_EMAIL", "0"); v {
	case "0":
	case "1":
		c.OIDC.TrustEmail = true
	default:
		r.bad("ADMIT_OIDC_TRUST_EMAIL=%q must be 1 (count addresses without email_verified) or 0", v)
	}
	if c.Clerk.PublishableKey != "" || c.Clerk.Issuer != "" {
		r.bad("CLERK_PUBLISHABLE_KEY or CLERK_ISSUER is set with ADMIT_OIDC_ISSUER: unset the Clerk settings")
	}
}

// checkClerk checks the Clerk settings and trims the API URL.
func (r *reader) checkClerk(c *Config) {
	if c.Clerk.PublishableKey == "" {
		r.bad("CLERK_PUBLISHABLE_KEY is required with CLERK_SECRET_KEY")
	}
	if c.Clerk.Issuer == "" {
		r.bad("CLERK_ISSUER is required with CLERK_SECRET_KEY: the exact iss of your Clerk session tokens, e.g. https://clerk.example.com")
	} else if u, err := url.Parse(c.Clerk.Issuer); err != nil || u.Scheme != "https" && !isLoopbackHost(u.Hostname()) {
		r.bad("CLERK_ISSUER=%q must be an https URL", c.Clerk.Issuer)
	}
	if u, err := url.Parse(c.Clerk.APIURL); err != nil || u.Host == "" || !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
		r.bad("CLERK_API_URL=%q must be the Backend API base ending in /v1", c.Clerk.APIURL)
	}
	c.Clerk.APIURL = strings.TrimRight(c.Clerk.APIURL, "/")
}

// authorizedParties is CLERK_AUTHORIZED_PARTIES, or the public URL when it
// is unset (derived).
func (r *reader) authorizedParties(public *url.URL) (parties []string, derived bool) {
	list := r.env("CLERK_AUTHORIZED_PARTIES", "")
	derived = list == ""
	if list == "" && public != nil {
		list = public.String()
	}
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			parties = append(parties, p)
		}
	}
	return parties, derived
}

// isLoopbackHost reports whether host is localhost or a loopback IP.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
