package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"admit/internal/datalock"
	"admit/internal/testutil"
	"admit/migrations"
	"admit/store"
)

// binaryEnv is the environment a test's admit process runs with: the
// development identity on a loopback port, data in dir/data, no backup.
func binaryEnv(dir string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir,
		"ADMIT_ADDR=127.0.0.1:0", "ADMIT_DATA=" + filepath.Join(dir, "data"),
		"ADMIT_LITESTREAM_CONFIG=" + filepath.Join(dir, "no-litestream.yml"),
	}
}

// cmdResult is how one admit command ended.
type cmdResult struct {
	stdout, stderr string
	code           int
}

// runAdmit runs bin with args to completion (at most 30 s) and returns
// its output and exit status.
func runAdmit(tb testing.TB, bin, dir string, env []string, args ...string) cmdResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cmdResult{stdout: stdout.String(), stderr: stderr.String()}
	if ee := new(exec.ExitError); errors.As(err, &ee) {
		res.code = ee.ExitCode()
	} else if err != nil {
		tb.Fatalf("admit %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		tb.Fatalf("admit %s did not finish within 30s:\n%s", strings.Join(args, " "), res.stderr)
	}
	return res
}

// mustRefuseServe starts `admit serve` and expects it to exit non-zero
// without ever listening; it returns the process's stderr and how long it
// ran. A server that prints its address is killed by its PID and fails
// the test.
func mustRefuseServe(tb testing.TB, bin, dir string, env []string) (string, time.Duration) {
	tb.Helper()
	cmd := exec.Command(bin, "serve")
	cmd.Dir, cmd.Env = dir, env
	stderr := &testutil.SyncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start admit: %v", err)
	}
	listened := make(chan string, 1)
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "listening on ") {
				listened <- sc.Text()
			}
		}
		exited <- cmd.Wait()
	}()
	select {
	case line := <-listened:
		_ = cmd.Process.Kill() // this test's own child, by PID
		<-exited
		tb.Fatalf("a refused admit serve started: %s\n%s", line, stderr)
	case err := <-exited:
		ee := new(exec.ExitError)
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			tb.Fatalf("admit serve exited with %v, want a non-zero status\n%s", err, stderr)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		tb.Fatalf("admit serve neither listened nor exited within 30s\n%s", stderr)
	}
	return stderr.String(), time.Since(start)
}

// lockHolderPID reads the PID admit wrote in the data directory's lock file.
func lockHolderPID(tb testing.TB, data string) int {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(data, "admit.lock"))
	if err != nil {
		tb.Fatalf("read the lock file: %v", err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		tb.Fatalf("lock file %q holds no PID", b)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		tb.Fatalf("lock file %q: %v", b, err)
	}
	return pid
}

func TestDataDir_OneServerPerDataDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := MustBuildAdmit(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	env := binaryEnv(dir)

	first := MustStartAdmit(t, bin, dir, env)
	pid := first.cmd.Process.Pid
	wantPID := fmt.Sprintf("PID %d", pid)

	// A second server on the same directory refuses at once, naming the
	// directory and the first server's PID.
	stderr, took := mustRefuseServe(t, bin, dir, env)
	for _, want := range []string{data, wantPID, "one server per data directory"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("second serve's message lacks %q:\n%s", want, stderr)
		}
	}
	// At once: it did not wait for the database (whose busy timeout is
	// store.BusyTimeout) or for anything else.
	if took >= store.BusyTimeout {
		t.Errorf("the second serve took %s to exit", took)
	}
	if got := lockHolderPID(t, data); got != pid {
		t.Fatalf("lock file names PID %d, want the server's %d", got, pid)
	}

	// Beside the running server: migrate and a restore into the live
	// database are refused, naming the server; owner commands (ordinary
	// transactions) and migrate -status run.
	if r := runAdmit(t, bin, dir, env, "migrate"); r.code == 0 || !strings.Contains(r.stderr, wantPID) || !strings.Contains(r.stderr, data) {
		t.Errorf("migrate beside a server: exit %d, stderr %q; want a refusal naming %s and %s", r.code, r.stderr, data, wantPID)
	}
	if r := runAdmit(t, bin, dir, env, "owner", "add", "--workspace", "Acme", "--user", "user_1"); r.code != 0 {
		t.Fatalf("owner add beside a server: exit %d\n%s", r.code, r.stderr)
	}
	r := runAdmit(t, bin, dir, env, "owner", "list", "--workspace", "Acme")
	if r.code != 0 {
		t.Fatalf("owner list beside a server: exit %d\n%s", r.code, r.stderr)
	}
	if got, want := ownerStatus(t, r.stdout, "user_1"), "active"; got != want {
		t.Fatalf("owner list beside a server: user_1 is %q, want %q", got, want)
	}
	if r := runAdmit(t, bin, dir, env, "migrate", "-status"); r.code != 0 || !strings.Contains(r.stdout, "up to date") {
		t.Errorf("migrate -status beside a server: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runAdmit(t, bin, dir, env, "restore", "-o", filepath.Join(data, "admit.db")); r.code == 0 || !strings.Contains(r.stderr, wantPID) {
		t.Errorf("restore into the live database beside a server: exit %d, stderr %q; want a refusal naming %s", r.code, r.stderr, wantPID)
	}
	// The server still serves, and its lock is still its own.
	if code, body := get(t, newClient(), first.URL+"/readyz"); code != 200 {
		t.Fatalf("the first server after the refusals: /readyz %d %s", code, body)
	}
	if got := lockHolderPID(t, data); got != pid {
		t.Fatalf("after the refusals the lock file names PID %d, want %d", got, pid)
	}

	// Killed, the first server's lock goes with it: a new server starts.
	_ = first.cmd.Process.Kill() // the PID this test started
	<-first.exited
	second := MustStartAdmit(t, bin, dir, env)
	if got, want := lockHolderPID(t, data), second.cmd.Process.Pid; got != want {
		t.Fatalf("after the restart the lock file names PID %d, want the new server's %d", got, want)
	}
	if code, body := get(t, newClient(), second.URL+"/readyz"); code != 200 {
		t.Fatalf("the restarted server: /readyz %d %s", code, body)
	}
}

func TestDataDir_OwnerCommandDoesNotMigrateBesideAServer(t *testing.T) {
	data := t.TempDir()
	env := map[string]string{"ADMIT_DATA": data}
	mustRunCmd(t, env, "owner", "add", "--workspace", "Acme", "--user", "user_1")
	// The newest migration "pending" (a newer binary beside an older
	// server), and the directory locked as a server locks it.
	execSQL(t, filepath.Join(data, "admit.db"), `DELETE FROM goose_db_version WHERE version_id = ?`, store.KnownVersion())
	lock, err := datalock.Take(data, "serve")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	_, err = runCmd(t, env, "owner", "list", "--workspace", "Acme")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("PID %d", os.Getpid())) || !strings.Contains(err.Error(), "migrations") {
		t.Fatalf("owner list beside a server, migrations pending: err=%v, want a refusal naming the migrations and the server's PID", err)
	}
	s, err := store.ReadSchema(context.Background(), filepath.Join(data, "admit.db"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Pending) != 1 {
		t.Fatalf("pending migrations after the refusal: %v, want the one left pending", s.Pending)
	}
}

// execSQL runs one statement on the database at path, outside admit.
func execSQL(tb testing.TB, path, query string, args ...any) {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query, args...); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
}

// newerAdmitVersion is a migration no admit embeds: a database that has it
// was migrated by a newer binary.
const newerAdmitVersion = 99

// markMigratedByNewerAdmit records newerAdmitVersion in the database's
// goose table, as a newer admit's migration would.
func markMigratedByNewerAdmit(tb testing.TB, path string) {
	tb.Helper()
	if store.KnownVersion() >= newerAdmitVersion {
		tb.Fatalf("this admit knows migration %d: raise newerAdmitVersion", newerAdmitVersion)
	}
	execSQL(tb, path, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)`, newerAdmitVersion)
}

// gooseRows counts the rows of the database's goose table.
func gooseRows(tb testing.TB, path string) int {
	tb.Helper()
	var n int
	if err := openReadOnly(tb, path).QueryRow(`SELECT count(*) FROM goose_db_version`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestMigrate_OlderBinaryRefusesNewerSchema(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := MustBuildAdmit(t)
	dir := t.TempDir()
	env := binaryEnv(dir)
	dbPath := filepath.Join(dir, "data", "admit.db")
	if r := runAdmit(t, bin, dir, env, "migrate"); r.code != 0 {
		t.Fatalf("migrate a fresh database: exit %d\n%s", r.code, r.stderr)
	}
	markMigratedByNewerAdmit(t, dbPath)
	rows := gooseRows(t, dbPath)

	wants := []string{
		fmt.Sprintf("schema version %d", newerAdmitVersion),
		fmt.Sprintf("up to %d", store.KnownVersion()),
		"Run that newer admit", "restore a backup",
	}
	stderr, _ := mustRefuseServe(t, bin, dir, env)
	for _, want := range wants {
		if !strings.Contains(stderr, want) {
			t.Errorf("serve on a newer schema: message lacks %q:\n%s", want, stderr)
		}
	}
	r := runAdmit(t, bin, dir, env, "migrate")
	if r.code == 0 {
		t.Fatalf("migrate on a newer schema exited 0:\n%s", r.stdout)
	}
	for _, want := range wants {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("migrate on a newer schema: message lacks %q:\n%s", want, r.stderr)
		}
	}
	if r := runAdmit(t, bin, dir, env, "owner", "add", "--workspace", "Acme", "--user", "user_1"); r.code == 0 {
		t.Errorf("owner add on a newer schema exited 0")
	}
	if got := gooseRows(t, dbPath); got != rows {
		t.Errorf("goose table has %d rows after the refusals, want %d: something migrated", got, rows)
	}
}

// statusLine is one migration line of `admit migrate -status`.
type statusLine struct {
	state   string
	version int64
	name    string
}

// parseStatus reads the migration lines of `admit migrate -status`.
func parseStatus(tb testing.TB, out string) []statusLine {
	tb.Helper()
	var lines []statusLine
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || (f[0] != "applied" && f[0] != "pending" && f[0] != "unknown") {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			tb.Fatalf("status line %q: version: %v", l, err)
		}
		lines = append(lines, statusLine{f[0], v, f[2]})
	}
	return lines
}

// embeddedMigrations lists the migration files in the binary, by name.
func embeddedMigrations(tb testing.TB) []string {
	tb.Helper()
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(names) == 0 {
		tb.Fatalf("embedded migrations: %v %v", names, err)
	}
	return names
}

func TestMigrate_StatusListsAppliedPendingAndUnknown(t *testing.T) {
	embedded := embeddedMigrations(t)
	data := t.TempDir()
	env := map[string]string{"ADMIT_DATA": data}
	dbPath := filepath.Join(data, "admit.db")

	check := func(t *testing.T, out string, want []statusLine, summary string) {
		t.Helper()
		got := parseStatus(t, out)
		if len(got) != len(want) {
			t.Fatalf("status lists %d migrations, want %d:\n%s", len(got), len(want), out)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
			}
		}
		if !strings.Contains(out, summary) {
			t.Errorf("status lacks %q:\n%s", summary, out)
		}
	}
	every := func(state string) []statusLine {
		var out []statusLine
		for _, name := range embedded {
			v, err := strconv.ParseInt(strings.SplitN(name, "_", 2)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, statusLine{state, v, name})
		}
		return out
	}

	t.Run("fresh", func(t *testing.T) {
		check(t, mustRunCmd(t, env, "migrate", "-status"), every("pending"), fmt.Sprintf("%d pending", len(embedded)))
		if _, err := os.Stat(dbPath); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("migrate -status created the database (stat: %v)", err)
		}
	})
	mustRunCmd(t, env, "migrate")
	t.Run("migrated", func(t *testing.T) {
		check(t, mustRunCmd(t, env, "migrate", "-status"), every("applied"), "up to date")
	})
	markMigratedByNewerAdmit(t, dbPath)
	t.Run("unknown", func(t *testing.T) {
		want := append(every("applied"), statusLine{"unknown", newerAdmitVersion, "(not"})
		out := mustRunCmd(t, env, "migrate", "-status")
		check(t, out, want, "1 unknown")
		if !strings.Contains(out, fmt.Sprintf("schema version %d", newerAdmitVersion)) {
			t.Errorf("status does not give the database's version %d:\n%s", newerAdmitVersion, out)
		}
	})
	execSQL(t, dbPath, `DELETE FROM goose_db_version WHERE version_id IN (?, ?)`, newerAdmitVersion, store.KnownVersion())
	t.Run("pending", func(t *testing.T) {
		want := every("applied")
		want[len(want)-1].state = "pending"
		check(t, mustRunCmd(t, env, "migrate", "-status"), want, "1 pending")
	})
}

// newClient is an HTTP client for the tests' loopback servers.
func newClient() *http.Client { return &http.Client{Timeout: 10 * time.Second} }
