package store

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Invitation is a one-use code's record. The code itself is never stored:
// only its SHA-256.
type Invitation struct {
	ID                 string
	ProgramID          string
	EntryID            string
	State              string
	IssuedAt           time.Time
	ExpiresAt          time.Time
	DeliveryRecordedAt *time.Time
	DeliveryChannel    string
	DeliveryReference  string
	TerminalAt         *time.Time
}

// Grant is a recipient's access to one program's private content.
type Grant struct {
	ID           string
	ProgramID    string
	EntryID      string
	InvitationID string
	UserID       string
	Active       bool
	GrantedAt    time.Time
	RevokedAt    *time.Time
}

// Invitation states.
const (
	InviteIssued   = "issued"
	InviteRedeemed = "redeemed"
	InviteRevoked  = "revoked"
	InviteExpired  = "expired"
)

// StateAt is the invitation's state as seen at now: an issued invitation
// past its expiry is expired even before the sweep records it.
func (inv *Invitation) StateAt(now time.Time) string {
	if inv.State == InviteIssued && !now.Before(inv.ExpiresAt) {
		return InviteExpired
	}
	return inv.State
}

const invitationColumns = `i.id, i.program_id, i.entry_id, i.state, i.issued_at, i.expires_at,
	i.delivery_recorded_at, coalesce(i.delivery_channel, ''), coalesce(i.delivery_reference, ''), i.terminal_at`

func scanInvitation(row interface{ Scan(...any) error }) (*Invitation, error) {
	var inv Invitation
	var issued, expires int64
	var delivered, terminal sql.NullInt64
	if err := row.Scan(&inv.ID, &inv.ProgramID, &inv.EntryID, &inv.State, &issued, &expires, &delivered,
		&inv.DeliveryChannel, &inv.DeliveryReference, &terminal); err != nil {
		return nil, err
	}
	inv.IssuedAt, inv.ExpiresAt = FromMillis(issued), FromMillis(expires)
	if delivered.Valid {
		t := FromMillis(delivered.Int64)
		inv.DeliveryRecordedAt = &t
	}
	if terminal.Valid {
		t := FromMillis(terminal.Int64)
		inv.TerminalAt = &t
	}
	return &inv, nil
}

func invitationByID(ctx context.Context, tx *Tx, id string) (*Invitation, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, Errorf(ENOTFOUND, "Not found.")
	}
	inv, err := scanInvitation(tx.QueryRowContext(ctx, `SELECT `+invitationColumns+` FROM invitations i WHERE i.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Errorf(ENOTFOUND, "Not found.")
	}
	if err != nil {
		return nil, fmt.Errorf("read invitation: %w", err)
	}
	return inv, nil
}

// ownedInvitation reads an invitation whose program the actor owns.
func ownedInvitation(ctx context.Context, tx *Tx, a Actor, id string) (*Invitation, *Program, error) {
	inv, err := invitationByID(ctx, tx, id)
	if err != nil {
		return nil, nil, err
	}
	p, err := ownedProgram(ctx, tx, a, inv.ProgramID)
	if err != nil {
		return nil, nil, err
	}
	return inv, p, nil
}

// validRequestKey checks an idempotency key: a canonical lowercase UUID.
func validRequestKey(k string) error {
	if u, err := uuid.Parse(k); err != nil || u.String() != k {
		return Errorf(EINVALID, "The request key must be a UUID. Reload the page and try again.")
	}
	return nil
}

// IssueResult is the outcome of IssueInvitation.
type IssueResult struct {
	Invitation *Invitation
	// Code is the invitation code, present only in the first response: it
	// is not stored and a same-key replay never shows it again.
	Code   string
	Replay bool
}

// CodeLength is the length of an invitation code: 32 random bytes as
// unpadded base64url.
const CodeLength = 43

// newInvitationCode returns a code and the SHA-256 of its decoded bytes.
func newInvitationCode() (string, []byte) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(b), sum[:]
}

// CodeDigest validates a code's shape and returns its stored digest.
func CodeDigest(code string) ([]byte, error) {
	bad := Errorf(EINVALID, "An invitation code is exactly 43 characters: letters, digits, - and _.")
	if len(code) != CodeLength {
		return nil, bad
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(code)
	if err != nil || len(b) != 32 {
		return nil, bad
	}
	sum := sha256.Sum256(b)
	return sum[:], nil
}

// expireIfDue marks an issued invitation past its expiry as expired and its
// entry selected again, with the event, judged by the transaction clock.
func (db *DB) expireIfDue(ctx context.Context, tx *Tx, p *Program, inv *Invitation) (bool, error) {
	if inv.State != InviteIssued || tx.Now.Before(inv.ExpiresAt) {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE invitations SET state = 'expired', terminal_at = ? WHERE id = ?`,
		Millis(tx.Now), inv.ID); err != nil {
		return false, fmt.Errorf("expire invitation: %w", err)
	}
	if err := db.setEntryState(ctx, tx, p.ID, inv.EntryID, StateSelected, p.RetiredAt != nil); err != nil {
		return false, err
	}
	return true, appendEvent(ctx, tx, p.ID, inv.EntryID, Actor{Kind: ActorSystem}, InviteExpiredDetails{InvitationID: inv.ID})
}

// NewInvitation is an invitation to issue: the owner's request key (a
// canonical UUID, which makes the issue idempotent) and the expiry, within
// the program's maximum lifetime. JSON carries the expiry as an RFC 3339
// instant (ExpiryInstant), a form as a day and a time (ExpiryFromForm).
type NewInvitation struct {
	RequestKey string    `json:"requestKey"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// IssueInvitation issues a one-use code for a selected entry (or an invited
// one whose issued invitation has expired), reserving a seat. The request
// key is looked up after the lock and before any state check: the same key
// and binding return the invitation's metadata without a code; another
// binding is a conflict.
func (db *DB) IssueInvitation(ctx context.Context, a Actor, programID, entryID string, ni NewInvitation) (*IssueResult, error) {
	requestKey, expiresAt := ni.RequestKey, ni.ExpiresAt
	if err := validRequestKey(requestKey); err != nil {
		return nil, err
	}
	expiresAt = expiresAt.UTC().Truncate(time.Millisecond)
	var res *IssueResult
	// replay answers a committed key from its receipt: the invitation's
	// metadata for the same binding, a conflict for another.
	replay := func(tx *Tx, p *Program) (bool, error) {
		target, err := ownerReceipt(ctx, tx, p.ID, requestKey, "issue_invitation", db.issueBinding(p.ID, entryID, expiresAt))
		if err != nil || target == "" {
			return err != nil, err
		}
		inv, err := invitationByID(ctx, tx, target)
		if err != nil {
			return true, err
		}
		res = &IssueResult{Invitation: inv, Replay: true}
		return true, nil
	}
	err := db.keyedOwnerWrite(ctx, a, programID, replay, func(tx *Tx, p *Program) error {
		e, err := db.invitableEntry(ctx, tx, p, entryID)
		if err != nil {
			return err
		}
		if err := checkInvitationRoom(ctx, tx, p, expiresAt); err != nil {
			return err
		}
		res, err = db.issue(ctx, tx, a, p, e, expiresAt, InviteIssuedDetails{})
		if err != nil {
			return err
		}
		return insertOwnerReceipt(ctx, tx, p.ID, requestKey, "issue_invitation", db.issueBinding(p.ID, entryID, expiresAt), res.Invitation.ID)
	})
	if err == nil && !res.Replay {
		db.obs.Invitation("issued")
	}
	return res, err
}

// issueBinding is the HMAC that binds an issue's request key to its fields.
func (db *DB) issueBinding(programID, entryID string, expiresAt time.Time) []byte {
	return bind(db.bindingKey, "issue_invitation", programID, entryID, strconv.FormatInt(Millis(expiresAt), 10))
}

// invitableEntry reads the entry an invitation is about to be issued for
// and checks that it may have one: selected, or invited with an issued
// invitation that has expired (which it expires now), and never granted.
func (db *DB) invitableEntry(ctx context.Context, tx *Tx, p *Program, entryID string) (*Entry, error) {
	e, err := entryByID(ctx, tx, p.ID, entryID)
	if err != nil {
		return nil, err
	}
	if e.State == StateInvited {
		cur, err := scanInvitation(tx.QueryRowContext(ctx, `SELECT `+invitationColumns+` FROM invitations i
			WHERE i.entry_id = ? AND i.program_id = ? AND i.state = 'issued'`, e.ID, p.ID))
		if err != nil {
			return nil, fmt.Errorf("read current invitation: %w", err)
		}
		expired, err := db.expireIfDue(ctx, tx, p, cur)
		if err != nil {
			return nil, err
		}
		if !expired {
			return nil, Errorf(ECONFLICT, "This entry already has a live invitation. Revoke it before issuing a new one.")
		}
		e.State = StateSelected
	}
	if e.State != StateSelected {
		return nil, Errorf(ECONFLICT, "Only a selected entry can be invited; this one is %s.", e.State)
	}
	var grants int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM grants WHERE entry_id = ?`, e.ID).Scan(&grants); err != nil {
		return nil, fmt.Errorf("check grant: %w", err)
	}
	if grants > 0 {
		return nil, Errorf(ECONFLICT, "This entry already redeemed an invitation; a new cycle needs a new program.")
	}
	return e, nil
}

// checkInvitationRoom checks that an invitation expiring at expiresAt may
// be issued now: the expiry within the program's limit and a seat free.
func checkInvitationRoom(ctx context.Context, tx *Tx, p *Program, expiresAt time.Time) error {
	if err := checkExpiry(tx, p, expiresAt); err != nil {
		return err
	}
	used, err := seatsInUse(ctx, tx, p.ID)
	if err != nil {
		return err
	}
	if used >= p.SeatCap {
		return Errorf(ECONFLICT, "All %d seats are taken by active grants and live invitations.", p.SeatCap)
	}
	return nil
}

// checkExpiry checks that an invitation expiring at expiresAt may be
// issued now: in the future and within the program's maximum lifetime.
func checkExpiry(tx *Tx, p *Program, expiresAt time.Time) error {
	if !expiresAt.After(tx.Now) || expiresAt.After(tx.Now.Add(time.Duration(p.MaxInvitationDays)*24*time.Hour)) {
		return Errorf(EINVALID, "The expiry must be in the future and within %d days.", p.MaxInvitationDays)
	}
	return nil
}

// issue writes a new invitation for e with its code's digest, moves e to
// invited, and appends the issue event (d with the invitation's ID). The
// caller stores the request's receipt.
func (db *DB) issue(ctx context.Context, tx *Tx, a Actor, p *Program, e *Entry, expiresAt time.Time,
	d InviteIssuedDetails) (*IssueResult, error) {
	code, digest := newInvitationCode()
	inv := &Invitation{ID: uuid.NewString(), ProgramID: p.ID, EntryID: e.ID, State: InviteIssued,
		IssuedAt: tx.Now, ExpiresAt: expiresAt}
	if _, err := tx.ExecContext(ctx, `INSERT INTO invitations (id, program_id, entry_id, code_digest, state, issued_at, expires_at)
		VALUES (?, ?, ?, ?, 'issued', ?, ?)`, inv.ID, p.ID, e.ID, digest, Millis(tx.Now), Millis(expiresAt)); err != nil {
		return nil, fmt.Errorf("insert invitation: %w", err)
	}
	if err := db.setEntryState(ctx, tx, p.ID, e.ID, StateInvited, false); err != nil {
		return nil, err
	}
	d.InvitationID = inv.ID
	if err := appendEvent(ctx, tx, p.ID, e.ID, a, d); err != nil {
		return nil, err
	}
	return &IssueResult{Invitation: inv, Code: code}, nil
}

// ownerReplay runs replay on a read snapshot, for the program owned
// returns (one the actor owns there). It reports done when the key had a
// receipt (replay answered or refused it); a key with no receipt yet, or
// any failure of the read, is left to the write transaction, which decides
// it under the lock.
func (db *DB) ownerReplay(ctx context.Context, owned func(*Tx) (*Program, error), replay func(*Tx, *Program) (bool, error)) (bool, error) {
	var done bool
	err := db.View(ctx, func(tx *Tx) error {
		p, err := owned(tx)
		if err != nil {
			return err
		}
		done, err = replay(tx, p)
		return err
	})
	if !done {
		return false, nil
	}
	return true, err
}

// keyedOwnerWrite runs an owner's write on a program that carries a
// request key. A replay is a read: a committed key is answered by replay
// before the write lock is asked for, so it answers even while writes
// fail. Under the lock the key is read again before any state check, then
// a retired program refuses the change, then write runs.
func (db *DB) keyedOwnerWrite(ctx context.Context, a Actor, programID string,
	replay func(*Tx, *Program) (bool, error), write func(*Tx, *Program) error) error {
	owned := func(tx *Tx) (*Program, error) { return ownedProgram(ctx, tx, a, programID) }
	if done, err := db.ownerReplay(ctx, owned, replay); done {
		return err
	}
	return db.Update(ctx, func(tx *Tx) error {
		p, err := ownedProgram(ctx, tx, a, programID)
		if err != nil {
			return err
		}
		// rule: the key is read again after the lock, before any state check.
		if done, err := replay(tx, p); done {
			return err
		}
		if err := unchangedIfRetired(p); err != nil {
			return err
		}
		return write(tx, p)
	})
}

// ownerReceipt looks up an owner action's request key. It returns the
// target ID for a replay with the same action and binding, "" for a new
// key, and a conflict for a key bound to something else.
func ownerReceipt(ctx context.Context, tx *Tx, programID, key, action string, binding []byte) (string, error) {
	var gotAction, target string
	var stored []byte
	err := tx.QueryRowContext(ctx, `SELECT action, binding_hmac, target_id FROM owner_action_receipts
		WHERE program_id = ? AND request_key = ?`, programID, key).Scan(&gotAction, &stored, &target)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read owner receipt: %w", err)
	}
	if gotAction != action || !hmac.Equal(stored, binding) {
		return "", Errorf(ECONFLICT, "This request key was already used for a different request. Reload and try again.")
	}
	return target, nil
}

func insertOwnerReceipt(ctx context.Context, tx *Tx, programID, key, action string, binding []byte, target string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO owner_action_receipts (program_id, request_key, action, binding_hmac, target_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`, programID, key, action, binding, target, Millis(tx.Now))
	if err != nil {
		return fmt.Errorf("insert owner receipt: %w", err)
	}
	return nil
}

// DeliveryRecord is the owner's record of sending an invitation's code:
// a request key (idempotency), the channel (DeliveryChannels) and an
// optional reference that holds no personal data (CheckDeliveryReference).
type DeliveryRecord struct {
	RequestKey string `json:"requestKey"`
	Channel    string `json:"channel"`
	Reference  string `json:"reference"`
}

// RecordDelivery records, once, the owner's statement that they sent the
// code through their own channel. It records a claim of sending, not a
// delivery. Idempotent by request key. The channel is one of
// DeliveryChannels and the reference must pass CheckDeliveryReference: the
// record holds no personal data, and erasing the entry clears the reference.
func (db *DB) RecordDelivery(ctx context.Context, a Actor, invitationID string, rec DeliveryRecord) (*Invitation, error) {
	requestKey, channel, reference := rec.RequestKey, rec.Channel, rec.Reference
	if err := validRequestKey(requestKey); err != nil {
		return nil, err
	}
	channel, reference = strings.TrimSpace(channel), strings.TrimSpace(reference)
	if err := CheckDeliveryChannel(channel); err != nil {
		return nil, err
	}
	if err := CheckDeliveryReference(reference); err != nil {
		return nil, err
	}
	var out *Invitation
	// replay answers a committed key from its receipt.
	replay := func(tx *Tx, p *Program) (bool, error) {
		binding := bind(db.bindingKey, "record_delivery", p.ID, invitationID, channel, reference)
		target, err := ownerReceipt(ctx, tx, p.ID, requestKey, "record_delivery", binding)
		if err != nil || target == "" {
			return err != nil, err
		}
		out, err = invitationByID(ctx, tx, target)
		return true, err
	}
	// A replay is a read: answered before the write lock is asked for.
	owned := func(tx *Tx) (*Program, error) {
		_, p, err := ownedInvitation(ctx, tx, a, invitationID)
		return p, err
	}
	if done, err := db.ownerReplay(ctx, owned, replay); done {
		return out, err
	}
	err := db.Update(ctx, func(tx *Tx) error {
		inv, p, err := ownedInvitation(ctx, tx, a, invitationID)
		if err != nil {
			return err
		}
		// rule: the key is read again after the lock, before any state check.
		if done, err := replay(tx, p); done {
			return err
		}
		if err := unchangedIfRetired(p); err != nil {
			return err
		}
		binding := bind(db.bindingKey, "record_delivery", p.ID, inv.ID, channel, reference)
		if inv.DeliveryRecordedAt != nil {
			return Errorf(ECONFLICT, "A send was already recorded for this invitation.")
		}
		if inv.State != InviteIssued || !tx.Now.Before(inv.ExpiresAt) {
			return Errorf(ECONFLICT, "This invitation is %s; a send can be recorded only for a live one.", inv.State)
		}
		var ref any
		if reference != "" {
			ref = reference
		}
		if _, err := tx.ExecContext(ctx, `UPDATE invitations SET delivery_recorded_at = ?, delivery_channel = ?, delivery_reference = ?
			WHERE id = ?`, Millis(tx.Now), channel, ref, inv.ID); err != nil {
			return fmt.Errorf("record delivery: %w", err)
		}
		if err := insertOwnerReceipt(ctx, tx, p.ID, requestKey, "record_delivery", binding, inv.ID); err != nil {
			return err
		}
		if err := appendEvent(ctx, tx, p.ID, inv.EntryID, a, DeliveryRecordedDetails{InvitationID: inv.ID, Channel: channel}); err != nil {
			return err
		}
		out, err = invitationByID(ctx, tx, inv.ID)
		return err
	})
	return out, err
}

// RevokeInvitation cancels an issued, unredeemed invitation: the entry is
// selected again and its seat is free.
func (db *DB) RevokeInvitation(ctx context.Context, a Actor, invitationID string) (*Invitation, error) {
	var out *Invitation
	err := db.Update(ctx, func(tx *Tx) error {
		inv, p, err := ownedInvitation(ctx, tx, a, invitationID)
		if err != nil {
			return err
		}
		if err := unchangedIfRetired(p); err != nil {
			return err
		}
		if inv.State != InviteIssued {
			return Errorf(ECONFLICT, "This invitation is %s and cannot be revoked. To end access after redemption, revoke the grant.", inv.State)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE invitations SET state = 'revoked', terminal_at = ? WHERE id = ?`,
			Millis(tx.Now), inv.ID); err != nil {
			return fmt.Errorf("revoke invitation: %w", err)
		}
		if err := db.setEntryState(ctx, tx, p.ID, inv.EntryID, StateSelected, p.RetiredAt != nil); err != nil {
			return err
		}
		if err := appendEvent(ctx, tx, p.ID, inv.EntryID, a, InviteRevokedDetails{InvitationID: inv.ID}); err != nil {
			return err
		}
		out, err = invitationByID(ctx, tx, inv.ID)
		return err
	})
	if err == nil {
		db.obs.Invitation("revoked")
	}
	return out, err
}

const grantColumns = `g.id, g.program_id, g.entry_id, g.invitation_id, g.user_id, g.active, g.granted_at, g.revoked_at`

func scanGrant(row interface{ Scan(...any) error }) (*Grant, error) {
	var g Grant
	var granted int64
	var revoked sql.NullInt64
	if err := row.Scan(&g.ID, &g.ProgramID, &g.EntryID, &g.InvitationID, &g.UserID, &g.Active, &granted, &revoked); err != nil {
		return nil, err
	}
	g.GrantedAt = FromMillis(granted)
	if revoked.Valid {
		t := FromMillis(revoked.Int64)
		g.RevokedAt = &t
	}
	return &g, nil
}

// RevokeGrant ends a recipient's access: the grant is inactive and the
// entry revoked, so the next read of the private content is denied.
func (db *DB) RevokeGrant(ctx context.Context, a Actor, grantID string) (*Grant, error) {
	if _, err := uuid.Parse(grantID); err != nil {
		return nil, Errorf(ENOTFOUND, "Not found.")
	}
	var out *Grant
	err := db.Update(ctx, func(tx *Tx) error {
		g, err := scanGrant(tx.QueryRowContext(ctx, `SELECT `+grantColumns+` FROM grants g WHERE g.id = ?`, grantID))
		if errors.Is(err, sql.ErrNoRows) {
			return Errorf(ENOTFOUND, "Not found.")
		}
		if err != nil {
			return fmt.Errorf("read grant: %w", err)
		}
		p, err := ownedForChange(ctx, tx, a, g.ProgramID, "")
		if err != nil {
			return err
		}
		if !g.Active {
			return Errorf(ECONFLICT, "This access was already revoked.")
		}
		if _, err := tx.ExecContext(ctx, `UPDATE grants SET active = 0, revoked_at = ? WHERE id = ?`, Millis(tx.Now), g.ID); err != nil {
			return fmt.Errorf("revoke grant: %w", err)
		}
		if err := db.setEntryState(ctx, tx, p.ID, g.EntryID, StateRevoked, p.RetiredAt != nil); err != nil {
			return err
		}
		if err := appendEvent(ctx, tx, p.ID, g.EntryID, a, GrantRevokedDetails{GrantID: g.ID}); err != nil {
			return err
		}
		out, err = scanGrant(tx.QueryRowContext(ctx, `SELECT `+grantColumns+` FROM grants g WHERE g.id = ?`, g.ID))
		return err
	})
	return out, err
}
