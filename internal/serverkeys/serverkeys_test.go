package serverkeys

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"admit/internal/config"
)

// secretEnv returns all ADMIT_SECRET_* variables, each key filled with b.
func secretEnv(b byte) map[string]string {
	m := map[string]string{}
	for _, n := range config.SecretNames {
		m["ADMIT_SECRET_"+strings.ToUpper(n)] = strings.Repeat(hex.EncodeToString([]byte{b}), 32)
	}
	return m
}

func TestLoadKeys_GeneratesPrivateFileOnceAndReusesIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // not created yet
	first, err := LoadKeys(fakeEnv(nil), dir)
	if err != nil {
		t.Fatalf("first LoadKeys: %v", err)
	}
	st, err := os.Stat(filepath.Join(dir, "secrets"))
	if err != nil {
		t.Fatalf("secrets file: %v", err)
	}
	if got, want := st.Mode().Perm(), os.FileMode(0o600); got != want {
		t.Fatalf("secrets file mode=%o, want %o", got, want)
	}
	keys := [][]byte{first.SessionHash, first.SessionBlock, first.CSRF, first.Binding, first.Counter}
	seen := map[string]bool{}
	for i, k := range keys {
		if got, want := len(k), 32; got != want {
			t.Fatalf("key %d has %d bytes, want %d", i, got, want)
		}
		if seen[string(k)] {
			t.Fatalf("key %d repeats another key: every key has one purpose", i)
		}
		seen[string(k)] = true
	}

	second, err := LoadKeys(fakeEnv(nil), dir)
	if err != nil {
		t.Fatalf("second LoadKeys: %v", err)
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatal("second LoadKeys returned different keys: the file was regenerated")
	}
}

func TestLoadKeys_RefusesFileReadableByOthers(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadKeys(fakeEnv(nil), dir); err != nil {
		t.Fatalf("generate: %v", err)
	}
	path := filepath.Join(dir, "secrets")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadKeys(fakeEnv(nil), dir)
	if err == nil {
		t.Fatal("LoadKeys accepted a secrets file with mode 0644")
	}
	if !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("error %q does not say how to fix it", err)
	}
}

func TestLoadKeys_RefusesCorruptFile(t *testing.T) {
	for _, tc := range []struct {
		name, content string
	}{
		{"not hex", "session_hash=zz\n"},
		{"short key", "session_hash=" + strings.Repeat("ab", 16) + "\n"},
		{"no equals sign", strings.Repeat("ab", 32) + "\n"},
		{"missing keys", "session_hash=" + strings.Repeat("ab", 32) + "\n"},
		{"empty", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "secrets"), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadKeys(fakeEnv(nil), dir); err == nil {
				t.Fatal("LoadKeys accepted a corrupt secrets file")
			}
		})
	}
}

func TestLoadKeys_FromEnvironmentAllOrNothing(t *testing.T) {
	t.Run("all set", func(t *testing.T) {
		dir := t.TempDir()
		env := secretEnv(0xab)
		env["ADMIT_SECRET_COUNTER"] = strings.Repeat("cd", 32)
		keys, err := LoadKeys(fakeEnv(env), dir)
		if err != nil {
			t.Fatalf("LoadKeys: %v", err)
		}
		if got, want := keys.SessionHash, bytes.Repeat([]byte{0xab}, 32); !bytes.Equal(got, want) {
			t.Errorf("SessionHash=%x, want %x", got, want)
		}
		if got, want := keys.Counter, bytes.Repeat([]byte{0xcd}, 32); !bytes.Equal(got, want) {
			t.Errorf("Counter=%x, want %x", got, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "secrets")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a secrets file was written although the environment has the keys (stat: %v)", err)
		}
	})
	t.Run("partially set", func(t *testing.T) {
		env := secretEnv(0xab)
		delete(env, "ADMIT_SECRET_BINDING")
		_, err := LoadKeys(fakeEnv(env), t.TempDir())
		if err == nil {
			t.Fatal("LoadKeys accepted a partial set of ADMIT_SECRET_* variables")
		}
		if !strings.Contains(err.Error(), "ADMIT_SECRET_") {
			t.Fatalf("error %q does not name the variables", err)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		env := secretEnv(0xab)
		env["ADMIT_SECRET_CSRF"] = "abcd"
		_, err := LoadKeys(fakeEnv(env), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "ADMIT_SECRET_CSRF") {
			t.Fatalf("err=%v, want one naming ADMIT_SECRET_CSRF", err)
		}
	})
}

// TestLoadKeys_ReadsTheRotationsPreviousKeys: the rotation steps of
// docs/DEPLOY.md ("Rotating a key") — the old session and CSRF keys renamed
// previous_*, new ones added — give the server both; the previous session
// keys come as a pair, from the file or from the environment.
func TestLoadKeys_ReadsTheRotationsPreviousKeys(t *testing.T) {
	hexKey := func(b byte) string { return strings.Repeat(hex.EncodeToString([]byte{b}), 32) }
	dir := t.TempDir()
	if _, err := LoadKeys(fakeEnv(nil), dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "secrets")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			old[k] = v
		}
	}
	// The rotation as documented: the old keys kept as previous_*.
	rotated := fmt.Sprintf("session_hash=%s\nsession_block=%s\ncsrf=%s\nbinding=%s\ncounter=%s\n"+
		"previous_session_hash=%s\nprevious_session_block=%s\nprevious_csrf=%s\n",
		hexKey(1), hexKey(2), hexKey(3), old["binding"], old["counter"],
		old["session_hash"], old["session_block"], old["csrf"])
	if err := os.WriteFile(path, []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := LoadKeys(fakeEnv(nil), dir)
	if err != nil {
		t.Fatalf("LoadKeys after the rotation: %v", err)
	}
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"SessionHash", keys.SessionHash, hexKey(1)},
		{"CSRF", keys.CSRF, hexKey(3)},
		{"PreviousSessionHash", keys.PreviousSessionHash, old["session_hash"]},
		{"PreviousSessionBlock", keys.PreviousSessionBlock, old["session_block"]},
		{"PreviousCSRF", keys.PreviousCSRF, old["csrf"]},
	} {
		if got := hex.EncodeToString(c.got); got != c.want {
			t.Errorf("%s=%s, want %s", c.name, got, c.want)
		}
	}

	// Half a session pair is refused, from the file and the environment.
	half := strings.Replace(rotated, "previous_session_block=", "#previous_session_block=", 1)
	if err := os.WriteFile(path, []byte(half), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeys(fakeEnv(nil), dir); err == nil || !strings.Contains(err.Error(), "previous_session_block") {
		t.Errorf("half a previous session pair in the file: err=%v, want one naming previous_session_block", err)
	}
	env := secretEnv(0xab)
	env["ADMIT_SECRET_PREVIOUS_SESSION_HASH"] = hexKey(9)
	if _, err := LoadKeys(fakeEnv(env), t.TempDir()); err == nil {
		t.Error("half a previous session pair in the environment was accepted")
	}
	env["ADMIT_SECRET_PREVIOUS_SESSION_BLOCK"] = hexKey(8)
	env["ADMIT_SECRET_PREVIOUS_CSRF"] = hexKey(7)
	keys, err = LoadKeys(fakeEnv(env), t.TempDir())
	if err != nil {
		t.Fatalf("previous keys from the environment: %v", err)
	}
	if got, want := hex.EncodeToString(keys.PreviousCSRF), hexKey(7); got != want {
		t.Errorf("PreviousCSRF=%s, want %s", got, want)
	}
}

// TestLoadKeys_SystemdCredentialReplacesTheDataDirectorysFile: with a
// credential named "secrets" (LoadCredential=secrets:…), LoadKeys reads it
// and writes no file into the data directory; without one it falls back to
// the data directory.
func TestLoadKeys_SystemdCredentialReplacesTheDataDirectorysFile(t *testing.T) {
	source := t.TempDir()
	want, err := LoadKeys(fakeEnv(nil), source) // generates source/secrets
	if err != nil {
		t.Fatal(err)
	}
	creds := t.TempDir()
	b, err := os.ReadFile(filepath.Join(source, "secrets"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(creds, "secrets"), b, 0o400); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	got, err := LoadKeys(fakeEnv(map[string]string{"CREDENTIALS_DIRECTORY": creds}), data)
	if err != nil {
		t.Fatalf("LoadKeys from the credential: %v", err)
	}
	if !bytes.Equal(got.SessionHash, want.SessionHash) || !bytes.Equal(got.Counter, want.Counter) {
		t.Error("the keys differ from the credential's")
	}
	if _, err := os.Stat(filepath.Join(data, "secrets")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a secrets file was written into the data directory (stat: %v)", err)
	}
	// Other credentials only: the data directory's file, generated.
	if _, err := LoadKeys(fakeEnv(map[string]string{"CREDENTIALS_DIRECTORY": t.TempDir()}), data); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, "secrets")); err != nil {
		t.Errorf("no secrets file in the data directory without the credential: %v", err)
	}
}

func TestLoadKeys_AddsTheSessionTokensKeyToAnOlderSecretsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secrets")
	var old strings.Builder
	for i, n := range []string{"session_hash", "session_block", "csrf", "binding", "counter"} {
		fmt.Fprintf(&old, "%s=%s\n", n, strings.Repeat(fmt.Sprintf("%02x", i+1), 32))
	}
	if err := os.WriteFile(path, []byte(old.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := LoadKeys(fakeEnv(nil), dir)
	if err != nil {
		t.Fatalf("LoadKeys on an older secrets file: %v", err)
	}
	if len(keys.SessionTokens) != 32 || keys.Counter[0] != 5 {
		t.Fatalf("keys: session tokens %d bytes, counter %x", len(keys.SessionTokens), keys.Counter[:1])
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), old.String()) || !strings.Contains(string(b), "session_tokens=") {
		t.Fatalf("secrets file after the upgrade:\n%s", b)
	}
	again, err := LoadKeys(fakeEnv(nil), dir)
	if err != nil || string(again.SessionTokens) != string(keys.SessionTokens) {
		t.Fatalf("the added key changed on the next start: %v", err)
	}
}

// fakeEnv is an environment over a fixed map, so tests never read the real
// environment.
func fakeEnv(m map[string]string) config.Environment {
	return func(k string) string { return m[k] }
}

// LoadKeys is Load with the secrets source config.Load reads from env, as
// admit's commands do.
func LoadKeys(env config.Environment, dataDir string) (Keys, error) {
	cfg, err := config.Load(env)
	if err != nil {
		return Keys{}, err
	}
	return Load(cfg.Secrets, dataDir)
}
