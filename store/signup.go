package store

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// SignupRequest is a public signup as the form or the JSON API sent it;
// Signup checks it (checkSignup).
type SignupRequest struct {
	Slug string
	// RequestKey is the form's idempotency key: a UUID, which Signup puts in
	// its canonical lowercase form.
	RequestKey string
	// Email is the address as typed; Signup normalizes it (NormalizeEmail).
	Email         string
	NoticeVersion int
	// Permission is the affirmative choice for this notice; it must be true.
	Permission bool
	// Attempts, when set, counts this attempt against the network's hourly
	// limit in the same transaction, before admission
	// (docs/signup.md#order-of-admission: count, then persist). The attempt
	// stays counted whatever the admission's answer; an attempt over the
	// limit is refused and not counted.
	Attempts *AttemptLimit
}

// AttemptLimit is an hourly attempt counter: Key derives the counter key
// for an hour (a keyed HMAC, never a raw address), Max is the limit.
type AttemptLimit struct {
	Key func(hour time.Time) []byte
	Max int
}

// SignupResult is what a 202 shows.
type SignupResult struct {
	// RemovalToken is the private removal credential, shown once: a real one
	// for a new entry, a decoy that matches nothing for a duplicate, and
	// empty for a same-key replay, which never shows one again.
	RemovalToken string
	// Replay reports a same-key retry answered from its stored receipt.
	Replay bool
	// duplicate reports an address already listed, for metrics only.
	duplicate bool
}

// bind computes the request-binding HMAC over length-delimited fields, so
// no two different field lists can produce the same input. It is never a
// plain digest of an email address.
func bind(key []byte, purpose string, fields ...string) []byte {
	m := hmac.New(sha256.New, key)
	var n [4]byte
	for _, f := range append([]string{"admit binding v1", purpose}, fields...) {
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	return m.Sum(nil)
}

// newRemovalToken returns a removal token (32 random bytes as 64 lowercase
// hex) and its SHA-256.
func newRemovalToken() (string, []byte) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	tok := hex.EncodeToString(b)
	sum := sha256.Sum256([]byte(tok))
	return tok, sum[:]
}

// HashRemovalToken returns the stored form of a removal token.
func HashRemovalToken(tok string) []byte {
	sum := sha256.Sum256([]byte(tok))
	return sum[:]
}

// hourStart is the start of t's UTC hour.
func hourStart(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }

// Signup admits a public signup (docs/signup.md),
// in a write transaction:
//
//  1. the request key is read first: the same binding replays the stored
//     202, another binding is a conflict. Either answer comes from the
//     receipt alone, whatever changed since, and counts no attempt;
//  2. the network's attempt is counted (a new key only);
//  3. the program must be open, its workspace active, the notice current;
//  4. both caps are checked before the email is looked up, so a full cap
//     answers the same 429 for known and unknown addresses and stores
//     nothing but the attempt counted in step 2;
//  5. a duplicate email commits only a receipt and uses no quota;
//  6. otherwise the entry, hour bucket, receipt and audit event are written.
//
// The key is read under the lock, in admission's first statement, where a
// concurrent first submission may just have committed it. A replay is
// still answered when the write cannot be made — the writer's queue is
// full (ErrBusy) or writes fail (a full disk): then the receipt is read on
// its own, without the writer, and a committed key answers from it. Almost
// every signup carries a new key, so that read is not made first: it found
// nothing for nearly all of them and cost a read transaction on the reader
// pool (about 6% of a signup's CPU, docs/PERFORMANCE.md#cpu-per-signup).
//
// Concurrent signups share one commit (group commit, see signupBatcher):
// each runs in turn, exactly as if alone, and each answer is given only
// after the commit that holds it has returned.
func (db *DB) Signup(ctx context.Context, req SignupRequest) (res *SignupResult, err error) {
	defer func() { db.obs.Signup(signupOutcome(res, err)) }()
	// rule: one check, for the form and the JSON API alike; dedupe and
	// bind on the one normal form it returns.
	if req, err = checkSignup(req); err != nil {
		return nil, err
	}
	if db.signups.isStopped() {
		return nil, errClosed
	}
	res, err = db.signups.submit(ctx, req)
	if err != nil && (errors.Is(err, ErrBusy) || !isRefusal(err)) {
		// rule: a replay is a read; it answers even when no write can be made.
		if rres, rerr := db.signupReplay(ctx, req); rres != nil || (rerr != nil && isRefusal(rerr)) {
			return rres, rerr
		}
	}
	return res, err
}

// signupReplay answers a request whose key already has a committed
// receipt, from a read alone (no write, no counted attempt). It returns
// nil, nil for a key with no receipt yet.
func (db *DB) signupReplay(ctx context.Context, req SignupRequest) (*SignupResult, error) {
	var programID string
	var stored []byte
	err := db.readRow(ctx, `SELECT p.id, r.binding_hmac FROM programs p
		JOIN signup_receipts r ON r.program_id = p.id AND r.request_key = ?2
		WHERE p.public_slug = ?1`, req.Slug, req.RequestKey).Scan(&programID, &stored)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read receipt: %w", err)
	}
	return answerFromReceipt(db.signupBinding(programID, req), stored)
}

// signupBinding is the HMAC that binds a signup's request key to its fields.
func (db *DB) signupBinding(programID string, req SignupRequest) []byte {
	return bind(db.bindingKey, "signup", programID, req.RequestKey, req.Email,
		strconv.Itoa(req.NoticeVersion), strconv.FormatBool(req.Permission))
}

// answerFromReceipt is the answer to a key with a stored receipt: the same
// binding replays the 202 (without a token), another is a conflict.
func answerFromReceipt(binding, stored []byte) (*SignupResult, error) {
	if hmac.Equal(stored, binding) {
		return &SignupResult{Replay: true}, nil
	}
	return nil, Errorf(ECONFLICT, "This form was already submitted with different details. Reload the page to start again.")
}

// admitOne runs one signup inside tx. The answer is the signup's result or
// its refusal; failed reports a statement that failed part-way, after which
// the transaction holds a partial signup and must be rolled back.
//
// A refusal writes nothing of its own, so no savepoint is needed: the
// attempt counter refuses before it counts, and admission refuses only
// before its first write (signup's contract). A refused admission keeps the
// attempt it counted, in the same commit.
func (db *DB) admitOne(ctx context.Context, tx *Tx, req SignupRequest) (res *SignupResult, answer error, failed error) {
	res, err := db.signup(ctx, tx, req)
	if err != nil {
		if isRefusal(err) {
			return nil, err, nil
		}
		return nil, nil, err
	}
	return res, nil, nil
}

// isRefusal reports whether err is one of the store's own answers (an
// *Error), as opposed to a failed statement.
func isRefusal(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// signup admits one signup in tx. Its contract with admitOne: a refusal (an
// *Error) is returned only before admission's first write — the counted
// attempt, when there is one, is meant to stay; any other error is a
// failed statement.
func (db *DB) signup(ctx context.Context, tx *Tx, req SignupRequest) (*SignupResult, error) {
	st, err := readSignupState(ctx, tx, req)
	if err != nil {
		return nil, err
	}
	// rule: the key is read again after the lock, before any count or
	// state check: a committed key answers from its receipt alone.
	binding := db.signupBinding(st.programID, req)
	if st.found && st.stored != nil {
		return answerFromReceipt(binding, st.stored)
	}

	// A genuinely new key: its attempt counts against the network's hourly
	// limit (docs/signup.md#order-of-admission: count, then persist),
	// whatever admission answers.
	if req.Attempts != nil {
		if err := db.countAttempt(ctx, tx, req.Attempts.Key, req.Attempts.Max); err != nil {
			return nil, err // over the limit: refused and not counted
		}
	}
	if err := st.refusal(req); err != nil {
		return nil, err
	}

	if st.listed {
		// A duplicate: the original entry, notice and choice stay as they
		// are, and the answer carries a decoy token that removes nothing.
		if err := insertSignupReceipt(ctx, tx, st.programID, req.RequestKey, binding); err != nil {
			return nil, err
		}
		decoy, _ := newRemovalToken()
		return &SignupResult{RemovalToken: decoy, duplicate: true}, nil
	}
	return db.admitEntry(ctx, tx, st, req, binding)
}

// signupState is everything admission decides on, read after the lock.
type signupState struct {
	programAdmission
	// listed says the address is already on the program's list.
	listed bool
	// stored is the receipt's binding for this request key, nil if none.
	stored []byte
}

// programAdmission is the part of a signup's state that belongs to its
// program: the same for every signup of the program in one transaction
// and UTC hour.
type programAdmission struct {
	found                         bool // the slug names a program
	programID, noticeID           string
	open, wsActive, retired       bool
	queueCap, hourlyCap, occupied int
	noticeVer                     int
	// admitted is the hour's signups so far, as stored; hour is that
	// hour's start (Unix ms).
	admitted int
	hour     int64
}

// readSignupState reads, after the lock, the program and its notice, the
// current hour's intake, the stored receipt for this key and whether the
// address is already listed. The decisions in signup still follow the
// order in docs/signup.md; reading a value that a refusal does not use has
// no effect.
//
// The first signup of a program in a transaction reads it all in one
// statement; the program's part is then kept on the transaction, and the
// batch's later signups of the program in the same UTC hour read only
// their receipt and their address. Nothing in a signup transaction changes
// the program's part: its new entries are counted at the commit and added
// here until then.
func readSignupState(ctx context.Context, tx *Tx, req SignupRequest) (*signupState, error) {
	st := &signupState{}
	hour := Millis(hourStart(tx.Now))
	// A batch that ran into the next hour (joinLate) reads the program
	// again, for that hour's intake.
	if p, ok := tx.signupPrograms[req.Slug]; ok && p.hour == hour {
		st.programAdmission = p
		if p.found {
			err := tx.QueryRowContext(ctx, `SELECT
					(SELECT binding_hmac FROM signup_receipts WHERE program_id = ?1 AND request_key = ?2),
					EXISTS (SELECT 1 FROM entries WHERE program_id = ?1 AND email_key = ?3)`,
				p.programID, req.RequestKey, req.Email).Scan(&st.stored, &st.listed)
			if err != nil {
				return nil, fmt.Errorf("read signup: %w", err)
			}
		}
	} else {
		p := &st.programAdmission
		p.hour = hour
		err := tx.QueryRowContext(ctx, `SELECT p.id, p.signup_open, w.active, p.retired_at IS NOT NULL,
				p.queue_cap, p.hourly_cap, p.occupied, coalesce(p.current_notice_id, ''), coalesce(n.version, 0),
				(SELECT r.binding_hmac FROM signup_receipts r WHERE r.program_id = p.id AND r.request_key = ?2),
				coalesce((SELECT h.admitted_count FROM intake_hours h WHERE h.program_id = p.id AND h.bucket_start = ?3), 0),
				EXISTS (SELECT 1 FROM entries e WHERE e.program_id = p.id AND e.email_key = ?4)
			FROM programs p JOIN workspaces w ON w.id = p.workspace_id
			LEFT JOIN notices n ON n.id = p.current_notice_id
			WHERE p.public_slug = ?1`, req.Slug, req.RequestKey, hour, req.Email).
			Scan(&p.programID, &p.open, &p.wsActive, &p.retired, &p.queueCap, &p.hourlyCap, &p.occupied,
				&p.noticeID, &p.noticeVer, &st.stored, &p.admitted, &st.listed)
		p.found = err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("read program: %w", err)
		}
		if tx.signupPrograms == nil {
			tx.signupPrograms = map[string]programAdmission{}
		}
		tx.signupPrograms[req.Slug] = *p
	}
	// Entries this transaction already inserted (earlier signups of the
	// same batch) are counted at its commit; until then they are added here.
	occupying, intake := tx.pendingEntries(st.programID, hour)
	st.occupied += occupying
	st.admitted += intake
	return st, nil
}

// refusal is admission's answer to a new key before anything is written:
// nil when the signup may go ahead (as a new entry or a duplicate).
func (st *signupState) refusal(req SignupRequest) error {
	if !st.found || st.noticeID == "" {
		return Errorf(ENOTFOUND, "Not found.")
	}
	// tx.Now was read after the lock was taken.
	if !st.open || !st.wsActive || st.retired {
		return Errorf(ECONFLICT, "This waitlist is not accepting signups right now.")
	}
	if req.NoticeVersion != st.noticeVer {
		return Errorf(ECONFLICT, "The notice changed since you opened this page. Please read the current notice and submit again.")
	}
	// rule (docs/signup.md#order-of-admission): both caps before dedupe, so
	// a full cap reveals nothing. The queue is checked first: a full queue
	// frees no place on the hour, so it must not be answered as the hour's.
	if st.occupied >= st.queueCap {
		return ErrQueueFull
	}
	if st.admitted >= st.hourlyCap {
		return ErrIntakeFull
	}
	return nil
}

// insertSignupReceipt stores the receipt that answers a later submission
// of the same request key.
func insertSignupReceipt(ctx context.Context, tx *Tx, programID, requestKey string, binding []byte) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO signup_receipts (program_id, request_key, binding_hmac, response_code, accepted_at)
		VALUES (?, ?, ?, 202, ?)`, programID, requestKey, binding, Millis(tx.Now))
	if err != nil {
		return fmt.Errorf("insert receipt: %w", err)
	}
	return nil
}

// admitEntry writes a new waiting entry, counted on the hour's intake, then
// its receipt and its signup event.
func (db *DB) admitEntry(ctx context.Context, tx *Tx, st *signupState, req SignupRequest, binding []byte) (*SignupResult, error) {
	tok, hash := newRemovalToken()
	entryID, err := newEntryID()
	if err != nil {
		return nil, err
	}
	// The entry is born waiting: its erasure date comes from the same rule
	// every later state change applies (eraseAfter), in the same statement.
	var erase any
	if t := db.retention.eraseAfter(StateWaiting, false, tx.Now); t != nil {
		erase = Millis(*t)
	}
	if err := insertEntry(ctx, tx, newEntry{ID: entryID, ProgramID: st.programID, Email: req.Email,
		NoticeID: st.noticeID, State: StateWaiting, CreatedAt: Millis(tx.Now), RemovalHash: hash, EraseAfter: erase,
		Intake: true}); err != nil {
		return nil, err
	}
	if err := insertSignupReceipt(ctx, tx, st.programID, req.RequestKey, binding); err != nil {
		return nil, err
	}
	if err := queueEvent(tx, st.programID, entryID, Actor{Kind: ActorPublic},
		SignupDetails{NoticeVersion: req.NoticeVersion}); err != nil {
		return nil, err
	}
	return &SignupResult{RemovalToken: tok}, nil
}

// newEntryID returns a time-ordered UUID (version 7) for a new entry. Entries
// are inserted in time order, so their primary key and the audit index on
// entry IDs grow at the right edge instead of touching a random page of each
// per signup (fewer pages written per commit, docs/PERFORMANCE.md#time-ordered-entry-ids). An entry ID is
// never a credential: it is shown to the program's owners only, who see the
// entry's join time anyway, and it keeps 74 random bits.
func newEntryID() (string, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("entry id: %w", err)
	}
	return u.String(), nil
}

// counterCleanupEvery spaces the expired-counter cleanup that rides on
// requests: counters expire by the hour, so once a minute is plenty.
const counterCleanupEvery = time.Minute

// countAttempt records one attempt against an hourly counter keyed by
// keyFor(start of the current UTC hour) and refuses with ERATELIMITED,
// without counting, once limit attempts were counted this hour. It also
// deletes a batch of expired counters: cleanup rides on later requests
// (docs/ARCHITECTURE.md#the-data-lifecycle).
func (db *DB) countAttempt(ctx context.Context, tx *Tx, keyFor func(hour time.Time) []byte, limit int) error {
	// rule (docs/ARCHITECTURE.md#the-data-lifecycle): expired counters are
	// deleted by work attached to later requests. The writer is single, so
	// this plain field is safe here.
	if now := Millis(tx.Now); now-db.lastCounterCleanup >= counterCleanupEvery.Milliseconds() || now < db.lastCounterCleanup {
		if _, err := tx.ExecContext(ctx, `DELETE FROM network_counters WHERE key IN
			(SELECT key FROM network_counters WHERE expires_at <= ? LIMIT 200)`, now); err != nil {
			return fmt.Errorf("delete expired counters: %w", err)
		}
		db.lastCounterCleanup = now
	}
	if limit < 1 {
		return ErrTooManyAttempts
	}
	hour := hourStart(tx.Now)
	key := keyFor(hour)
	// The counter only moves while it is below the limit: an attempt over
	// the limit is refused without a write (no row changes). The changed
	// row count says which, so the statement needs no RETURNING: SQLite
	// runs RETURNING through a temporary table of its own, built and
	// dropped on every call, which cost more than the upsert itself
	// (docs/PERFORMANCE.md#cpu-per-signup).
	res, err := tx.ExecContext(ctx, `INSERT INTO network_counters (key, attempts, expires_at) VALUES (?, 1, ?)
		ON CONFLICT (key) DO UPDATE SET attempts = network_counters.attempts + 1 WHERE network_counters.attempts < ?`,
		key, Millis(hour.Add(NetworkCounterLifetime)), limit)
	var counted int64
	if err == nil {
		counted, err = res.RowsAffected()
	}
	if err != nil {
		return fmt.Errorf("count attempt: %w", err)
	}
	if counted == 0 {
		return ErrTooManyAttempts
	}
	return nil
}
