package systemtest

import (
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"admit/internal/pgtest"
	"admit/store"

	"github.com/google/uuid"
)

// TestTwoServers_OnOnePostgreSQLDatabase runs two built admit servers on
// one PostgreSQL database, each with its own port and data directory and
// the same server keys: a session, its CSRF token and request keys made on
// one work on the other; a queue cap holds exactly under 64 clients split
// between them; a SIGKILL of one mid-load loses no acknowledged signup; and
// the killed one starts again beside the other and serves.
func TestTwoServers_OnOnePostgreSQLDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	dbURL := pgtest.NewDatabase(t)
	bin := MustBuildAdmit(t)
	dir := t.TempDir()
	keys := sharedKeys(t)
	envOf := func(name string) []string {
		return serveEnv(dir, filepath.Join(dir, name), append([]string{"ADMIT_DATABASE_URL=" + dbURL}, keys...)...)
	}
	// The first start seeds the demo; the second finds it there.
	a := MustStartAdmit(t, bin, dir, envOf("a"))
	b := MustStartAdmit(t, bin, dir, envOf("b"))
	pg := openPostgres(t, dbURL)
	// Each lease of once-only work is held by one of the two.
	holderA, holderB := leaseHolder(t, a), leaseHolder(t, b)
	waitForLeases(t, pg, func(h string) bool { return h == holderA || h == holderB })

	// A session made on A, with A's CSRF token, works on B.
	owner := newAPIClient()
	owner.signIn(t, a.URL, a.DevLink, "owner@example.test")
	programID := demoProgramID(t, owner, b.URL)
	var prog struct {
		Revision int64 `json:"revision"`
	}
	owner.mustCall(t, b.URL, "GET", "/api/owner/programs/"+programID, nil, &prog, http.StatusOK)
	const queueCap = 100
	owner.mustCall(t, b.URL, "PATCH", "/api/owner/programs/"+programID,
		map[string]any{"expectedRevision": prog.Revision, "queueCap": queueCap, "hourlyCap": 100000}, &prog, http.StatusOK)

	pub := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	version := demoNoticeVersion(t, pub, a.URL)

	// A signup's request key made on A is a replay on B.
	key := uuid.NewString()
	if code, r := postSignup(t, pub, a.URL, key, "first.signup@example.test", version); code != http.StatusAccepted || r.RemovalToken == "" {
		t.Fatalf("signup on A: %d token=%t", code, r.RemovalToken != "")
	}
	if code, r := postSignup(t, pub, b.URL, key, "first.signup@example.test", version); code != http.StatusAccepted || r.RemovalToken != "" {
		t.Fatalf("the same signup on B: %d token=%t, want its replay: 202 without a token", code, r.RemovalToken != "")
	}
	// An owner's keyed write made on B is replayed on A, not repeated.
	entry := entryByEmail(t, owner, a.URL, programID, "first.signup@example.test")
	owner.mustCall(t, b.URL, "POST", "/api/owner/programs/"+programID+"/entries/"+entry.ID+"/select",
		map[string]string{"reason": "meets_policy"}, nil, http.StatusOK)
	issue := map[string]string{"requestKey": uuid.NewString(), "expiresAt": time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339)}
	var first, again struct {
		Invitation struct {
			ID string `json:"id"`
		} `json:"invitation"`
		Code string `json:"code"`
	}
	owner.mustCall(t, b.URL, "POST", "/api/owner/programs/"+programID+"/entries/"+entry.ID+"/invitations", issue, &first, http.StatusCreated)
	owner.mustCall(t, a.URL, "POST", "/api/owner/programs/"+programID+"/entries/"+entry.ID+"/invitations", issue, &again, http.StatusOK)
	if again.Invitation.ID != first.Invitation.ID || again.Code != "" || first.Code == "" {
		t.Fatalf("issue on B then its replay on A: %q then %q (code again: %t)", first.Invitation.ID, again.Invitation.ID, again.Code != "")
	}

	// The queue cap holds exactly under 64 clients split between A and B.
	servers := []string{a.URL, b.URL}
	const clients, attempts = 64, 3 * queueCap
	var (
		next, acceptedN, full atomic.Int64
		wg                    sync.WaitGroup
	)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := next.Add(1); n <= attempts; n = next.Add(1) {
				code, err := signupPastShedding(pub, servers[i%2], uuid.NewString(), fmt.Sprintf("cap%d@example.test", n), version)
				switch {
				case err != nil:
					t.Errorf("signup %d: %v", n, err)
				case code == http.StatusAccepted:
					acceptedN.Add(1)
				case code == http.StatusTooManyRequests:
					full.Add(1)
				default:
					t.Errorf("signup %d: status %d", n, code)
				}
			}
		}()
	}
	wg.Wait()
	var stored int
	if err := pg.QueryRow(`SELECT count(*) FROM entries WHERE program_id = $1`, programID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	// The first signup holds one place of the cap.
	if got, want := acceptedN.Load(), int64(queueCap-1); got != want || stored != queueCap {
		t.Fatalf("cap %d: %d signups accepted (want %d), %d refused as full, %d entries stored (want %d)",
			queueCap, got, want, full.Load(), stored, queueCap)
	}

	// SIGKILL A mid-load: every signup answered 202, on either server, is
	// in the database afterwards.
	owner.mustCall(t, b.URL, "GET", "/api/owner/programs/"+programID, nil, &prog, http.StatusOK)
	owner.mustCall(t, b.URL, "PATCH", "/api/owner/programs/"+programID,
		map[string]any{"expectedRevision": prog.Revision, "queueCap": 100000}, &prog, http.StatusOK)
	const load = 600
	killAfter := int64(60)
	var (
		mu          sync.Mutex
		acked       []string
		onA         atomic.Int64
		killOnce    sync.Once
		killed      = make(chan struct{})
		unanswered  atomic.Int64
		loadCounter atomic.Int64
	)
	kill := func() {
		killOnce.Do(func() {
			_ = a.cmd.Process.Signal(syscall.SIGKILL) // the PID this test started
			close(killed)
		})
	}
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := loadCounter.Add(1); n <= load; n = loadCounter.Add(1) {
				base := servers[i%2]
				if base == a.URL {
					select {
					case <-killed:
						base = b.URL // A's clients move to B, as a load balancer would send them
					default:
					}
				}
				email := fmt.Sprintf("load%d@example.test", n)
				code, err := signupPastShedding(pub, base, uuid.NewString(), email, version)
				if err != nil {
					unanswered.Add(1) // sent to A as it died: either outcome may hold
					continue
				}
				if code != http.StatusAccepted {
					t.Errorf("signup %d: status %d", n, code)
					continue
				}
				mu.Lock()
				acked = append(acked, email)
				mu.Unlock()
				if base == a.URL && onA.Add(1) == killAfter {
					kill()
				}
			}
		}()
	}
	wg.Wait()
	kill()
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		t.Fatal("A did not die after SIGKILL")
	}
	t.Logf("%d signups acknowledged (%d by A before the kill), %d unanswered", len(acked), onA.Load(), unanswered.Load())
	rows, err := pg.Query(`SELECT email_key FROM entries WHERE program_id = $1`, programID)
	if err != nil {
		t.Fatal(err)
	}
	inDB := map[string]bool{}
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		inDB[strings.ToLower(e)] = true
	}
	rows.Close()
	lost := 0
	for _, e := range acked {
		if !inDB[e] {
			lost++
		}
	}
	if lost > 0 || len(acked) < load/2 {
		t.Fatalf("%d of %d acknowledged signups are not in the database", lost, len(acked))
	}

	// A's leases, if it held any, pass to B once they expire.
	waitForLeases(t, pg, func(h string) bool { return h == holderB })

	// A starts again beside B, and serves: the shared session too.
	a2 := MustStartAdmit(t, bin, dir, envOf("a"))
	if code, body := get(t, pub, a2.URL+"/readyz"); code != http.StatusOK {
		t.Fatalf("restarted A: /readyz %d %s", code, body)
	}
	if code, r := postSignup(t, pub, a2.URL, uuid.NewString(), "after.restart@example.test", version); code != http.StatusAccepted || r.RemovalToken == "" {
		t.Fatalf("signup on the restarted A: %d", code)
	}
	owner.mustCall(t, a2.URL, "GET", "/api/owner/programs/"+programID, nil, &prog, http.StatusOK)
	if code, body := get(t, pub, b.URL+"/readyz"); code != http.StatusOK {
		t.Fatalf("B after A's restart: /readyz %d %s", code, body)
	}
	for _, p := range []*process{a2, b} {
		if err := p.signal(t, syscall.SIGTERM); err != nil {
			t.Errorf("stop: %v\n%s", err, p.stderr)
		}
		if s := p.stderr.String(); strings.Contains(s, "@example.test") || strings.Contains(s, "password") {
			t.Error("a server's log holds an address or a password")
		}
	}
}

// signupPastShedding posts a signup and, while it is answered 503 (the
// server shedding load: nothing stored, "Retry-After: 1"), sends the same
// request again, as a client does; it returns the first other answer.
func signupPastShedding(c *http.Client, base, key, email string, version int) (int, error) {
	for range 100 {
		code, _, err := trySignup(c, base, key, email, version)
		if err != nil || code != http.StatusServiceUnavailable {
			return code, err
		}
	}
	return http.StatusServiceUnavailable, nil
}

// leaseHolderLine is the log line that names a server's lease holder ID.
var leaseHolderLine = regexp.MustCompile(`msg="background work runs under leases" holder=(\S+)`)

// leaseHolder reads the holder ID the server's log names.
func leaseHolder(tb testing.TB, p *process) string {
	tb.Helper()
	m := leaseHolderLine.FindStringSubmatch(p.stderr.String())
	if m == nil {
		tb.Fatalf("the log names no lease holder:\n%s", p.stderr)
	}
	return m[1]
}

// waitForLeases waits until the sweeper's and the retirer's leases are
// both held (unexpired) by holders ok accepts. A lease lasts
// store.LeaseTTL, so a killed holder's passes within that.
func waitForLeases(tb testing.TB, pg *sql.DB, ok func(holder string) bool) {
	tb.Helper()
	deadline := time.Now().Add(3 * store.LeaseTTL) // a guard; takeover comes within one
	for {
		held := 0
		rows, err := pg.Query(`SELECT holder FROM leases WHERE name IN ('sweeper', 'retirer')
			AND expires_at > (extract(epoch FROM clock_timestamp()) * 1000)::bigint`)
		if err != nil {
			tb.Fatal(err)
		}
		for rows.Next() {
			var h string
			if err := rows.Scan(&h); err != nil {
				tb.Fatal(err)
			}
			if ok(h) {
				held++
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			tb.Fatal(err)
		}
		if held == 2 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("after %v the sweeper's and the retirer's leases are not both held as expected", 3*store.LeaseTTL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
