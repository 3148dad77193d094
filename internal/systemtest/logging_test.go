package systemtest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

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
