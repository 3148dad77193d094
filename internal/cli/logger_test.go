package cli

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"admit/internal/config"
)

func TestNewLogger_FormatAndLevelFromEnvironment(t *testing.T) {
	var b strings.Builder
	logger, err := loggerFromEnv(fakeEnv(map[string]string{"ADMIT_LOG_FORMAT": "json", "ADMIT_LOG_LEVEL": "warn"}), &b)
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("hidden")
	logger.Warn("shown", "k", 1)
	var m map[string]any
	if err := json.Unmarshal([]byte(b.String()), &m); err != nil || m["msg"] != "shown" || m["level"] != "WARN" {
		t.Fatalf("json at warn wrote %q (%v)", b.String(), err)
	}

	b.Reset()
	logger, err = loggerFromEnv(fakeEnv(nil), &b)
	if err != nil {
		t.Fatal(err)
	}
	logger.Debug("hidden")
	logger.Info("shown")
	if got := b.String(); !strings.HasPrefix(got, "time=") || !strings.Contains(got, "level=INFO msg=shown") || strings.Contains(got, "hidden") {
		t.Fatalf("the default (text, info) wrote %q", got)
	}

	for _, env := range []map[string]string{{"ADMIT_LOG_FORMAT": "xml"}, {"ADMIT_LOG_LEVEL": "verbose"}} {
		if _, err := loggerFromEnv(fakeEnv(env), &b); err == nil {
			t.Errorf("%v accepted", env)
		}
	}
}

// loggerFromEnv is the logger serve makes from env's configuration, or
// the configuration's error.
func loggerFromEnv(env config.Environment, w io.Writer) (*slog.Logger, error) {
	cfg, err := config.Load(env)
	if err != nil {
		return nil, err
	}
	return newLogger(cfg.Log, w), nil
}
