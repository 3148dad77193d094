package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"admit/handlers"
	"admit/store"
)

// Config is admit's configuration, read from the environment (README.md#configuration).
type Config struct {
	Addr      string
	DataDir   string
	PublicURL *url.URL
	// PublicURLDerived reports that ADMIT_PUBLIC_URL was not set and the
	// public URL comes from the listen address.
	PublicURLDerived       bool
	ClerkSecretKey         string
	ClerkPublishableKey    string
	ClerkAPIURL            string
	ClerkIssuer            string
	ClerkAuthorizedParties []string
	// OIDC* configure OpenID Connect mode (ADMIT_OIDC_*); OIDCIssuer set
	// means that mode.
	OIDCIssuer         string
	OIDCClientID       string
	OIDCClientSecret   string
	OIDCScopes         []string
	OIDCTrustEmail     bool
	OIDCProviderName   string
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

	partiesDerived bool
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
		c.ClerkAuthorizedParties = []string{u.String()}
	}
}

// DevMode reports whether admit runs with the development identity:
// neither Clerk nor OpenID Connect is configured.
func (c *Config) DevMode() bool { return c.ClerkSecretKey == "" && c.OIDCIssuer == "" }

// OIDCMode reports whether admit signs in through an OpenID Connect provider.
func (c *Config) OIDCMode() bool { return c.OIDCIssuer != "" }

// DBPath is the SQLite file in the data directory.
func (c *Config) DBPath() string { return filepath.Join(c.DataDir, "admit.db") }

// LoadConfig reads and validates the configuration. Every problem is
// reported at once, each with the variable that causes it.
func LoadConfig(getenv func(string) string) (*Config, error) {
	r := &configReader{getenv: getenv}
	c := &Config{
		Addr:                r.env("ADMIT_ADDR", "127.0.0.1:8080"),
		DataDir:             r.env("ADMIT_DATA", "./data"),
		ClerkSecretKey:      r.env("CLERK_SECRET_KEY", ""),
		ClerkPublishableKey: r.env("CLERK_PUBLISHABLE_KEY", ""),
		ClerkAPIURL:         r.env("CLERK_API_URL", "https://api.clerk.com/v1"),
		ClerkIssuer:         r.env("CLERK_ISSUER", ""),
		ClientIPHeader:      r.env("ADMIT_CLIENT_IP_HEADER", ""),
		RequestIDHeader:     r.env("ADMIT_REQUEST_ID_HEADER", ""),
		MetricsAddr:         r.env("ADMIT_METRICS_ADDR", ""),
		DevOwnerEmail:       r.env("ADMIT_DEV_OWNER_EMAIL", "owner@example.test"),
		PprofAddr:           r.env("ADMIT_PPROF_ADDR", ""),
		OIDCIssuer:          r.env("ADMIT_OIDC_ISSUER", ""),
		OIDCClientID:        r.env("ADMIT_OIDC_CLIENT_ID", ""),
		OIDCProviderName:    r.env("ADMIT_OIDC_PROVIDER_NAME", ""),
	}
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
		if err := checkMetricsAddr(c.MetricsAddr, c.Addr, r.env("ADMIT_METRICS_ALLOW_PUBLIC", "") == "1"); err != nil {
			r.errs = append(r.errs, err)
		}
	}
	if c.RequestIDHeader != "" && strings.ContainsAny(c.RequestIDHeader, " :\t") {
		r.bad("ADMIT_REQUEST_ID_HEADER=%q is not a header name", c.RequestIDHeader)
	}
	switch {
	case c.ClerkSecretKey != "" && c.OIDCIssuer != "":
		r.bad("CLERK_SECRET_KEY and ADMIT_OIDC_ISSUER are both set: admit signs in through one identity provider, unset one of them")
	case c.OIDCMode():
		r.checkOIDC(c)
	case c.DevMode():
		r.checkDev(c, host)
	default:
		r.checkClerk(c)
	}
	c.ClerkAuthorizedParties, c.partiesDerived = r.authorizedParties(c.PublicURL)
	return c, errors.Join(r.errs...)
}

// configReader reads environment variables, collecting every problem.
type configReader struct {
	getenv func(string) string
	errs   []error
}

// env is the trimmed value of k, or def when it is unset or blank.
func (r *configReader) env(k, def string) string {
	if v := strings.TrimSpace(r.getenv(k)); v != "" {
		return v
	}
	return def
}

// bad records one problem.
func (r *configReader) bad(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf(format, args...))
}

// listenAddr splits ADMIT_ADDR into host and port.
func (r *configReader) listenAddr(addr string) (host, port string) {
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
func (r *configReader) publicURL(host, port string) (u *url.URL, derived bool) {
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
func (r *configReader) networkHourlyLimit() int {
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
func (r *configReader) writeQueue() int {
	v := r.env("ADMIT_WRITE_QUEUE", strconv.Itoa(store.DefaultSignupQueue))
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > store.MaxWriteQueue {
		r.bad("ADMIT_WRITE_QUEUE=%q must be a whole number from 1 to %d", v, store.MaxWriteQueue)
		return 0
	}
	return n
}

// retention is the erasure policy from ADMIT_RETENTION_*_DAYS.
func (r *configReader) retention() store.Retention {
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
func (r *configReader) checkPprof(addr string) {
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
func (r *configReader) checkDev(c *Config, host string) {
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
	if c.ClerkPublishableKey != "" || c.ClerkIssuer != "" {
		r.bad("CLERK_PUBLISHABLE_KEY or CLERK_ISSUER is set but CLERK_SECRET_KEY is not: set all three for Clerk mode")
	}
	for _, k := range []string{"ADMIT_OIDC_CLIENT_ID", "ADMIT_OIDC_CLIENT_SECRET", "ADMIT_OIDC_CLIENT_SECRET_FILE"} {
		if r.env(k, "") != "" {
			r.bad("%s is set but ADMIT_OIDC_ISSUER is not: set the issuer for OpenID Connect mode", k)
		}
	}
}

// checkOIDC reads and checks the OpenID Connect settings.
func (r *configReader) checkOIDC(c *Config) {
	if u, err := url.Parse(c.OIDCIssuer); err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil ||
		(u.Scheme != "https" && !(u.Scheme == "http" && isLoopbackHost(u.Hostname()))) {
		r.bad("ADMIT_OIDC_ISSUER=%q must be the provider's https issuer URL (http:// only on a loopback host, for tests)", c.OIDCIssuer)
	}
	if c.OIDCClientID == "" {
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
	c.OIDCClientSecret = secret
	c.OIDCScopes = strings.Fields(strings.ReplaceAll(r.env("ADMIT_OIDC_SCOPES", "openid email"), ",", " "))
	if !slices.Contains(c.OIDCScopes, "openid") {
		r.bad("ADMIT_OIDC_SCOPES=%q must include openid", strings.Join(c.OIDCScopes, " "))
	}
	switch v := r.env("ADMIT_OIDC_TRUST_EMAIL", "0"); v {
	case "0":
	case "1":
		c.OIDCTrustEmail = true
	default:
		r.bad("ADMIT_OIDC_TRUST_EMAIL=%q must be 1 (count addresses without email_verified) or 0", v)
	}
	if c.ClerkPublishableKey != "" || c.ClerkIssuer != "" {
		r.bad("CLERK_PUBLISHABLE_KEY or CLERK_ISSUER is set with ADMIT_OIDC_ISSUER: unset the Clerk settings")
	}
}

// checkClerk checks the Clerk settings and trims the API URL.
func (r *configReader) checkClerk(c *Config) {
	if c.ClerkPublishableKey == "" {
		r.bad("CLERK_PUBLISHABLE_KEY is required with CLERK_SECRET_KEY")
	}
	if c.ClerkIssuer == "" {
		r.bad("CLERK_ISSUER is required with CLERK_SECRET_KEY: the exact iss of your Clerk session tokens, e.g. https://clerk.example.com")
	} else if u, err := url.Parse(c.ClerkIssuer); err != nil || u.Scheme != "https" && !isLoopbackHost(u.Hostname()) {
		r.bad("CLERK_ISSUER=%q must be an https URL", c.ClerkIssuer)
	}
	if u, err := url.Parse(c.ClerkAPIURL); err != nil || u.Host == "" || !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
		r.bad("CLERK_API_URL=%q must be the Backend API base ending in /v1", c.ClerkAPIURL)
	}
	c.ClerkAPIURL = strings.TrimRight(c.ClerkAPIURL, "/")
}

// authorizedParties is CLERK_AUTHORIZED_PARTIES, or the public URL when it
// is unset (derived).
func (r *configReader) authorizedParties(public *url.URL) (parties []string, derived bool) {
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

// secretNames are the keys in the secrets file, each 32 random bytes as hex.
var secretNames = []string{"session_hash", "session_block", "csrf", "binding", "counter", "session_tokens"}

// addedSecrets are keys newer than the secrets file a data directory may
// already have: LoadKeys generates each missing one and appends it.
var addedSecrets = []string{"session_tokens"}

// previousSecretNames are the optional keys of a rotation window: the
// session and CSRF keys being replaced, still accepted (never used to sign)
// until they are removed (docs/DEPLOY.md, "Rotating a key"). The two
// session keys come as a pair.
var previousSecretNames = []string{"previous_session_hash", "previous_session_block", "previous_csrf"}

// LoadKeys reads the server keys from ADMIT_SECRET_<NAME> variables, or from
// the secrets file in the data directory, generating that file (mode 0600) on
// first start, or from the systemd credential "secrets" when the service
// has one ($CREDENTIALS_DIRECTORY/secrets, never generated). Keys never live
// in the database. The previous session and CSRF
// keys of a rotation (previousSecretNames) are read from the same place,
// when present.
func LoadKeys(getenv func(string) string, dataDir string) (handlers.Keys, error) {
	vals := map[string][]byte{}
	fromEnv := 0
	for _, n := range secretNames {
		if v := getenv("ADMIT_SECRET_" + strings.ToUpper(n)); v != "" {
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != 32 {
				return handlers.Keys{}, fmt.Errorf("ADMIT_SECRET_%s must be 64 hex characters (32 bytes)", strings.ToUpper(n))
			}
			vals[n] = b
			fromEnv++
		}
	}
	if fromEnv != 0 && fromEnv != len(secretNames) {
		return handlers.Keys{}, fmt.Errorf("set all of ADMIT_SECRET_{%s} or none", strings.ToUpper(strings.Join(secretNames, ",")))
	}
	if fromEnv == 0 {
		path := filepath.Join(dataDir, "secrets")
		// A systemd credential named "secrets" (LoadCredential=) replaces
		// the file in the data directory; it is never generated.
		if dir := getenv("CREDENTIALS_DIRECTORY"); dir != "" {
			cred := filepath.Join(dir, "secrets")
			if _, err := os.Stat(cred); err == nil {
				path = cred
			}
		}
		var err error
		if vals, err = secretsFile(path); err != nil {
			return handlers.Keys{}, err
		}
	} else {
		for _, n := range previousSecretNames {
			if v := getenv("ADMIT_SECRET_" + strings.ToUpper(n)); v != "" {
				b, err := hex.DecodeString(v)
				if err != nil || len(b) != 32 {
					return handlers.Keys{}, fmt.Errorf("ADMIT_SECRET_%s must be 64 hex characters (32 bytes)", strings.ToUpper(n))
				}
				vals[n] = b
			}
		}
	}
	if (vals["previous_session_hash"] == nil) != (vals["previous_session_block"] == nil) {
		return handlers.Keys{}, errors.New("previous_session_hash and previous_session_block come together: set both or neither")
	}
	return handlers.Keys{SessionHash: vals["session_hash"], SessionBlock: vals["session_block"], CSRF: vals["csrf"],
		Binding: vals["binding"], Counter: vals["counter"], SessionTokens: vals["session_tokens"],
		PreviousSessionHash: vals["previous_session_hash"], PreviousSessionBlock: vals["previous_session_block"],
		PreviousCSRF: vals["previous_csrf"]}, nil
}

func secretsFile(path string) (map[string][]byte, error) {
	vals := map[string][]byte{}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("create data dir: %w", err)
		}
		var sb strings.Builder
		sb.WriteString("# admit server keys: keep private, back up separately from the database.\n")
		for _, n := range secretNames {
			k := make([]byte, 32)
			if _, err := rand.Read(k); err != nil {
				return nil, err
			}
			vals[n] = k
			fmt.Fprintf(&sb, "%s=%s\n", n, hex.EncodeToString(k))
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("create secrets file: %w", err)
		}
		if _, err := f.WriteString(sb.String()); err != nil {
			f.Close()
			return nil, fmt.Errorf("write secrets file: %w", err)
		}
		return vals, f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("read secrets file: %w", err)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secrets file %s is readable by others (mode %o): chmod 600 it", path, st.Mode().Perm())
	}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		key, err := hex.DecodeString(v)
		if !ok || err != nil || len(key) != 32 {
			return nil, fmt.Errorf("secrets file %s line %d is not name=<64 hex>", path, i+1)
		}
		vals[k] = key
	}
	for _, n := range secretNames {
		if vals[n] == nil && !slices.Contains(addedSecrets, n) {
			return nil, fmt.Errorf("secrets file %s has no %s key", path, n)
		}
	}
	if err := appendAddedSecrets(path, vals); err != nil {
		return nil, err
	}
	return vals, nil
}

// appendAddedSecrets generates the keys added since a secrets file was
// written (addedSecrets) and appends them, so an upgrade keeps every
// existing key.
func appendAddedSecrets(path string, vals map[string][]byte) error {
	var sb strings.Builder
	for _, n := range addedSecrets {
		if vals[n] != nil {
			continue
		}
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return err
		}
		vals[n] = k
		fmt.Fprintf(&sb, "%s=%s\n", n, hex.EncodeToString(k))
	}
	if sb.Len() == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("add keys to secrets file: %w", err)
	}
	if _, err := f.WriteString(sb.String()); err != nil {
		f.Close()
		return fmt.Errorf("add keys to secrets file: %w", err)
	}
	return f.Close()
}
