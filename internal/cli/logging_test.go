package cli

import (
	"admit/internal/config"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
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

func TestRun_ServeLogsJSONAccessLinesWithRequestIDs(t *testing.T) {
	srv := MustRunServe(t, map[string]string{"ADMIT_ADDR": "127.0.0.1:0", "ADMIT_DATA": t.TempDir(),
		"ADMIT_LOG_FORMAT": "json", "ADMIT_REQUEST_ID_HEADER": "X-Request-ID"})
	req, _ := http.NewRequest("GET", srv.URL+"/waitlist/demo?email=heidi%40example.com", nil)
	req.Header.Set("X-Request-ID", "proxy-id-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-ID"); got != "proxy-id-1" {
		t.Fatalf("X-Request-ID=%q, want the trusted proxy's", got)
	}
	if err := srv.Stop(t); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(srv.Stderr.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stderr line is not JSON: %q", line)
		}
		found = found || m["msg"] == "request" && m["route"] == "GET /waitlist/{slug}" && m["request_id"] == "proxy-id-1"
	}
	if !found || strings.Contains(srv.Stderr.String(), "heidi") {
		t.Fatalf("want one JSON access line for the request and no address:\n%s", srv.Stderr.String())
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
