package systemtest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"admit/store"

	"github.com/google/uuid"
)

// seedWaiting inserts n waiting entries into the program, admit stopped,
// as many signups would leave them.
func seedWaiting(tb testing.TB, path, programID string, n int) {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	var notice string
	if err := tx.QueryRow(`SELECT current_notice_id FROM programs WHERE id = ?`, programID).Scan(&notice); err != nil {
		tb.Fatalf("read the notice: %v", err)
	}
	stmt, err := tx.Prepare(`INSERT INTO entries (id, program_id, email_key, notice_id, permission_at, state,
		created_at, updated_at, removal_hash) VALUES (?, ?, ?, ?, ?, 'waiting', ?, ?, ?)`)
	if err != nil {
		tb.Fatal(err)
	}
	defer stmt.Close()
	start := time.Now().Add(-time.Duration(n) * time.Second).UnixMilli()
	for i := range n {
		id := uuid.NewString()
		at := start + int64(i)*1000
		hash := sha256.Sum256([]byte(id))
		if _, err := stmt.Exec(id, programID, fmt.Sprintf("seed-%06d@example.test", i), notice, at, at, at, hash[:]); err != nil {
			tb.Fatalf("seed entry %d: %v", i, err)
		}
	}
	if err := store.RecountEntries(context.Background(), tx, programID); err != nil {
		tb.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// retirementState reads, beside a running admit or after it, whether the
// program's retirement is pending, how many entries it has reached and how
// many still have no erasure date.
func retirementState(tb testing.TB, path, programID string) (pending bool, done, total, undated int64) {
	tb.Helper()
	db := openReadOnly(tb, path)
	if err := db.QueryRow(`SELECT retire_pending, retire_done, retire_total,
		(SELECT count(*) FROM entries WHERE program_id = ?1 AND erase_after IS NULL AND erased_at IS NULL)
		FROM programs WHERE id = ?1`, programID).Scan(&pending, &done, &total, &undated); err != nil {
		tb.Fatalf("read the retirement: %v", err)
	}
	return pending, done, total, undated
}

// ownerAPI signs the demo owner in with the development sign-in and
// returns a client holding the session and its CSRF token.
func ownerAPI(tb testing.TB, base, devLink string) (*http.Client, string) {
	tb.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Timeout: 20 * time.Second, Jar: jar}
	openDevLink(tb, c, devLink)
	resp, err := c.PostForm(base+"/dev/sign-in", url.Values{"email": {"owner@example.test"}, "redirect_url": {"/owner"}})
	if err != nil {
		tb.Fatalf("dev sign-in: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	resp, err = c.Get(base + "/api/csrf")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		CSRFToken string `json:"csrfToken"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.CSRFToken == "" {
		tb.Fatalf("GET /api/csrf: %d %v", resp.StatusCode, err)
	}
	return c, tok.CSRFToken
}

func TestServe_SIGTERMDuringALargeRetirementExitsPromptlyAndTheNextStartFinishesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := MustBuildAdmit(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	dbPath := filepath.Join(data, "admit.db")
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir,
		"ADMIT_ADDR=127.0.0.1:0", "ADMIT_DATA=" + data, "ADMIT_LITESTREAM_CONFIG=" + filepath.Join(dir, "no-litestream.yml"),
	}

	// The first start seeds the demo program; admit stopped, it gets a
	// large queue.
	first := MustStartAdmit(t, bin, dir, env)
	var programID string
	if err := openReadOnly(t, dbPath).QueryRow(`SELECT id FROM programs WHERE public_slug = 'demo'`).Scan(&programID); err != nil {
		t.Fatalf("find the demo program: %v", err)
	}
	if err := first.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("first stop: %v\n%s", err, first.stderr)
	}
	const n = 60000
	seedWaiting(t, dbPath, programID, n)

	second := MustStartAdmit(t, bin, dir, env)
	c, csrf := ownerAPI(t, second.URL, second.DevLink)
	var p struct {
		Revision  int64   `json:"revision"`
		RetiredAt *string `json:"retiredAt"`
	}
	resp, err := c.Get(second.URL + "/api/owner/programs/" + programID)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	req, _ := http.NewRequest(http.MethodPost, second.URL+"/api/owner/programs/"+programID+"/retire",
		strings.NewReader(fmt.Sprintf(`{"expectedRevision":%d,"confirm":"demo"}`, p.Revision)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-CSRF-Token", csrf)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatalf("retire: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("retire: %d %s", resp.StatusCode, body)
	}
	// The answer comes at the retirement's commit, before its steps have
	// dated the queue: the retirer runs them after it.
	if pending, done, total, _ := retirementState(t, dbPath, programID); !pending || total != n || done >= total {
		t.Fatalf("when the retirement answered: pending=%v, %d of %d entries reached; want it still pending", pending, done, total)
	}

	// A stop now ends the retirer between two steps: admit exits cleanly,
	// well within its shutdown bound, however much is left.
	began := time.Now()
	if err := second.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("stop during the retirement: %v\n%s", err, second.stderr)
	}
	took := time.Since(began)
	pending, done, total, _ := retirementState(t, dbPath, programID)
	t.Logf("SIGTERM to exit: %s; stopped with %d of %d entries reached (pending=%v)", took.Round(time.Millisecond), done, total, pending)
	if took > 5*time.Second {
		t.Fatalf("SIGTERM to exit took %s during a retirement, want well within the 10 s shutdown bound", took)
	}

	// The next start resumes the retirement and finishes it.
	third := MustStartAdmit(t, bin, dir, env)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pending, done, total, undated := retirementState(t, dbPath, programID)
		if !pending {
			if done != total || undated != 0 {
				t.Fatalf("finished retirement: %d of %d entries reached, %d without an erasure date", done, total, undated)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the retirement still pending 2 minutes after the restart: %d of %d entries reached", done, total)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := third.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("third stop: %v\n%s", err, third.stderr)
	}
}
