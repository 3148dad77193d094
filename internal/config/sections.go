package config

import (
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"admit/backup"
)

// log reads ADMIT_LOG_LEVEL (debug, info — the default —, warn or error)
// and ADMIT_LOG_FORMAT (text, the default, or json). Every request writes
// one info line, so warn keeps only problems.
func (r *reader) log() Log {
	var l Log
	switch v := strings.ToLower(r.env("ADMIT_LOG_LEVEL", "")); v {
	case "debug":
		l.Level = slog.LevelDebug
	case "", "info":
		l.Level = slog.LevelInfo
	case "warn", "warning":
		l.Level = slog.LevelWarn
	case "error":
		l.Level = slog.LevelError
	default:
		r.bad("ADMIT_LOG_LEVEL=%q must be debug, info, warn or error", v)
	}
	switch v := strings.ToLower(r.env("ADMIT_LOG_FORMAT", "")); v {
	case "", "text":
	case "json":
		l.JSON = true
	default:
		r.bad("ADMIT_LOG_FORMAT=%q must be text or json", v)
	}
	return l
}

// backup reads the backup settings of the environment.
func (r *reader) backup() Backup {
	b := Backup{ConfigFile: r.env("ADMIT_LITESTREAM_CONFIG", backup.DefaultConfigFile), Expand: r.getenv}
	if v := r.env("ADMIT_BACKUP_MAX_LAG", ""); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			r.bad("ADMIT_BACKUP_MAX_LAG=%q must be a positive duration such as 1m", v)
		}
		b.MaxLag = d
	}
	switch v := r.env("ADMIT_BACKUP_DRILL_INTERVAL", ""); v {
	case "":
		b.DrillInterval = backup.DefaultDrillInterval
	case "off":
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			r.bad("ADMIT_BACKUP_DRILL_INTERVAL=%q must be a positive duration such as 1h, or off", v)
		}
		b.DrillInterval = d
	}
	// As the official Litestream CLI: LITESTREAM_* when neither AWS_* is set.
	id, secret := r.get("AWS_ACCESS_KEY_ID"), r.get("AWS_SECRET_ACCESS_KEY")
	if id == "" && secret == "" {
		id, secret = r.get("LITESTREAM_ACCESS_KEY_ID"), r.get("LITESTREAM_SECRET_ACCESS_KEY")
	}
	b.Credentials = backup.Credentials{AccessKeyID: id, SecretAccessKey: secret}
	for _, n := range []string{"AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		if strings.TrimSpace(r.getenv(n)) != "" {
			b.CredentialSource = n
			break
		}
	}
	// An instance role has no variable of its own: the operator says so.
	if b.CredentialSource == "" && strings.EqualFold(strings.TrimSpace(r.getenv("AWS_EC2_METADATA_DISABLED")), "false") {
		b.CredentialSource = "AWS_EC2_METADATA_DISABLED"
	}
	return b
}

// SecretNames are the server keys, each 32 random bytes: in the secrets
// file as name=<64 hex>, or all of them as ADMIT_SECRET_<NAME>.
var SecretNames = []string{"session_hash", "session_block", "csrf", "binding", "counter", "session_tokens"}

// PreviousSecretNames are the optional keys of a rotation window: the
// session and CSRF keys being replaced, still accepted (never used to sign)
// until they are removed (docs/DEPLOY.md, "Rotating a key"). The two
// session keys come as a pair.
var PreviousSecretNames = []string{"previous_session_hash", "previous_session_block", "previous_csrf"}

// secretVar is the environment variable of the server key name.
func secretVar(name string) string { return "ADMIT_SECRET_" + strings.ToUpper(name) }

// secrets reads ADMIT_SECRET_* and CREDENTIALS_DIRECTORY. The keys come
// from the environment all together or not at all; the previous keys of a
// rotation are read only with them (the secrets file has its own).
func (r *reader) secrets() Secrets {
	s := Secrets{Env: map[string][]byte{}, CredentialsDir: r.get("CREDENTIALS_DIRECTORY")}
	for _, n := range SecretNames {
		if k, ok := r.secretKey(n); ok {
			s.Env[n] = k
		}
	}
	switch len(s.Env) {
	case 0:
		return s
	case len(SecretNames):
	default:
		r.bad("set all of ADMIT_SECRET_{%s} or none", strings.ToUpper(strings.Join(SecretNames, ",")))
	}
	for _, n := range PreviousSecretNames {
		if k, ok := r.secretKey(n); ok {
			s.Env[n] = k
		}
	}
	return s
}

// secretKey reads the server key name from its ADMIT_SECRET_ variable.
func (r *reader) secretKey(name string) ([]byte, bool) {
	v := r.get(secretVar(name))
	if v == "" {
		return nil, false
	}
	b, err := hex.DecodeString(v)
	if err != nil || len(b) != 32 {
		r.bad("%s must be 64 hex characters (32 bytes)", secretVar(name))
		return nil, false
	}
	return b, true
}

// CheckMetricsAddr refuses a metrics address anyone could reach: it must
// be a loopback or private (RFC 1918, RFC 4193) IP, unless
// ADMIT_METRICS_ALLOW_PUBLIC=1 says the operator firewalls it themselves.
// It is never the public listener's address.
func CheckMetricsAddr(addr, publicAddr string, allowPublic bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("ADMIT_METRICS_ADDR=%q is not host:port (for example 127.0.0.1:9090)", addr)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return fmt.Errorf("ADMIT_METRICS_ADDR=%q has an invalid port", addr)
	}
	if addr == publicAddr && port != "0" {
		return fmt.Errorf("ADMIT_METRICS_ADDR=%q is the public listener: metrics need a listener of their own", addr)
	}
	if allowPublic {
		return nil
	}
	ip := net.ParseIP(host)
	if host == "localhost" || ip != nil && (ip.IsLoopback() || ip.IsPrivate()) {
		return nil
	}
	return fmt.Errorf("ADMIT_METRICS_ADDR=%q must be a loopback or private address such as 127.0.0.1:9090 "+
		"(set ADMIT_METRICS_ALLOW_PUBLIC=1 if a firewall keeps it private)", addr)
}
