package systemtest

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"admit/migrations"
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

// The migrations a start applies are logged one line each, by version and
// name, in order; a start with nothing to apply logs none.
func TestRun_ServeLogsEachMigrationItApplies(t *testing.T) {
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(names) < 2 {
		t.Fatalf("embedded migrations: %v %v", names, err)
	}
	sort.Strings(names)
	data := t.TempDir()
	env := map[string]string{"ADMIT_ADDR": "127.0.0.1:0", "ADMIT_DATA": data, "ADMIT_LOG_FORMAT": "json"}
	migrated := func(stderr string) []string {
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "migrated" {
				got = append(got, fmt.Sprintf("%v %v", m["version"], m["name"]))
			}
		}
		return got
	}
	srv := MustRunServe(t, env)
	if err := srv.Stop(t); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range names {
		v, _ := strconv.Atoi(strings.SplitN(n, "_", 2)[0])
		want = append(want, fmt.Sprintf("%d %s", v, n))
	}
	if got := migrated(srv.Stderr.String()); !slices.Equal(got, want) {
		t.Fatalf("first start logged migrations\n%q\nwant\n%q", got, want)
	}
	again := MustRunServe(t, env)
	if err := again.Stop(t); err != nil {
		t.Fatal(err)
	}
	if got := migrated(again.Stderr.String()); len(got) != 0 {
		t.Fatalf("second start logged migrations %q, want none", got)
	}
}
