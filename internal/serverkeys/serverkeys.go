// Package serverkeys loads admit's server keys — session, CSRF, binding,
// counter and session-token keys, 32 random bytes each — from the
// environment's values, a systemd credential, or the secrets file in the
// data directory, which it generates on first start (docs/DEPLOY.md, "The
// secrets file").
package serverkeys

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"admit/internal/config"
)

// Keys are the server's secrets. Each is 32 random bytes with one purpose.
type Keys struct {
	// SessionHash and SessionBlock sign and encrypt the session cookie.
	SessionHash, SessionBlock []byte
	// CSRF binds CSRF tokens to a session.
	CSRF []byte
	// Binding keys request-binding HMACs (signup and owner receipts).
	Binding []byte
	// Counter keys the hourly network and attempt counters.
	Counter []byte
	// SessionTokens seals what a server-side session keeps from the
	// identity provider (docs/ARCHITECTURE.md#sessions). main hands it to
	// the identity; the handlers never use it.
	SessionTokens []byte
	// PreviousSessionHash and PreviousSessionBlock, when set, are the
	// session keys being rotated out: cookies they signed are still read,
	// new ones are signed with the current keys. PreviousCSRF is the same
	// for CSRF tokens (docs/DEPLOY.md, "Rotating a key").
	PreviousSessionHash, PreviousSessionBlock []byte
	PreviousCSRF                              []byte
}

// SessionKeyPairs lists the session key pairs for a cookie codec, the
// current pair first (the one that signs) and then the previous one, if any.
func (k Keys) SessionKeyPairs() [][]byte {
	pairs := [][]byte{k.SessionHash, k.SessionBlock}
	if k.PreviousSessionHash != nil {
		pairs = append(pairs, k.PreviousSessionHash, k.PreviousSessionBlock)
	}
	return pairs
}

// addedSecrets are keys newer than the secrets file a data directory may
// already have: Load generates each missing one and appends it.
var addedSecrets = []string{"session_tokens"}

// Load returns the server keys: those of the environment (src.Env, all
// of them or none, config.Load checked), or else those of the secrets
// file in dataDir, generating that file (mode 0600) on first start, or of
// the systemd credential "secrets" when the service has one
// (src.CredentialsDir/secrets, never generated). Keys never live in the
// database. The previous session and CSRF keys of a rotation
// (config.PreviousSecretNames) come from the same place, when present.
func Load(src config.Secrets, dataDir string) (Keys, error) {
	vals := src.Env
	if len(vals) == 0 {
		var err error
		if vals, err = secretsFile(Path(src, dataDir)); err != nil {
			return Keys{}, err
		}
	}
	if err := checkPrevious(vals); err != nil {
		return Keys{}, err
	}
	return Keys{SessionHash: vals["session_hash"], SessionBlock: vals["session_block"], CSRF: vals["csrf"],
		Binding: vals["binding"], Counter: vals["counter"], SessionTokens: vals["session_tokens"],
		PreviousSessionHash: vals["previous_session_hash"], PreviousSessionBlock: vals["previous_session_block"],
		PreviousCSRF: vals["previous_csrf"]}, nil
}

// Path is the secrets file Load reads when the keys are not in the
// environment: a systemd credential named "secrets" (LoadCredential=)
// when the service has one, which replaces the file in the data directory
// and is never generated; else dataDir/secrets.
func Path(src config.Secrets, dataDir string) string {
	if src.CredentialsDir != "" {
		cred := filepath.Join(src.CredentialsDir, "secrets")
		if _, err := os.Stat(cred); err == nil {
			return cred
		}
	}
	return filepath.Join(dataDir, "secrets")
}

// Check makes every check Load makes of the keys' source without
// changing anything: a secrets file is read (mode, format, the keys it
// must hold) when it exists; one that does not exist yet is fine, Load
// generates it. `admit config` runs it as part of serve's checks.
func Check(src config.Secrets, dataDir string) error {
	if len(src.Env) > 0 {
		return checkPrevious(src.Env)
	}
	path := Path(src, dataDir)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	vals, err := readSecretsFile(path)
	if err != nil {
		return err
	}
	return checkPrevious(vals)
}

// checkPrevious refuses half of the previous session keys' pair.
func checkPrevious(vals map[string][]byte) error {
	if (vals["previous_session_hash"] == nil) != (vals["previous_session_block"] == nil) {
		return errors.New("previous_session_hash and previous_session_block come together: set both or neither")
	}
	return nil
}

func secretsFile(path string) (map[string][]byte, error) {
	vals := map[string][]byte{}
	_, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("create data dir: %w", err)
		}
		var sb strings.Builder
		sb.WriteString("# admit server keys: keep private, back up separately from the database.\n")
		for _, n := range config.SecretNames {
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
	if vals, err = readSecretsFile(path); err != nil {
		return nil, err
	}
	if err := appendAddedSecrets(path, vals); err != nil {
		return nil, err
	}
	return vals, nil
}

// readSecretsFile reads and checks an existing secrets file: private to
// its owner, one name=<64 hex> a line, every key but the added ones.
func readSecretsFile(path string) (map[string][]byte, error) {
	vals := map[string][]byte{}
	b, err := os.ReadFile(path)
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
	for _, n := range config.SecretNames {
		if vals[n] == nil && !slices.Contains(addedSecrets, n) {
			return nil, fmt.Errorf("secrets file %s has no %s key", path, n)
		}
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
