package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"admit/backup"
	"admit/internal/testutil"

	"github.com/google/uuid"
)

// signupReply is the JSON body of a signup answer.
type signupReply struct {
	Status       string `json:"status"`
	RemovalToken string `json:"removalToken"`
}

// trySignup posts one JSON signup to the demo program.
func trySignup(c *http.Client, base, key, email string, version int) (int, signupReply, error) {
	body, _ := json.Marshal(map[string]any{"requestKey": key, "email": email, "noticeVersion": version, "permission": true})
	resp, err := c.Post(base+"/api/public/programs/demo/signups", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, signupReply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, signupReply{}, err
	}
	var r signupReply
	if resp.StatusCode == http.StatusAccepted {
		if err := json.Unmarshal(b, &r); err != nil {
			return 0, signupReply{}, fmt.Errorf("202 body %q: %w", b, err)
		}
	}
	return resp.StatusCode, r, nil
}

// postSignup is trySignup that fails the test on a transport error.
func postSignup(tb testing.TB, c *http.Client, base, key, email string, version int) (int, signupReply) {
	tb.Helper()
	code, r, err := trySignup(c, base, key, email, version)
	if err != nil {
		tb.Fatalf("signup: %v", err)
	}
	return code, r
}

// demoNoticeVersion reads the demo program's current notice version.
func demoNoticeVersion(tb testing.TB, c *http.Client, base string) int {
	tb.Helper()
	code, body := get(tb, c, base+"/api/public/programs/demo")
	var v struct {
		Notice struct {
			Version int `json:"version"`
		} `json:"notice"`
	}
	if err := json.Unmarshal([]byte(body), &v); code != http.StatusOK || err != nil || v.Notice.Version < 1 {
		tb.Fatalf("GET demo program: %d %q (%v)", code, body, err)
	}
	return v.Notice.Version
}

// admitBinary is the admit binary MustBuildAdmit builds, once per run of
// this package; TestMain removes it.
var admitBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// MustBuildAdmit builds the admit binary from the module root, the first
// time it is called in this package's run, and returns its path.
func MustBuildAdmit(tb testing.TB) string {
	tb.Helper()
	admitBinary.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			admitBinary.err = fmt.Errorf("the crash test builds the real binary and needs the go command: %w", err)
			return
		}
		if admitBinary.dir, err = os.MkdirTemp("", "admit-systemtest-"); err != nil {
			admitBinary.err = err
			return
		}
		bin := filepath.Join(admitBinary.dir, "admit")
		cmd := exec.Command(goBin, "build", "-ldflags=-s -w", "-o", bin, ".")
		cmd.Dir = moduleRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			admitBinary.err = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		admitBinary.path = bin
	})
	if admitBinary.err != nil {
		tb.Fatal(admitBinary.err)
	}
	return admitBinary.path
}

// process is one admit binary started by MustStartAdmit.
type process struct {
	URL string
	// DevLink is the development sign-in link printed after the address,
	// in development mode.
	DevLink string
	cmd     *exec.Cmd
	stderr  *testutil.SyncBuffer
	done    chan error    // receives Wait's result once
	exited  chan struct{} // closed when the process has been waited for
}

// MustStartAdmit starts `admit serve` from bin with env and waits for its
// "listening on" line. Cleanup kills it, by its own PID, if it still runs.
func MustStartAdmit(tb testing.TB, bin, dir string, env []string) *process {
	tb.Helper()
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = env
	p := &process{cmd: cmd, stderr: &testutil.SyncBuffer{}, done: make(chan error, 1), exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start admit: %v", err)
	}
	urls, links := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
			if m := devLinkLine.FindStringSubmatch(sc.Text()); m != nil {
				links <- m[1]
			}
		}
		p.done <- cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill() // this test's own child, by PID
			<-p.exited
		}
	})
	select {
	case p.URL = <-urls:
	case err := <-p.done:
		tb.Fatalf("admit exited before listening: %v\n%s", err, p.stderr)
	case <-time.After(15 * time.Second):
		tb.Fatalf("admit printed no listening line within 15s\n%s", p.stderr)
	}
	if devModeEnv(env) {
		select {
		case p.DevLink = <-links:
		case <-time.After(15 * time.Second):
			tb.Fatalf("admit printed no development sign-in link within 15s\n%s", p.stderr)
		}
	}
	return p
}

// signal sends sig to this process only and waits for it to exit.
func (p *process) signal(tb testing.TB, sig syscall.Signal) error {
	tb.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("signal %v: %v", sig, err)
	}
	select {
	case err := <-p.done:
		return err
	case <-time.After(20 * time.Second):
		tb.Fatalf("admit did not exit within 20s of %v\n%s", sig, p.stderr)
	}
	return nil
}

// accepted is one signup answered 202.
type accepted struct{ key, email string }

func TestCrash_SIGKILLDuringSignupsLosesNoAcceptedRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	start := time.Now()
	bin := MustBuildAdmit(t)
	t.Logf("built in %s", time.Since(start).Round(time.Millisecond))
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfgPath := filepath.Join(dir, "litestream.yml")
	// Replication runs too, as in production, and must survive the kill.
	yml := fmt.Sprintf("dbs:\n  - path: %s\n    replica:\n      type: file\n      path: %s\n", filepath.Join(data, "admit.db"), filepath.Join(dir, "replica"))
	if err := os.WriteFile(cfgPath, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir,
		"ADMIT_ADDR=127.0.0.1:0", "ADMIT_DATA=" + data, "ADMIT_LITESTREAM_CONFIG=" + cfgPath,
		"ADMIT_NETWORK_HOURLY_LIMIT=1000000",
	}

	first := MustStartAdmit(t, bin, dir, env)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	version := demoNoticeVersion(t, c, first.URL)
	dbPath := filepath.Join(data, "admit.db")
	before := signupTotals(t, dbPath) // read beside the running server (WAL)

	// The demo program takes 200 signups an hour: stay under it.
	const clients, maxAttempts = 16, 180
	killAt := 10 + rand.IntN(140) // after this many 202s, mid-stream
	t.Logf("SIGKILL after %d accepted signups", killAt)
	var (
		mu         sync.Mutex
		got        []accepted
		unanswered []accepted // sent, no answer: committed whole or not at all
		attempts   atomic.Int64
		killOnce   sync.Once
		killed     = make(chan struct{})
		wg         sync.WaitGroup
	)
	kill := func() {
		killOnce.Do(func() {
			// Only the PID this test started.
			_ = first.cmd.Process.Signal(syscall.SIGKILL)
			close(killed)
		})
	}
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := attempts.Add(1)
				if n > maxAttempts {
					return
				}
				select {
				case <-killed:
					return
				default:
				}
				key, email := uuid.NewString(), fmt.Sprintf("crash%d@example.test", n)
				code, r, err := trySignup(c, first.URL, key, email, version)
				if err != nil {
					// No answer: either outcome may hold, but only whole.
					mu.Lock()
					unanswered = append(unanswered, accepted{key, email})
					mu.Unlock()
					continue
				}
				if code != http.StatusAccepted || r.RemovalToken == "" {
					t.Errorf("signup %d before the kill: status=%d token=%t", n, code, r.RemovalToken != "")
					continue
				}
				mu.Lock()
				got = append(got, accepted{key, email})
				enough := len(got) >= killAt
				mu.Unlock()
				if enough {
					kill()
				}
			}
		}()
	}
	wg.Wait()
	kill() // in case every attempt finished first
	select {
	case <-first.done:
	case <-time.After(10 * time.Second):
		t.Fatal("admit did not die after SIGKILL")
	}
	if len(got) == 0 {
		t.Fatal("no signup was accepted before the kill")
	}
	t.Logf("%d signups answered 202 before the kill, %d sent and unanswered", len(got), len(unanswered))

	// Restart on the same data directory.
	t.Logf("killed at %s", time.Since(start).Round(time.Millisecond))
	second := MustStartAdmit(t, bin, dir, env)
	t.Logf("restarted at %s", time.Since(start).Round(time.Millisecond))
	for _, a := range got {
		code, r, err := trySignup(c, second.URL, a.key, a.email, version)
		if err != nil {
			t.Fatalf("replay after restart: %v", err)
		}
		if code != http.StatusAccepted || r.RemovalToken != "" {
			t.Errorf("replay of an accepted key after the crash: status=%d removalToken=%t, want 202 without a token", code, r.RemovalToken != "")
		}
	}
	if err := second.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("admit after SIGTERM: %v\n%s", err, second.stderr)
	}

	t.Logf("stopped at %s", time.Since(start).Round(time.Millisecond))
	if err := backup.IntegrityCheck(context.Background(), dbPath); err != nil {
		t.Errorf("after the crash: %v", err)
	}
	stored := storedEmails(t, dbPath)
	if len(stored) < len(got) {
		t.Errorf("entries=%d, fewer than the %d signups answered 202", len(stored), len(got))
	}
	for _, a := range got {
		if !stored[a.email] {
			t.Errorf("signup %s was answered 202 but has no entry after the crash", a.email)
		}
	}
	checkNoPartialSignups(t, dbPath, before, unanswered)
}

// signupCounts are the rows one accepted new-address signup adds to each
// table it writes.
type signupCounts struct {
	entries, receipts, events, admitted int
}

// signupTotals counts the rows signups write: entries, receipts, signup
// audit events and the hour buckets' admitted counts, over all programs.
func signupTotals(tb testing.TB, path string) signupCounts {
	tb.Helper()
	db := openReadOnly(tb, path)
	var c signupCounts
	err := db.QueryRow(`SELECT
		(SELECT count(*) FROM entries),
		(SELECT count(*) FROM signup_receipts),
		(SELECT count(*) FROM audit_events WHERE event_type = 'signup'),
		(SELECT coalesce(sum(admitted_count), 0) FROM intake_hours)`).Scan(&c.entries, &c.receipts, &c.events, &c.admitted)
	if err != nil {
		tb.Fatalf("count signup rows: %v", err)
	}
	return c
}

// openReadOnly opens the database at path for reading only.
func openReadOnly(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?"+url.Values{"mode": {"ro"}}.Encode())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// checkNoPartialSignups: every signup transaction the kill interrupted
// left all of its rows or none. Each request that got no answer has its
// entry, receipt and audit event together or none of them; over all
// requests the new entries, receipts, signup events and hour-bucket counts
// grew by the same number; and the per-state counts match the entries.
func checkNoPartialSignups(t *testing.T, path string, before signupCounts, unanswered []accepted) {
	t.Helper()
	db := openReadOnly(t, path)
	committed := 0
	for _, u := range unanswered {
		var entries, receipts, events int
		err := db.QueryRow(`SELECT
			(SELECT count(*) FROM entries WHERE email_key = ?1),
			(SELECT count(*) FROM signup_receipts WHERE request_key = ?2),
			(SELECT count(*) FROM audit_events WHERE event_type = 'signup'
				AND entry_id IN (SELECT id FROM entries WHERE email_key = ?1))`, u.email, u.key).Scan(&entries, &receipts, &events)
		if err != nil {
			t.Fatalf("read unanswered signup: %v", err)
		}
		switch [3]int{entries, receipts, events} {
		case [3]int{1, 1, 1}:
			committed++
		case [3]int{0, 0, 0}:
		default:
			t.Errorf("unanswered signup %s left part of its rows: entries=%d receipts=%d signup events=%d",
				u.email, entries, receipts, events)
		}
	}
	t.Logf("of %d unanswered signups, %d committed whole and %d left nothing", len(unanswered), committed, len(unanswered)-committed)

	after := signupTotals(t, path)
	grew := signupCounts{after.entries - before.entries, after.receipts - before.receipts,
		after.events - before.events, after.admitted - before.admitted}
	if grew.receipts != grew.entries || grew.events != grew.entries || grew.admitted != grew.entries {
		t.Errorf("rows added during the crash run disagree (each signup adds one of each): %+v", grew)
	}

	rows, err := db.Query(`SELECT c.program_id, c.state, c.n, (SELECT count(*) FROM entries e
		WHERE e.program_id = c.program_id AND e.state = c.state) FROM entry_state_counts c`)
	if err != nil {
		t.Fatalf("read state counts: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var program, state string
		var kept, counted int
		if err := rows.Scan(&program, &state, &kept, &counted); err != nil {
			t.Fatal(err)
		}
		if kept != counted {
			t.Errorf("program %s: %s count kept=%d, entries=%d", program, state, kept, counted)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// storedEmails reads every entry's email from the database at path.
func storedEmails(tb testing.TB, path string) map[string]bool {
	tb.Helper()
	q := url.Values{"mode": {"ro"}}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT email_key FROM entries`)
	if err != nil {
		tb.Fatalf("read entries: %v", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			tb.Fatal(err)
		}
		out[strings.ToLower(e)] = true
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}
