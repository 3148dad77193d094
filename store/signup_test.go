package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"admit/internal/testutil"

	"github.com/google/uuid"
)

// signupTestKey is the 32-byte request-binding key of every signup test.
var signupTestKey = bytes.Repeat([]byte{0x5a}, 32)

// signupProgram is an open program ready for signups, with its owner.
type signupProgram struct {
	Owner   Actor
	Program *Program
	Notice  *Notice
}

// mustSignupProgram creates an owned program with the given caps, publishes
// a notice and opens signup, through the same audited operations as the
// owner console.
func mustSignupProgram(tb testing.TB, db *DB, slug string, queueCap, hourlyCap int) signupProgram {
	tb.Helper()
	ctx := context.Background()
	a, w := mustOwner(tb, db)
	p, err := db.CreateProgram(ctx, a, NewProgram{WorkspaceID: w.ID, Slug: slug, Name: "Test " + slug, Purpose: testPurpose,
		QueueCap: queueCap, HourlyCap: hourlyCap, SeatCap: 5, MaxInvitationDays: 14})
	if err != nil {
		tb.Fatalf("create program: %v", err)
	}
	n := mustNotice(tb, db, a, p.ID)
	p = mustSetProgram(tb, db, a, p.ID, func(s *ProgramSettings) { s.SignupOpen = ptrTo(true) })
	return signupProgram{Owner: a, Program: p, Notice: n}
}

// ptrTo returns a pointer to v.
func ptrTo[T any](v T) *T { return &v }

// mustSetProgram applies settings to the program at its current revision.
func mustSetProgram(tb testing.TB, db *DB, a Actor, programID string, set func(*ProgramSettings)) *Program {
	tb.Helper()
	ctx := context.Background()
	p, err := db.ProgramByID(ctx, a, programID)
	if err != nil {
		tb.Fatalf("read program: %v", err)
	}
	s := ProgramSettings{ExpectedRevision: p.Revision}
	set(&s)
	p, err = db.UpdateProgram(ctx, a, programID, s)
	if err != nil {
		tb.Fatalf("update program: %v", err)
	}
	return p
}

// signupReq is a valid request for sp with a fresh key.
func (sp signupProgram) signupReq(email string) SignupRequest {
	return SignupRequest{Slug: sp.Program.Slug, RequestKey: uuid.NewString(), Email: email,
		NoticeVersion: sp.Notice.Version, Permission: true}
}

// mustSignup runs a signup that must succeed with a fresh token.
func mustSignup(tb testing.TB, db *DB, req SignupRequest) *SignupResult {
	tb.Helper()
	res, err := db.Signup(context.Background(), req)
	if err != nil {
		tb.Fatalf("signup: %v", err)
	}
	if res.Replay || len(res.RemovalToken) != 64 {
		tb.Fatalf("signup result %+v, want a first 202 with a 64-hex token", res)
	}
	return res
}

// wantCode fails the test unless err carries the store error code.
func wantCode(tb testing.TB, what string, err error, code string) {
	tb.Helper()
	if got := ErrorCode(err); got != code {
		tb.Fatalf("%s: err=%v (code %q), want code %q", what, err, got, code)
	}
}

// dbFingerprint digests every row of every table: equal fingerprints
// before and after mean nothing was stored, removed or changed — a counter
// bumped on an existing row or a state change included.
func dbFingerprint(tb testing.TB, db *DB) testutil.Fingerprint {
	tb.Helper()
	return testutil.MustFingerprint(tb, db.View)
}

// wantUnchanged fails the test if any row of any table changed since before.
func wantUnchanged(tb testing.TB, what string, db *DB, before testutil.Fingerprint) {
	tb.Helper()
	if after := dbFingerprint(tb, db); !maps.Equal(before, after) {
		tb.Fatalf("%s changed the database:%s", what, testutil.Describe(before, after))
	}
}

// attemptsByKey is every network counter's attempts, by key.
func attemptsByKey(tb testing.TB, db *DB) map[string]int {
	tb.Helper()
	ctx := context.Background()
	out := map[string]int{}
	err := db.View(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT key, attempts FROM network_counters`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k []byte
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				return err
			}
			out[string(k)] = n
		}
		return rows.Err()
	})
	if err != nil {
		tb.Fatalf("read counters: %v", err)
	}
	return out
}

// wantOnlyAttemptsCounted fails the test unless the only change since
// before is n more attempts on the counter with the given key: a denial
// stores nothing but its counted attempt.
func wantOnlyAttemptsCounted(tb testing.TB, what string, db *DB, before testutil.Fingerprint, counters map[string]int, key []byte, n int) {
	tb.Helper()
	after := dbFingerprint(tb, db)
	if changed := testutil.Changed(before, after); len(changed) > 1 || (len(changed) == 1 && changed[0] != "network_counters") {
		tb.Fatalf("%s changed more than the attempt counter:%s", what, testutil.Describe(before, after))
	}
	want := maps.Clone(counters)
	want[string(key)] += n
	if n == 0 && counters[string(key)] == 0 {
		delete(want, string(key))
	}
	if got := attemptsByKey(tb, db); !maps.Equal(got, want) {
		tb.Fatalf("%s: counters %v, want %v (%d more attempts on one key)", what, got, want, n)
	}
}

// hourCount is the admitted count of the program's bucket starting at hour
// (0 when there is no row).
func hourCount(tb testing.TB, db *DB, programID string, hour time.Time) int {
	tb.Helper()
	return mustCount(tb, db, `SELECT coalesce(sum(admitted_count), 0) FROM intake_hours WHERE program_id = ? AND bucket_start = ?`,
		programID, Millis(hour))
}

func TestSignup_ConcurrentSignupsStopExactlyAtCap(t *testing.T) {
	const attempts, capacity = 1000, 500
	for _, tc := range []struct {
		name              string
		queueCap, hourCap int
	}{
		{"queue cap", capacity, 100000},
		{"hourly cap", 100000, capacity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Every attempt fits the writer's queue: the caps alone refuse.
			clock := testutil.NewClock(testEpoch)
			db := mustOpenWith(t, filepath.Join(t.TempDir(), "admit.db"),
				Options{BindingKey: signupTestKey, Now: clock.Now, SignupQueue: attempts})
			sp := mustSignupProgram(t, db, "concurrent-cap", tc.queueCap, tc.hourCap)
			clock.Set(testEpoch.Add(17 * time.Minute)) // inside one UTC hour

			type outcome struct {
				res *SignupResult
				err error
			}
			results := make([]outcome, attempts)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range attempts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					req := sp.signupReq(fmt.Sprintf("person%04d@example.com", i))
					res, err := db.Signup(context.Background(), req)
					results[i] = outcome{res, err}
				}()
			}
			close(start)
			wg.Wait()

			var admitted, limited int
			var limitMessage string
			tokens := map[string]bool{}
			for i, o := range results {
				switch {
				case o.err == nil:
					if o.res.Replay || len(o.res.RemovalToken) != 64 {
						t.Fatalf("signup %d: result %+v, want a first 202 with a token", i, o.res)
					}
					tokens[o.res.RemovalToken] = true
					admitted++
				case ErrorCode(o.err) == ERATELIMITED:
					// Every denial must read the same, byte for byte.
					if limitMessage == "" {
						limitMessage = o.err.Error()
					} else if o.err.Error() != limitMessage {
						t.Fatalf("signup %d: denial %q differs from %q", i, o.err.Error(), limitMessage)
					}
					limited++
				default:
					t.Fatalf("signup %d: err=%v, want success or %s", i, o.err, ERATELIMITED)
				}
			}
			if got, want := admitted, capacity; got != want {
				t.Fatalf("admitted=%d, want %d", got, want)
			}
			if got, want := limited, attempts-capacity; got != want {
				t.Fatalf("rate limited=%d, want %d", got, want)
			}
			if got, want := len(tokens), capacity; got != want {
				t.Fatalf("distinct removal tokens=%d, want %d", got, want)
			}
			pid := sp.Program.ID
			for _, c := range []struct {
				what  string
				query string
			}{
				{"entries", `SELECT count(*) FROM entries WHERE program_id = ?`},
				{"entries with a removal hash", `SELECT count(*) FROM entries WHERE program_id = ? AND removal_hash IS NOT NULL`},
				{"signup receipts", `SELECT count(*) FROM signup_receipts WHERE program_id = ?`},
				{"signup audit events", `SELECT count(*) FROM audit_events WHERE program_id = ? AND event_type = 'signup'`},
				{"occupied", `SELECT occupied FROM programs WHERE id = ?`},
			} {
				if got, want := mustCount(t, db, c.query, pid), capacity; got != want {
					t.Errorf("%s=%d, want %d", c.what, got, want)
				}
			}
			if got, want := hourCount(t, db, pid, hourStart(clock.Now())), capacity; got != want {
				t.Errorf("hour bucket=%d, want %d", got, want)
			}
			if got, want := mustCount(t, db, `SELECT count(*) FROM intake_hours WHERE program_id = ?`, pid), 1; got != want {
				t.Errorf("hour bucket rows=%d, want %d", got, want)
			}
			// Each token shown removes the entry it was issued for.
			matched := 0
			for tok := range tokens {
				matched += mustCount(t, db, `SELECT count(*) FROM entries WHERE removal_hash = ?`, HashRemovalToken(tok))
			}
			if got, want := matched, capacity; got != want {
				t.Errorf("tokens matching an entry=%d, want %d", got, want)
			}
		})
	}
}

func TestSignup_KnownAndUnknownAddressAtFullCapAreDeniedAndStoreNothing(t *testing.T) {
	for _, tc := range []struct {
		name              string
		queueCap, hourCap int
	}{
		{"queue cap full", 2, 100},
		{"hourly cap full", 100, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := MustOpenDB(t)
			sp := mustSignupProgram(t, db, "full-cap", tc.queueCap, tc.hourCap)
			mustSignup(t, db, sp.signupReq("known@example.com"))
			mustSignup(t, db, sp.signupReq("other@example.com"))

			before := dbFingerprint(t, db)
			bucket := hourCount(t, db, sp.Program.ID, hourStart(testEpoch))
			var messages []string
			for _, email := range []string{"known@example.com", "unknown@example.com"} {
				req := sp.signupReq(email)
				res, err := db.Signup(context.Background(), req)
				wantCode(t, email, err, ERATELIMITED)
				if res != nil {
					t.Fatalf("%s: result %+v with a denial", email, res)
				}
				messages = append(messages, err.Error())
				if n := mustCount(t, db, `SELECT count(*) FROM signup_receipts WHERE request_key = ?`, req.RequestKey); n != 0 {
					t.Fatalf("%s: a receipt was stored for a denied key", email)
				}
			}
			if messages[0] != messages[1] {
				t.Fatalf("known address denial %q differs from unknown %q", messages[0], messages[1])
			}
			wantUnchanged(t, "denied signups", db, before)
			if got := hourCount(t, db, sp.Program.ID, hourStart(testEpoch)); got != bucket {
				t.Fatalf("hour bucket=%d after denials, want %d", got, bucket)
			}
		})
	}
}

// entrySnapshot is everything about an entry a duplicate must not touch.
type entrySnapshot struct {
	ID, NoticeID, State, Email string
	PermissionAt, UpdatedAt    int64
	RemovalHash                []byte
}

// mustEntrySnapshot reads the program's entry for email.
func mustEntrySnapshot(tb testing.TB, db *DB, programID, email string) entrySnapshot {
	tb.Helper()
	ctx := context.Background()
	var s entrySnapshot
	err := db.View(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT id, notice_id, state, email_key, permission_at, updated_at, removal_hash
			FROM entries WHERE program_id = ? AND email_key = ?`, programID, email).
			Scan(&s.ID, &s.NoticeID, &s.State, &s.Email, &s.PermissionAt, &s.UpdatedAt, &s.RemovalHash)
	})
	if err != nil {
		tb.Fatalf("read entry: %v", err)
	}
	return s
}

func TestSignup_DuplicateWithFreshKeyChangesNothingAndGetsADecoyToken(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "duplicate", 100, 100)
	first := mustSignup(t, db, sp.signupReq("Dup.Person@example.com"))
	original := mustEntrySnapshot(t, db, sp.Program.ID, "Dup.Person@example.com")

	// Later, under a newer notice, the same address signs up again.
	clock.Add(5 * time.Minute)
	n2, err := db.PublishNotice(ctx, sp.Owner, sp.Program.ID, testNotice)
	if err != nil {
		t.Fatalf("publish notice 2: %v", err)
	}
	bucket := hourCount(t, db, sp.Program.ID, hourStart(testEpoch))
	entries := mustCount(t, db, `SELECT count(*) FROM entries`)
	signupEvents := mustCount(t, db, `SELECT count(*) FROM audit_events WHERE event_type = 'signup'`)

	req := sp.signupReq("Dup.Person@example.com")
	req.NoticeVersion = n2.Version
	dup, err := db.Signup(ctx, req)
	if err != nil {
		t.Fatalf("duplicate signup: %v", err)
	}
	if dup.Replay || len(dup.RemovalToken) != 64 {
		t.Fatalf("duplicate result %+v, want a first 202 with a (decoy) token", dup)
	}
	if dup.RemovalToken == first.RemovalToken {
		t.Fatal("the duplicate was shown the original entry's token")
	}
	if got := mustCount(t, db, `SELECT count(*) FROM entries`); got != entries {
		t.Fatalf("entries=%d after a duplicate, want %d", got, entries)
	}
	if got := mustEntrySnapshot(t, db, sp.Program.ID, "Dup.Person@example.com"); !reflect.DeepEqual(got, original) {
		t.Fatalf("duplicate changed the entry:\nbefore %+v\nafter  %+v", original, got)
	}
	if original.NoticeID != sp.Notice.ID {
		t.Fatalf("entry notice=%s, want the first notice %s", original.NoticeID, sp.Notice.ID)
	}
	if got := hourCount(t, db, sp.Program.ID, hourStart(testEpoch)); got != bucket {
		t.Fatalf("hour bucket=%d after a duplicate, want %d (no quota used)", got, bucket)
	}
	if got := mustCount(t, db, `SELECT occupied FROM programs WHERE id = ?`, sp.Program.ID); got != 1 {
		t.Fatalf("occupied=%d after a duplicate, want 1", got)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM audit_events WHERE event_type = 'signup'`); got != signupEvents {
		t.Fatalf("signup events=%d after a duplicate, want %d", got, signupEvents)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM signup_receipts WHERE request_key = ?`, req.RequestKey); got != 1 {
		t.Fatalf("receipts for the duplicate's key=%d, want 1 (its 202 is replayable)", got)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE removal_hash = ?`, HashRemovalToken(dup.RemovalToken)); got != 0 {
		t.Fatal("the decoy token matches an entry")
	}

	// The decoy removes nothing.
	before := dbFingerprint(t, db)
	if err := db.RemoveByToken(ctx, dup.RemovalToken); err != nil {
		t.Fatalf("remove with decoy: %v", err)
	}
	wantUnchanged(t, "removal with a decoy token", db, before)
	if got := mustEntrySnapshot(t, db, sp.Program.ID, "Dup.Person@example.com"); !reflect.DeepEqual(got, original) {
		t.Fatalf("decoy removal changed the entry:\nbefore %+v\nafter  %+v", original, got)
	}

	// The duplicate's key replays without a token.
	res, err := db.Signup(ctx, req)
	if err != nil || !res.Replay || res.RemovalToken != "" {
		t.Fatalf("replay of the duplicate's key: %+v, %v; want a replay without a token", res, err)
	}
}

func TestSignup_SameKeyReplayAnswersFromItsReceipt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(t *testing.T, db *DB, sp signupProgram)
	}{
		{"unchanged", func(*testing.T, *DB, signupProgram) {}},
		{"after the program closes", func(t *testing.T, db *DB, sp signupProgram) {
			mustSetProgram(t, db, sp.Owner, sp.Program.ID, func(s *ProgramSettings) { s.SignupOpen = ptrTo(false) })
		}},
		{"after a new notice version", func(t *testing.T, db *DB, sp signupProgram) {
			if _, err := db.PublishNotice(context.Background(), sp.Owner, sp.Program.ID, testNotice); err != nil {
				t.Fatalf("publish: %v", err)
			}
		}},
		{"after the cap fills", func(t *testing.T, db *DB, sp signupProgram) {
			mustSignup(t, db, sp.signupReq("filler@example.com"))
			_, err := db.Signup(context.Background(), sp.signupReq("late@example.com"))
			wantCode(t, "signup at full cap", err, ERATELIMITED)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := MustOpenDB(t)
			ctx := context.Background()
			sp := mustSignupProgram(t, db, "replay", 2, 100)
			req := sp.signupReq("replay@example.com")
			mustSignup(t, db, req)
			tc.after(t, db, sp)

			before := dbFingerprint(t, db)
			for range 2 {
				res, err := db.Signup(ctx, req)
				if err != nil {
					t.Fatalf("replay: %v", err)
				}
				if got, want := *res, (SignupResult{Replay: true}); got != want {
					t.Fatalf("replay result %+v, want %+v (no token)", got, want)
				}
			}
			wantUnchanged(t, "a replay", db, before)
		})
	}
}

func TestSignup_KeyReboundToAnotherRequestIsAConflict(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "rebind", 100, 100)
	req := sp.signupReq("first@example.com")
	mustSignup(t, db, req)

	for _, tc := range []struct {
		name   string
		change func(*SignupRequest)
	}{
		{"another email", func(r *SignupRequest) { r.Email = "second@example.com" }},
		{"the same email with another local-part case", func(r *SignupRequest) { r.Email = "First@example.com" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dbFingerprint(t, db)
			rebound := req
			tc.change(&rebound)
			res, err := db.Signup(ctx, rebound)
			wantCode(t, "rebound key", err, ECONFLICT)
			if res != nil {
				t.Fatalf("result %+v with a conflict", res)
			}
			wantUnchanged(t, "a rebound key", db, before)
		})
	}
	if n := mustCount(t, db, `SELECT count(*) FROM entries WHERE email_key = 'second@example.com'`); n != 0 {
		t.Fatal("a rebound key created an entry")
	}
}

func TestSignup_OutdatedNoticeWithFreshKeyIsAConflict(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "outdated", 100, 100)
	if _, err := db.PublishNotice(ctx, sp.Owner, sp.Program.ID, testNotice); err != nil {
		t.Fatalf("publish: %v", err)
	}
	before := dbFingerprint(t, db)
	req := sp.signupReq("late.reader@example.com") // still names notice 1
	_, err := db.Signup(ctx, req)
	wantCode(t, "outdated notice", err, ECONFLICT)
	wantUnchanged(t, "an outdated notice", db, before)

	// The same address under the current notice is accepted.
	req.RequestKey = uuid.NewString()
	req.NoticeVersion = sp.Notice.Version + 1
	mustSignup(t, db, req)
}

func TestSignup_ClosedProgramWithFreshKeyIsAConflict(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "closed", 100, 100)
	mustSetProgram(t, db, sp.Owner, sp.Program.ID, func(s *ProgramSettings) { s.SignupOpen = ptrTo(false) })
	before := dbFingerprint(t, db)
	_, err := db.Signup(context.Background(), sp.signupReq("closed@example.com"))
	wantCode(t, "closed program", err, ECONFLICT)
	wantUnchanged(t, "a closed program", db, before)
}

func TestSignup_InvalidRequestsAreRejectedBeforeAnyWrite(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "invalid", 100, 100)
	for _, tc := range []struct {
		name   string
		change func(*SignupRequest)
	}{
		{"permission false", func(r *SignupRequest) { r.Permission = false }},
		{"bad email", func(r *SignupRequest) { r.Email = "not an email" }},
		{"request key not a UUID", func(r *SignupRequest) { r.RequestKey = "key-1" }},
		{"request key in braces", func(r *SignupRequest) { r.RequestKey = "{6ba7b810-9dad-11d1-80b4-00c04fd430c8}" }},
		{"notice version zero", func(r *SignupRequest) { r.NoticeVersion = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := dbFingerprint(t, db)
			req := sp.signupReq("valid@example.com")
			tc.change(&req)
			_, err := db.Signup(context.Background(), req)
			wantCode(t, tc.name, err, EINVALID)
			wantUnchanged(t, tc.name, db, before)
		})
	}
}

func TestSignup_UnknownSlugIsNotFound(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "known-slug", 100, 100)
	req := sp.signupReq("who@example.com")
	req.Slug = "no-such-slug"
	_, err := db.Signup(context.Background(), req)
	wantCode(t, "unknown slug", err, ENOTFOUND)
}

func TestSignup_BindingIsAnHMACNotAnEmailDigest(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "binding", 100, 100)
	req := sp.signupReq("bound@example.com")
	mustSignup(t, db, req)
	var stored []byte
	ctx := context.Background()
	if err := db.View(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT binding_hmac FROM signup_receipts WHERE request_key = ?`, req.RequestKey).Scan(&stored)
	}); err != nil {
		t.Fatalf("read receipt: %v", err)
	}
	plain := sha256.Sum256([]byte(req.Email))
	if bytes.Equal(stored, plain[:]) {
		t.Fatal("the receipt stores a plain SHA-256 of the email")
	}
	// Another server key gives another binding: the key is really used.
	if bytes.Equal(stored, bind(bytes.Repeat([]byte{1}, 32), "signup", sp.Program.ID, req.RequestKey, req.Email, "1", "true")) {
		t.Fatal("the binding does not depend on the server key")
	}
	if !bytes.Equal(stored, bind(signupTestKey, "signup", sp.Program.ID, req.RequestKey, req.Email, "1", "true")) {
		t.Fatal("the binding is not the HMAC over the request's fields")
	}
	// Length-delimited: moving a byte between fields changes the binding.
	if bytes.Equal(bind(signupTestKey, "p", "ab", "c"), bind(signupTestKey, "p", "a", "bc")) {
		t.Fatal("bind is not length-delimited")
	}
}

func TestSignup_LockWaitAcrossHourBoundaryCountsInLaterHour(t *testing.T) {
	db1, clock := mustOpenDBWithClock(t)
	sp := mustSignupProgram(t, db1, "hour-edge", 100, 100)
	waiting := gateWaiters(db1)

	early := time.Date(2025, time.March, 10, 10, 59, 59, 900_000_000, time.UTC)
	late := time.Date(2025, time.March, 10, 11, 0, 0, 100_000_000, time.UTC)
	clock.Set(early)

	release, held, _ := holdWriteLock(t, db1, "hour edge holder")
	type outcome struct {
		res *SignupResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := db1.Signup(context.Background(), sp.signupReq("edge@example.com"))
		done <- outcome{res, err}
	}()
	// The signup waits at the write gate behind the holder, at 10:59:59.9.
	mustSeeWaiter(t, waiting)
	select {
	case o := <-done:
		t.Fatalf("signup finished while the lock was held: %+v, %v", o.res, o.err)
	default:
	}

	clock.Set(late)
	release()
	if err := <-held; err != nil {
		t.Fatalf("lock holder: %v", err)
	}
	var o outcome
	select {
	case o = <-done:
	case <-time.After(BusyTimeout):
		t.Fatal("signup never got the lock")
	}
	if o.err != nil {
		t.Fatalf("signup: %v", o.err)
	}
	lateHour := time.Date(2025, time.March, 10, 11, 0, 0, 0, time.UTC)
	earlyHour := time.Date(2025, time.March, 10, 10, 0, 0, 0, time.UTC)
	if got, want := hourCount(t, db1, sp.Program.ID, lateHour), 1; got != want {
		t.Fatalf("11:00 bucket=%d, want %d", got, want)
	}
	if got := mustCount(t, db1, `SELECT count(*) FROM intake_hours WHERE program_id = ? AND bucket_start = ?`,
		sp.Program.ID, Millis(earlyHour)); got != 0 {
		t.Fatalf("10:00 bucket rows=%d, want 0", got)
	}
	if got, want := mustCount(t, db1, `SELECT count(*) FROM entries WHERE permission_at = ? AND created_at = ?`,
		Millis(late), Millis(late)), 1; got != want {
		t.Fatalf("entries stamped at %v=%d, want %d (the clock is read after the lock)", late, got, want)
	}
}

// TestSignup_HourBucketResetsInTheNextHour checks that a full hourly cap
// denies within its hour and admits again in the next one.
func TestSignup_HourBucketResetsInTheNextHour(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	sp := mustSignupProgram(t, db, "next-hour", 100, 1)
	mustSignup(t, db, sp.signupReq("one@example.com"))
	denied := sp.signupReq("two@example.com")
	_, err := db.Signup(context.Background(), denied)
	wantCode(t, "second signup in the hour", err, ERATELIMITED)

	clock.Set(hourStart(testEpoch).Add(time.Hour))
	mustSignup(t, db, denied) // a denied key was never recorded: a new attempt
	if got, want := hourCount(t, db, sp.Program.ID, hourStart(clock.Now())), 1; got != want {
		t.Fatalf("next hour's bucket=%d, want %d", got, want)
	}
	if got, want := hourCount(t, db, sp.Program.ID, hourStart(testEpoch)), 1; got != want {
		t.Fatalf("first hour's bucket=%d, want %d", got, want)
	}
}

// countAttemptAlone counts one attempt in a write transaction of its own.
func countAttemptAlone(db *DB, keyFor func(hour time.Time) []byte, limit int) error {
	ctx := context.Background()
	return db.Update(ctx, func(tx *Tx) error { return db.countAttempt(ctx, tx, keyFor, limit) })
}

func TestCountAttempt_LimitsPerHourAndDeletesExpiredCounters(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	const limit = 3
	keyFor := func(subject string) func(time.Time) []byte {
		return func(hour time.Time) []byte {
			sum := sha256.Sum256([]byte(fmt.Sprintf("%s|%d", subject, hour.Unix())))
			return sum[:]
		}
	}
	clock.Set(time.Date(2025, time.March, 10, 10, 20, 0, 0, time.UTC))
	for i := range limit {
		if err := countAttemptAlone(db, keyFor("net-a"), limit); err != nil {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
	}
	err := countAttemptAlone(db, keyFor("net-a"), limit)
	wantCode(t, fmt.Sprintf("attempt %d", limit+1), err, ERATELIMITED)
	if err := countAttemptAlone(db, keyFor("net-a"), limit); ErrorCode(err) != ERATELIMITED {
		t.Fatalf("attempt %d: err=%v, want still %s", limit+2, err, ERATELIMITED)
	}
	// Another network has its own counter.
	if err := countAttemptAlone(db, keyFor("net-b"), limit); err != nil {
		t.Fatalf("another network: %v", err)
	}
	tenOClock := time.Date(2025, time.March, 10, 10, 0, 0, 0, time.UTC)
	oldKey := keyFor("net-a")(tenOClock)
	if got := mustCount(t, db, `SELECT attempts FROM network_counters WHERE key = ?`, oldKey); got != limit {
		t.Fatalf("attempts=%d, want %d (denials are not counted)", got, limit)
	}
	if got, want := mustCount(t, db, `SELECT expires_at FROM network_counters WHERE key = ?`, oldKey),
		int(Millis(tenOClock.Add(NetworkCounterLifetime))); got != want {
		t.Fatalf("expires_at=%d, want %d", got, want)
	}

	// A new UTC hour: the limit starts over, and the call deletes the
	// counters that expired when the old hour ended.
	clock.Set(time.Date(2025, time.March, 10, 11, 0, 0, 0, time.UTC))
	for i := range limit {
		if err := countAttemptAlone(db, keyFor("net-a"), limit); err != nil {
			t.Fatalf("new hour attempt %d: %v", i+1, err)
		}
	}
	if got := mustCount(t, db, `SELECT count(*) FROM network_counters WHERE expires_at <= ?`, Millis(clock.Now())); got != 0 {
		t.Fatalf("%d expired counters remain after a later call", got)
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM network_counters`), 1; got != want {
		t.Fatalf("counters=%d, want %d (only the current hour's)", got, want)
	}
	err = countAttemptAlone(db, keyFor("net-a"), limit)
	wantCode(t, "new hour, over the limit", err, ERATELIMITED)
}

func TestSignup_StoresAndDedupesTheNormalizedEmail(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "normalized", 100, 100)
	mustSignup(t, db, sp.signupReq("  Jane.Doe@EXAMPLE.Com "))
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE email_key = 'Jane.Doe@example.com'`); got != 1 {
		t.Fatalf("entries stored as Jane.Doe@example.com=%d, want 1 (local part kept, domain lowercased, spaces trimmed)", got)
	}
	// The same address written differently is a duplicate, not a second entry.
	res, err := db.Signup(context.Background(), sp.signupReq("Jane.Doe@example.COM"))
	if err != nil || res.Replay || len(res.RemovalToken) != 64 {
		t.Fatalf("second spelling: %+v, %v; want a 202 with a decoy", res, err)
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM entries`), 1; got != want {
		t.Fatalf("entries=%d, want %d", got, want)
	}
	// Another local-part case is another address (docs/API.md#signup: no case folding).
	mustSignup(t, db, sp.signupReq("jane.doe@example.com"))
	if got, want := mustCount(t, db, `SELECT count(*) FROM entries`), 2; got != want {
		t.Fatalf("entries=%d, want %d", got, want)
	}
}

// Entry IDs are UUIDv7 generated in insertion order, so the entries primary
// key and the audit index on entry IDs only ever grow at their right edge.
func TestSignup_EntryIDsAreTimeOrderedUUIDs(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "ordered-ids", 1000, 1000)
	var wg sync.WaitGroup
	results := make([]*SignupResult, 200)
	errs := make([]error, len(results))
	for i := range results {
		wg.Go(func() {
			results[i], errs[i] = db.Signup(context.Background(), sp.signupReq(fmt.Sprintf("ordered-%d@example.test", i)))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("signups: %v", err)
	}
	for i, res := range results {
		if res.Replay || len(res.RemovalToken) != 64 {
			t.Fatalf("signup %d: result %+v, want a first 202 with a 64-hex token", i, res)
		}
	}
	// Rows in insertion order: SQLite's rowid, PostgreSQL's ctid (no
	// entry was updated or removed).
	rows, err := db.reader.Query(testEngine.pick(`SELECT id FROM entries ORDER BY rowid`, `SELECT id FROM entries ORDER BY ctid`))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 7 || u.String() != id {
			t.Fatalf("entry id %q is not a canonical UUIDv7 (%v)", id, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 200 {
		t.Fatalf("entries=%d, want 200", len(ids))
	}
	if !slices.IsSorted(ids) {
		t.Fatal("entry IDs are not in insertion order")
	}
}

// A waitlist whose workspace has been deactivated takes no signup, though
// the program itself is open: the workspace's state is checked on its own.
func TestSignup_InactiveWorkspaceWithFreshKeyIsAConflict(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "inactive-ws", 100, 100)
	mustUpdate(t, db, func(tx *Tx) error {
		_, err := tx.ExecContext(context.Background(), `UPDATE workspaces SET active = 0 WHERE id = ?`, sp.Program.WorkspaceID)
		return err
	})
	before := dbFingerprint(t, db)
	_, err := db.Signup(context.Background(), sp.signupReq("inactive@example.com"))
	wantCode(t, "inactive workspace", err, ECONFLICT)
	wantUnchanged(t, "a program of an inactive workspace", db, before)
}
