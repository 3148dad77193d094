package systemtest

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"admit/internal/config"
	"admit/internal/pgtest"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// engineRun is one run of a test on one store engine: the environment
// lines that select it, and for PostgreSQL the test's own database.
type engineRun struct {
	name string
	// dbURL is the PostgreSQL database of this run; "" on SQLite.
	dbURL string
}

// env is the environment line selecting the run's engine, if any.
func (e engineRun) env() []string {
	if e.dbURL == "" {
		return nil
	}
	return []string{"ADMIT_DATABASE_URL=" + e.dbURL}
}

// forEachEngine runs fn once on SQLite and once on PostgreSQL, each in a
// subtest named for the engine; the PostgreSQL run gets a database of its
// own (pgtest.NewDatabase), and skips with pgtest's message without a
// server (fails under CI).
func forEachEngine(t *testing.T, fn func(t *testing.T, e engineRun)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, engineRun{name: "sqlite"}) })
	t.Run("postgres", func(t *testing.T) { fn(t, engineRun{name: "postgres", dbURL: pgtest.NewDatabase(t)}) })
}

// sharedKeys are ADMIT_SECRET_* lines with fresh keys, for servers that
// must share them.
func sharedKeys(tb testing.TB) []string {
	tb.Helper()
	var env []string
	for _, n := range config.SecretNames {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			tb.Fatal(err)
		}
		env = append(env, "ADMIT_SECRET_"+strings.ToUpper(n)+"="+hex.EncodeToString(b))
	}
	return env
}

// serveEnv is the environment of a built admit serving from data on
// 127.0.0.1:0, in development mode, with extra lines added.
func serveEnv(dir, data string, extra ...string) []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir,
		"ADMIT_ADDR=127.0.0.1:0", "ADMIT_DATA=" + data, "ADMIT_LITESTREAM_CONFIG=" + filepath.Join(dir, "no-litestream.yml"),
		"ADMIT_NETWORK_HOURLY_LIMIT=1000000",
	}, extra...)
}

// apiClient is a person's HTTP client: their cookies and, once signed in,
// their CSRF token.
type apiClient struct {
	c    *http.Client
	csrf string
}

// newAPIClient is a client with a cookie jar of its own.
func newAPIClient() *apiClient {
	jar, _ := cookiejar.New(nil)
	return &apiClient{c: &http.Client{Timeout: 30 * time.Second, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// signIn signs email in on the server at base through the development
// sign-in (whose link carries that server's key) and reads a CSRF token.
func (a *apiClient) signIn(tb testing.TB, base, devLink, email string) {
	tb.Helper()
	openDevLink(tb, a.c, devLink)
	resp, err := a.c.PostForm(base+"/dev/sign-in", url.Values{"email": {email}, "redirect_url": {"/me"}})
	if err != nil {
		tb.Fatalf("dev sign-in: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		tb.Fatalf("dev sign-in: status %d, want 303", resp.StatusCode)
	}
	a.csrf = a.csrfToken(tb, base)
}

// csrfToken reads GET /api/csrf on base.
func (a *apiClient) csrfToken(tb testing.TB, base string) string {
	tb.Helper()
	var tok struct {
		CSRFToken string `json:"csrfToken"`
	}
	if code := a.call(tb, base, "GET", "/api/csrf", nil, &tok); code != http.StatusOK || tok.CSRFToken == "" {
		tb.Fatalf("GET /api/csrf: status %d", code)
	}
	return tok.CSRFToken
}

// call sends a JSON request with the client's CSRF token and decodes a
// 2xx answer into out; it returns the status.
func (a *apiClient) call(tb testing.TB, base, method, path string, body, out any) int {
	tb.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.csrf != "" {
		req.Header.Set("X-CSRF-Token", a.csrf)
	}
	resp, err := a.c.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			tb.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// mustCall is call that fails the test unless the status is want.
func (a *apiClient) mustCall(tb testing.TB, base, method, path string, body, out any, want int) {
	tb.Helper()
	if got := a.call(tb, base, method, path, body, out); got != want {
		tb.Fatalf("%s %s: status %d, want %d", method, path, got, want)
	}
}

// entryJSON is an entry of the owner API.
type entryJSON struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	State string `json:"state"`
}

// demoProgramID finds the demo program through the owner API.
func demoProgramID(tb testing.TB, owner *apiClient, base string) string {
	tb.Helper()
	var ps struct {
		Programs []struct {
			ID   string `json:"id"`
			Slug string `json:"slug"`
		} `json:"programs"`
	}
	owner.mustCall(tb, base, "GET", "/api/owner/programs", nil, &ps, http.StatusOK)
	for _, p := range ps.Programs {
		if p.Slug == "demo" {
			return p.ID
		}
	}
	tb.Fatal("the owner has no demo program")
	return ""
}

// entryByEmail finds the entry of email in the program's queue.
func entryByEmail(tb testing.TB, owner *apiClient, base, programID, email string) entryJSON {
	tb.Helper()
	var page struct {
		Entries []entryJSON `json:"entries"`
	}
	owner.mustCall(tb, base, "GET", "/api/owner/programs/"+programID+"/entries?q="+url.QueryEscape(email), nil, &page, http.StatusOK)
	for _, e := range page.Entries {
		if e.Email == email {
			return e
		}
	}
	tb.Fatalf("no entry for %s", email)
	return entryJSON{}
}

// openPostgres opens the run's PostgreSQL database for the test to read.
func openPostgres(tb testing.TB, dbURL string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// TestContract_TheHTTPContractHoldsOnEachEngine walks the contract with
// the built binary on each engine: signup and its replay, the owner API
// (select, issue, record the send), redemption and the private content,
// removal with the private link, and the pages that depend on the engine.
// On PostgreSQL the data is in the database and no SQLite file is made.
func TestContract_TheHTTPContractHoldsOnEachEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := MustBuildAdmit(t)
	forEachEngine(t, func(t *testing.T, e engineRun) {
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		p := MustStartAdmit(t, bin, dir, serveEnv(dir, data, e.env()...))
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("admit's log:\n%s", p.stderr)
			}
		})
		base := p.URL
		pub := newAPIClient()
		version := demoNoticeVersion(t, pub.c, base)

		// Signup: the first answer shows the removal token, a replay not.
		const invited, removed = "invited.person@example.test", "removed.person@example.test"
		keys := map[string]string{}
		tokens := map[string]string{}
		for _, email := range []string{invited, removed, "waiting.person@example.test"} {
			keys[email] = fmt.Sprintf("00000000-0000-4000-8000-%012d", len(keys)+1)
			code, r := postSignup(t, pub.c, base, keys[email], email, version)
			if code != http.StatusAccepted || r.RemovalToken == "" {
				t.Fatalf("signup %s: %d token=%t", email, code, r.RemovalToken != "")
			}
			tokens[email] = r.RemovalToken
		}
		if code, r := postSignup(t, pub.c, base, keys[invited], invited, version); code != http.StatusAccepted || r.RemovalToken != "" {
			t.Fatalf("replay: %d token=%t, want 202 without a token", code, r.RemovalToken != "")
		}

		// The owner selects one entry, issues its invitation and records
		// the send.
		owner := newAPIClient()
		owner.signIn(t, base, p.DevLink, "owner@example.test")
		programID := demoProgramID(t, owner, base)
		entry := entryByEmail(t, owner, base, programID, invited)
		owner.mustCall(t, base, "POST", "/api/owner/programs/"+programID+"/entries/"+entry.ID+"/select",
			map[string]string{"reason": "meets_policy"}, nil, http.StatusOK)
		var issued struct {
			Invitation struct {
				ID string `json:"id"`
			} `json:"invitation"`
			Code string `json:"code"`
		}
		owner.mustCall(t, base, "POST", "/api/owner/programs/"+programID+"/entries/"+entry.ID+"/invitations",
			map[string]string{"requestKey": "00000000-0000-4000-8000-0000000000aa", "expiresAt": time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339)},
			&issued, http.StatusCreated)
		if issued.Code == "" {
			t.Fatal("the issued invitation carries no code")
		}
		owner.mustCall(t, base, "POST", "/api/owner/invitations/"+issued.Invitation.ID+"/delivery-record",
			map[string]string{"requestKey": "00000000-0000-4000-8000-0000000000ab", "channel": "email"}, nil, http.StatusOK)

		// The recipient redeems it and reads the private content.
		recipient := newAPIClient()
		recipient.signIn(t, base, p.DevLink, invited)
		var redeemed struct {
			State string `json:"state"`
		}
		recipient.mustCall(t, base, "POST", "/api/me/invitations/redeem", map[string]string{"code": issued.Code}, &redeemed, http.StatusOK)
		if redeemed.State != "active" {
			t.Fatalf("redeemed: state %q, want active", redeemed.State)
		}
		var content struct {
			Body string `json:"body"`
		}
		recipient.mustCall(t, base, "GET", "/api/me/early-access/demo", nil, &content, http.StatusOK)
		if !strings.Contains(content.Body, "admit demo") {
			t.Fatalf("private content %q", content.Body)
		}

		// Removal with the private link erases the address at once.
		var processed struct {
			Status string `json:"status"`
		}
		pub.mustCall(t, base, "POST", "/api/public/removals", map[string]string{"token": tokens[removed]}, &processed, http.StatusOK)
		var page struct {
			Entries []entryJSON `json:"entries"`
		}
		owner.mustCall(t, base, "GET", "/api/owner/programs/"+programID+"/entries?state=withdrawn", nil, &page, http.StatusOK)
		if len(page.Entries) != 1 || page.Entries[0].Email == removed {
			t.Fatalf("withdrawn entries after the removal: %+v, want one with its address erased", page.Entries)
		}

		// The pages that depend on the engine say which one runs.
		_, privacy := get(t, pub.c, base+"/privacy")
		_, console := get(t, owner.c, base+"/owner")
		if code, body := get(t, pub.c, base+"/readyz"); code != http.StatusOK {
			t.Fatalf("/readyz: %d %s", code, body)
		}
		_, dbErr := os.Stat(filepath.Join(data, "admit.db"))
		if e.dbURL == "" {
			if dbErr != nil {
				t.Errorf("no SQLite file in ADMIT_DATA: %v", dbErr)
			}
			if !strings.Contains(privacy, "The database overwrites the erased address") || strings.Contains(privacy, "PostgreSQL") {
				t.Error("the privacy page on SQLite does not state SQLite's erasure, or names PostgreSQL")
			}
			return
		}
		if !os.IsNotExist(dbErr) {
			t.Errorf("admit.db in ADMIT_DATA on PostgreSQL: %v", dbErr)
		}
		for _, name := range []string{"admit.db-wal", "admit.db-shm"} {
			if _, err := os.Stat(filepath.Join(data, name)); !os.IsNotExist(err) {
				t.Errorf("%s in ADMIT_DATA on PostgreSQL", name)
			}
		}
		if !strings.Contains(privacy, "keeps its data in a PostgreSQL database") || !strings.Contains(privacy, "vacuum") ||
			strings.Contains(privacy, "The database overwrites the erased address") {
			t.Error("the privacy page on PostgreSQL does not state PostgreSQL's erasure, or states SQLite's")
		}
		if !strings.Contains(console, "keeps its data in PostgreSQL") || strings.Contains(console, "litestream.yml</code> names no replica") {
			t.Error("the owner console's backup section on PostgreSQL does not say the backup is PostgreSQL's own")
		}
		pg := openPostgres(t, e.dbURL)
		var entries, grants, erased int
		if err := pg.QueryRow(`SELECT (SELECT count(*) FROM entries), (SELECT count(*) FROM grants),
			(SELECT count(*) FROM entries WHERE erased_at IS NOT NULL)`).Scan(&entries, &grants, &erased); err != nil {
			t.Fatal(err)
		}
		if entries != 3 || grants != 1 || erased != 1 {
			t.Errorf("in PostgreSQL: %d entries, %d grants, %d erased; want 3, 1, 1", entries, grants, erased)
		}
		if strings.Contains(p.stderr.String(), "@example.test") {
			t.Error("the log holds an address")
		}
	})
}
