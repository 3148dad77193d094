package config

import "strings"

// Var is one environment variable admit reads, as a row of README.md's
// configuration table (TestVars_MatchTheREADMETable holds the two together).
type Var struct {
	// Name is the variable. ADMIT_SECRET_{A,B} stands for ADMIT_SECRET_A
	// and ADMIT_SECRET_B.
	Name string
	// Default is what applies when the variable is unset, in the table's
	// words (Markdown); "—" means nothing.
	Default string
	// Summary says in a few words what the variable is (Markdown), for
	// README.md's table.
	Summary string
	// Meaning says what the variable does, in full (Markdown), for
	// docs/DEPLOY.md's configuration reference.
	Meaning string
	// Secret marks a value `admit config` never shows.
	Secret bool
}

// Names expands Name's braces into the variables it stands for.
func (v Var) Names() []string {
	prefix, rest, ok := strings.Cut(v.Name, "{")
	if !ok {
		return []string{v.Name}
	}
	list, suffix, _ := strings.Cut(rest, "}")
	var names []string
	for _, n := range strings.Split(list, ",") {
		names = append(names, prefix+n+suffix)
	}
	return names
}

// Vars lists every environment variable admit reads, in the order of
// README.md's table and docs/DEPLOY.md's configuration reference.
// litestream.yml may name others as $VAR or ${VAR}; those are its own.
var Vars = []Var{
	{Name: "ADMIT_ADDR", Summary: "listen address", Default: "`127.0.0.1:8080`", Meaning: "listen address (`:0` picks a free port)"},
	{Name: "ADMIT_DATA", Summary: "data directory: the SQLite file, the `secrets` file and the lock", Default: "`./data`", Meaning: "data directory: `admit.db` (not with `ADMIT_DATABASE_URL`), the generated `secrets` file (mode 0600) and the server's lock, `admit.lock`"},
	{Name: "ADMIT_DATABASE_URL", Summary: "PostgreSQL instead of the SQLite file: `postgres://…`", Default: "— (SQLite in `ADMIT_DATA`)", Meaning: "PostgreSQL instead of the SQLite file when set: a `postgres://` or `postgresql://` URL (pgx's parameters, e.g. `?sslmode=verify-full`). `ADMIT_DATA` still holds the `secrets` file and the lock; several servers may share one database with the same server keys ([docs/DEPLOY.md](#postgresql))"},
	{Name: "ADMIT_PUBLIC_URL", Summary: "the public origin, the only one allowed to write", Default: "`http://` + address", Meaning: "the public origin; the only allowed `Origin` for writes (in development mode, `http://` on a loopback host only)"},
	{Name: "CLERK_SECRET_KEY", Summary: "Clerk mode when set: the Backend API's secret key", Default: "—", Meaning: "Clerk mode when set: the Backend API's secret key", Secret: true},
	{Name: "CLERK_PUBLISHABLE_KEY", Summary: "the publishable key ClerkJS loads with", Default: "— (required in Clerk mode)", Meaning: "the publishable key ClerkJS loads with"},
	{Name: "CLERK_API_URL", Summary: "Clerk Backend API base", Default: "`https://api.clerk.com/v1`", Meaning: "Clerk Backend API base"},
	{Name: "CLERK_ISSUER", Summary: "the exact `iss` of your session tokens", Default: "— (required in Clerk mode)", Meaning: "the exact `iss` of your session tokens"},
	{Name: "CLERK_AUTHORIZED_PARTIES", Summary: "allowed `azp` values, comma-separated", Default: "`ADMIT_PUBLIC_URL`", Meaning: "comma-separated allowed `azp` values"},
	{Name: "ADMIT_OIDC_ISSUER", Summary: "OpenID Connect mode when set: the provider's issuer URL", Default: "—", Meaning: "OpenID Connect mode when set (not together with `CLERK_SECRET_KEY`): the provider's issuer URL, `https://` (`http://` only on a loopback host)"},
	{Name: "ADMIT_OIDC_CLIENT_ID", Summary: "admit's client ID at the provider", Default: "— (required in OIDC mode)", Meaning: "admit's client ID at the provider"},
	{Name: "ADMIT_OIDC_CLIENT_SECRET", Summary: "the client secret", Default: "— (this or the file required in OIDC mode)", Meaning: "the client secret", Secret: true},
	{Name: "ADMIT_OIDC_CLIENT_SECRET_FILE", Summary: "a file holding the client secret", Default: "—", Meaning: "a file holding the client secret, instead of `ADMIT_OIDC_CLIENT_SECRET`"},
	{Name: "ADMIT_OIDC_SCOPES", Summary: "space-separated scopes, `openid` among them", Default: "`openid email`", Meaning: "space-separated scopes; must include `openid`; add `offline_access` for refresh tokens where the provider needs it"},
	{Name: "ADMIT_OIDC_TRUST_EMAIL", Summary: "`1` counts an address without `email_verified`", Default: "`0`", Meaning: "`1` counts an address whose `email_verified` claim is absent (Entra ID); an explicit `false` never counts. Only for a provider that never hands out unverified addresses ([docs/DEPLOY.md](#openid-connect))"},
	{Name: "ADMIT_OIDC_PROVIDER_NAME", Summary: "the name on \"Continue with …\"", Default: "the issuer's host", Meaning: "the name on \"Continue with …\""},
	{Name: "ADMIT_CLIENT_IP_HEADER", Summary: "a trusted proxy's header with the client address", Default: "—", Meaning: "a header set by a trusted proxy carrying the client address (refused in development mode)"},
	{Name: "ADMIT_REQUEST_ID_HEADER", Summary: "a trusted proxy's header with a request ID", Default: "—", Meaning: "a header set by a trusted proxy carrying a request ID (e.g. `X-Request-ID`); admit keeps it when it is 1–64 of `A-Z a-z 0-9 - _`, and otherwise makes one"},
	{Name: "ADMIT_LOG_FORMAT", Summary: "`text` or `json` on stderr", Default: "`text`", Meaning: "`text` (key=value lines) or `json` (one object a line) on stderr"},
	{Name: "ADMIT_LOG_LEVEL", Summary: "`debug`, `info`, `warn` or `error`", Default: "`info`", Meaning: "`debug`, `info`, `warn` or `error`; every request writes one `info` line"},
	{Name: "ADMIT_METRICS_ADDR", Summary: "Prometheus metrics on this loopback or private host:port", Default: "—", Meaning: "Prometheus metrics on a listener of their own at this loopback or private host:port ([docs/DEPLOY.md](#metrics-and-logs))"},
	{Name: "ADMIT_METRICS_ALLOW_PUBLIC", Summary: "`1` allows any address for the metrics", Default: "`0`", Meaning: "`1` allows any address for `ADMIT_METRICS_ADDR`, when a firewall keeps it private"},
	{Name: "ADMIT_NETWORK_HOURLY_LIMIT", Summary: "signup attempts per network per UTC hour", Default: "`20`", Meaning: "signup attempts per network (IPv4 address or IPv6 /64) per UTC hour; a refused signup still counts its attempt, a retry of an accepted one does not ([docs/signup.md](signup.md))"},
	{Name: "ADMIT_WRITE_QUEUE", Summary: "signups that may wait for the database writer", Default: "`256`", Meaning: "how many signups may wait for the database writer, and the most that may be in progress at once (fewer when signups are being answered slowly: a third of 100 ms worth, so that the slowest answers stay under 100 ms even while the disk stalls, and a quarter of that while admit keeps all its CPUs busy); past it a signup is answered 503 with `Retry-After: 1` at once, storing and counting nothing, instead of waiting longer and longer (owners' writes have a reserve of their own; [docs/DEPLOY.md](#sizing)). A signup takes its place only once its body has arrived; a body that takes more than 5 seconds is answered 408 and counts nothing ([docs/signup.md](signup.md#slow-bodies))"},
	{Name: "ADMIT_RETENTION_WITHDRAWN_DAYS", Summary: "days a withdrawn entry keeps its email", Default: "`30`", Meaning: "days a withdrawn entry keeps its email before erasure"},
	{Name: "ADMIT_RETENTION_DECLINED_DAYS", Summary: "days a declined entry keeps its email", Default: "`30`", Meaning: "the same for declined entries"},
	{Name: "ADMIT_RETENTION_REVOKED_DAYS", Summary: "days a revoked entry keeps its email", Default: "`30`", Meaning: "the same for entries whose access was revoked"},
	{Name: "ADMIT_RETENTION_RETIRED_DAYS", Summary: "days a retired program's entries keep their email", Default: "`30`", Meaning: "days every entry of a retired program keeps its email"},
	{Name: "ADMIT_DEV_OWNER_EMAIL", Summary: "the demo owner in development mode", Default: "`owner@example.test`", Meaning: "the demo owner in development mode"},
	{Name: "ADMIT_PPROF_ADDR", Summary: "opt-in profiling on this loopback address", Default: "—", Meaning: "opt-in CPU/heap profiling on this loopback address (for `cmd/loadgen -pprof-dir`)"},
	{Name: "ADMIT_LITESTREAM_CONFIG", Summary: "the backup configuration file", Default: "`litestream.yml`", Meaning: "the backup configuration file; a missing file means no backup"},
	{Name: "ADMIT_BACKUP_MAX_LAG", Summary: "how far the replica may lag before `/readyz` says 503", Default: "`1m`", Meaning: "`/readyz` answers 503 when committed changes have waited longer than this for the replica"},
	{Name: "ADMIT_BACKUP_DRILL_INTERVAL", Summary: "how often a restore drill runs, or `off`", Default: "`1h`", Meaning: "how often `admit serve` runs a restore drill (also right after start and a minute later); a Go duration or `off`"},
	{Name: "AWS_ACCESS_KEY_ID", Summary: "an S3 replica's access key ID", Default: "—", Meaning: "an S3 replica's access key ID; set it and `AWS_SECRET_ACCESS_KEY`, or neither (then the AWS SDK's default chain applies: shared config, instance role)", Secret: true},
	{Name: "AWS_SECRET_ACCESS_KEY", Summary: "an S3 replica's secret access key", Default: "—", Meaning: "an S3 replica's secret access key", Secret: true},
	{Name: "LITESTREAM_ACCESS_KEY_ID", Summary: "read instead of `AWS_ACCESS_KEY_ID`", Default: "—", Meaning: "read instead of `AWS_ACCESS_KEY_ID` when neither `AWS_` key is set, as the official Litestream CLI does", Secret: true},
	{Name: "LITESTREAM_SECRET_ACCESS_KEY", Summary: "read instead of `AWS_SECRET_ACCESS_KEY`", Default: "—", Meaning: "read instead of `AWS_SECRET_ACCESS_KEY` likewise", Secret: true},
	{Name: "AWS_{PROFILE,SHARED_CREDENTIALS_FILE,WEB_IDENTITY_TOKEN_FILE,CONTAINER_CREDENTIALS_RELATIVE_URI,CONTAINER_CREDENTIALS_FULL_URI,EC2_METADATA_DISABLED}", Summary: "the AWS SDK's default credential chain", Default: "—", Meaning: "without the key pair above, where the AWS SDK finds an S3 replica's credentials; admit refuses an S3 replica when none of these is set (`AWS_EC2_METADATA_DISABLED=false` says: an instance role)"},
	{Name: "ADMIT_SECRET_{SESSION_HASH,SESSION_BLOCK,CSRF,BINDING,COUNTER,SESSION_TOKENS}", Summary: "the server keys, all or none", Default: "generated", Meaning: "server keys (64 hex each); set all or none. `SESSION_TOKENS` seals what a sign-in session keeps; an older `secrets` file gets it appended on first start", Secret: true},
	{Name: "ADMIT_SECRET_{PREVIOUS_SESSION_HASH,PREVIOUS_SESSION_BLOCK,PREVIOUS_CSRF}", Summary: "the keys a rotation replaces", Default: "—", Meaning: "with the server keys above, the session and CSRF keys a rotation replaces, still accepted until removed; the two session keys come together ([docs/DEPLOY.md](#rotating-a-key))", Secret: true},
	{Name: "CREDENTIALS_DIRECTORY", Summary: "systemd's credentials: `secrets` there replaces the file", Default: "—", Meaning: "set by systemd: a credential named `secrets` there (`LoadCredential=secrets:…`) replaces the data directory's `secrets` file and is never generated ([docs/DEPLOY.md](#secrets-through-systemd-credentials))"},
	{Name: "GOGC", Summary: "the Go collector's target", Default: "`400` (admit's)", Meaning: "the Go runtime's collector target; admit sets 400 while it serves unless this is set ([docs/PERFORMANCE.md](PERFORMANCE.md#garbage-collection))"},
	{Name: "GOMEMLIMIT", Summary: "the Go runtime's soft memory limit", Default: "`64MiB` (admit's)", Meaning: "the Go runtime's soft memory limit; admit sets 64 MiB while it serves unless this is set"},
}

// isSecret reports whether name's value must never be shown: a Secret
// variable, or one whose name says it is a credential.
func isSecret(v Var, name string) bool {
	if v.Secret {
		return true
	}
	for _, word := range []string{"SECRET", "PASSWORD", "TOKEN", "ACCESS_KEY"} {
		if strings.Contains(name, word) && !strings.HasSuffix(name, "_FILE") {
			return true
		}
	}
	return false
}
