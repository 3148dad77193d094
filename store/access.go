package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// notFound is the one answer for every failed redemption or private read:
// absent, foreign, unverified, expired, revoked and used all look the same.
func notFound() error { return Errorf(ENOTFOUND, "Not found.") }

// ErrCodeNotActive refuses a live code whose send the owner has not
// recorded yet. It is a not-found like every other refusal (the JSON API
// cannot tell them apart); the redeem page tells its holder to ask the
// sender. It is decided by the code alone, never by the account's
// addresses, so it says nothing the code itself does not prove
// (docs/API.md#redeem).
var ErrCodeNotActive = &Error{Code: ENOTFOUND, Message: "Not found."}

// Redemption is a successful redeem.
type Redemption struct {
	ProgramID string
	Slug      string
	GrantID   string
}

// Redeem consumes an invitation code for the signed-in user. The caller
// looked up the user's currently verified emails before the transaction;
// inside it every fact is checked again: the digest, that the entry's email
// is one of those addresses, the delivery record, the invitation issued and
// unexpired by the transaction clock, the entry invited, the program and
// workspace active. Then the invitation is redeemed and exactly one grant is
// bound to the user. Every failure is a not-found; a live code whose send
// is not recorded yet is ErrCodeNotActive, decided before the addresses
// are looked at.
//
// Each of limits counts the attempt first, in the same transaction and in
// the given order (docs/API.md#redeem: count, then act). An attempt over a limit
// is refused with ERATELIMITED and not counted by that limit or any later
// one; once counted, an attempt stays counted whatever the redemption's
// answer.
func (db *DB) Redeem(ctx context.Context, userID string, verifiedEmails []string, code string, limits ...AttemptLimit) (*Redemption, error) {
	digest, err := CodeDigest(code)
	if err != nil {
		return nil, err
	}
	var (
		out    *Redemption
		answer error
	)
	err = db.Update(ctx, func(tx *Tx) error {
		for _, l := range limits {
			if err := db.countAttempt(ctx, tx, l.Key, l.Max); err != nil {
				if isRefusal(err) {
					answer = err // the attempts counted so far commit
					return nil
				}
				return err
			}
		}
		// The redemption runs under a savepoint, so that whatever it
		// answers, nothing of it is kept but the counted attempts are.
		if _, err := tx.ExecContext(ctx, `SAVEPOINT redeem`); err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		out, answer = db.redeem(ctx, tx, userID, verifiedEmails, digest)
		if answer != nil {
			if _, err := tx.ExecContext(ctx, `ROLLBACK TO redeem`); err != nil {
				return fmt.Errorf("rollback to savepoint: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `RELEASE redeem`); err != nil {
			return fmt.Errorf("release savepoint: %w", err)
		}
		return nil
	})
	if err != nil {
		db.obs.RedemptionFailed(redemptionReason(err))
		return nil, err
	}
	if answer != nil {
		db.obs.RedemptionFailed(redemptionReason(answer))
		return nil, answer
	}
	db.obs.Invitation("redeemed")
	return out, nil
}

// redeem is Redeem's redemption, inside tx.
func (db *DB) redeem(ctx context.Context, tx *Tx, userID string, verifiedEmails []string, digest []byte) (*Redemption, error) {
	if userID == "" || len(verifiedEmails) == 0 {
		return nil, notFound()
	}
	var (
		invID, programID, entryID, invState, entryState, email, slug string
		expires                                                      int64
		delivered, retired                                           sql.NullInt64
		wsActive                                                     bool
	)
	err := tx.QueryRowContext(ctx, `SELECT i.id, i.program_id, i.entry_id, i.state, i.expires_at, i.delivery_recorded_at,
			e.state, e.email_key, p.public_slug, p.retired_at, w.active
		FROM invitations i
		JOIN entries e ON e.id = i.entry_id AND e.program_id = i.program_id
		JOIN programs p ON p.id = i.program_id
		JOIN workspaces w ON w.id = p.workspace_id
		WHERE i.code_digest = ?`, digest).
		Scan(&invID, &programID, &entryID, &invState, &expires, &delivered, &entryState, &email, &slug, &retired, &wsActive)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound()
	}
	if err != nil {
		return nil, fmt.Errorf("find invitation: %w", err)
	}
	live := invState == InviteIssued && tx.Now.Before(FromMillis(expires)) && entryState == StateInvited &&
		!retired.Valid && wsActive
	if live && !delivered.Valid {
		return nil, ErrCodeNotActive
	}
	switch {
	case !oneOf(email, verifiedEmails),
		!delivered.Valid,
		invState != InviteIssued,
		!tx.Now.Before(FromMillis(expires)),
		entryState != StateInvited,
		retired.Valid,
		!wsActive:
		return nil, notFound()
	}
	var taken int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM grants WHERE program_id = ? AND user_id = ?`,
		programID, userID).Scan(&taken); err != nil {
		return nil, fmt.Errorf("check grants: %w", err)
	}
	if taken > 0 {
		return nil, notFound() // one account holds at most one grant per program
	}
	if _, err := tx.ExecContext(ctx, `UPDATE invitations SET state = 'redeemed', terminal_at = ? WHERE id = ? AND state = 'issued'`,
		Millis(tx.Now), invID); err != nil {
		return nil, fmt.Errorf("redeem invitation: %w", err)
	}
	grantID := uuid.NewString()
	if _, err := tx.ExecContext(ctx, `INSERT INTO grants (id, program_id, entry_id, invitation_id, user_id, active, granted_at)
		VALUES (?, ?, ?, ?, ?, 1, ?)`, grantID, programID, entryID, invID, userID, Millis(tx.Now)); err != nil {
		return nil, fmt.Errorf("insert grant: %w", err)
	}
	if err := db.setEntryState(ctx, tx, programID, entryID, StateActive, false); err != nil {
		return nil, err
	}
	if err := appendEvent(ctx, tx, programID, entryID, Actor{Kind: ActorRecipient, UserID: userID}, RedeemedDetails{InvitationID: invID, GrantID: grantID}); err != nil {
		return nil, err
	}
	return &Redemption{ProgramID: programID, Slug: slug, GrantID: grantID}, nil
}

// PrivateContent is a program's private content as its recipient reads it.
type PrivateContent struct {
	ProgramID string
	Slug      string
	Name      string
	Purpose   string
	Body      string
	Revision  int64
	UpdatedAt time.Time
	Assets    []AssetInfo
}

// accessGate is the one scoped statement behind every private read. The
// program is resolved from the slug on the server; the grant, entry and
// content must all belong to that same program; the grant must be this
// user's and active, the entry active with an email among the user's
// currently verified addresses, access enabled and the workspace active.
// The content row (alias c) is joined on the same program.
func accessGate(emails int) string {
	return `FROM programs p
		JOIN workspaces w ON w.id = p.workspace_id AND w.active = 1
		JOIN grants g ON g.program_id = p.id AND g.active = 1 AND g.user_id = ?
		JOIN entries e ON e.id = g.entry_id AND e.program_id = p.id AND e.state = 'active'
			AND e.email_key IN (` + placeholders(emails) + `)
		JOIN early_access_content c ON c.program_id = p.id
		WHERE p.public_slug = ? AND p.access_enabled = 1 AND p.retired_at IS NULL`
}

func gateArgs(userID string, emails []string, slug string) []any {
	args := []any{userID}
	for _, e := range emails {
		args = append(args, e)
	}
	return append(args, slug)
}

// ReadPrivateContent returns the program's private content if, and only if,
// the user passes the access gate for that program. Any failure is the same
// not-found.
func (db *DB) ReadPrivateContent(ctx context.Context, slug, userID string, verifiedEmails []string) (*PrivateContent, error) {
	if !ValidSlug(slug) || userID == "" || len(verifiedEmails) == 0 {
		return nil, notFound()
	}
	// One statement, so one snapshot without a transaction: the content
	// and, as a JSON array, the list of its assets (docs/PERFORMANCE.md#private-content-in-one-statement).
	c := &PrivateContent{}
	var updated int64
	var assets string
	assetList := db.engine.pick(
		`(SELECT json_group_array(json_array(a.name, a.content_type, length(a.data), a.created_at) ORDER BY a.name)
				FROM private_assets a WHERE a.program_id = p.id) `,
		// json_agg of no rows is NULL where SQLite's json_group_array is [].
		`(SELECT coalesce(json_agg(json_build_array(a.name, a.content_type, octet_length(a.data), a.created_at) ORDER BY a.name), '[]')::text
				FROM private_assets a WHERE a.program_id = p.id) `)
	err := db.readRow(ctx, `SELECT p.id, p.public_slug, p.name, p.purpose, c.body, c.revision, c.updated_at, `+assetList+
		accessGate(len(verifiedEmails)), gateArgs(userID, verifiedEmails, slug)...).
		Scan(&c.ProgramID, &c.Slug, &c.Name, &c.Purpose, &c.Body, &c.Revision, &updated, &assets)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound()
	}
	if err != nil {
		return nil, fmt.Errorf("read private content: %w", err)
	}
	c.UpdatedAt = FromMillis(updated)
	if c.Assets, err = decodeAssetInfos(assets); err != nil {
		return nil, err
	}
	return c, nil
}

// Asset is a private file's bytes.
type Asset struct {
	Name        string
	ContentType string
	Data        []byte
	SHA256      []byte
}

// ReadPrivateAsset returns a private asset of the program behind the same
// gate as its content.
func (db *DB) ReadPrivateAsset(ctx context.Context, slug, name, userID string, verifiedEmails []string) (*Asset, error) {
	if !ValidSlug(slug) || !ValidAssetName(name) || userID == "" || len(verifiedEmails) == 0 {
		return nil, notFound()
	}
	var out *Asset
	err := db.View(ctx, func(tx *Tx) error {
		a := &Asset{}
		args := append(gateArgs(userID, verifiedEmails, slug), name)
		err := tx.QueryRowContext(ctx, `SELECT a.name, a.content_type, a.data, a.sha256
			FROM private_assets a WHERE a.program_id = (SELECT p.id `+accessGate(len(verifiedEmails))+`) AND a.name = ?`,
			args...).Scan(&a.Name, &a.ContentType, &a.Data, &a.SHA256)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound()
		}
		if err != nil {
			return fmt.Errorf("read private asset: %w", err)
		}
		out = a
		return nil
	})
	return out, err
}

// WithdrawOwn withdraws the signed-in applicant's own entry in the program
// at slug, matched by a currently verified email; any issued invitation and
// active grant are revoked in the same transaction. Repeating it gives the
// same withdrawn answer; no match is not-found.
func (db *DB) WithdrawOwn(ctx context.Context, slug, userID string, verifiedEmails []string) (*OwnEntry, error) {
	if !ValidSlug(slug) || len(verifiedEmails) == 0 {
		return nil, notFound()
	}
	a := Actor{Kind: ActorRecipient, UserID: userID}
	var out *OwnEntry
	err := db.Update(ctx, func(tx *Tx) error {
		p, err := programWhere(ctx, tx, "p.public_slug = ?", slug)
		if err != nil {
			return err
		}
		args := []any{p.ID}
		for _, e := range verifiedEmails {
			args = append(args, e)
		}
		var entryID string
		err = tx.QueryRowContext(ctx, `SELECT id FROM entries WHERE program_id = ? AND erased_at IS NULL
			AND email_key IN (`+placeholders(len(verifiedEmails))+`) ORDER BY created_at, id LIMIT 1`, args...).Scan(&entryID)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound()
		}
		if err != nil {
			return fmt.Errorf("find own entry: %w", err)
		}
		e, err := db.withdraw(ctx, tx, a, p, entryID, ViaApplicant)
		if err != nil {
			return err
		}
		out = &OwnEntry{ProgramID: p.ID, Slug: p.Slug, Name: p.Name, Purpose: p.Purpose, AccessEnabled: p.AccessEnabled,
			State: e.State, JoinedAt: e.CreatedAt, NoticeVersion: e.NoticeVersion}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
