package store

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// MaxBulkInvitations is the most invitations one bulk issue or one bulk
// delivery record covers.
const MaxBulkInvitations = 1000

// NewInvitations is a bulk issue: the owner's request key (a canonical
// UUID, which makes the issue idempotent), the selected entries, each at
// most once, and one expiry for all of them.
type NewInvitations struct {
	RequestKey string    `json:"requestKey"`
	EntryIDs   []string  `json:"entryIds"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

// BulkIssueResult is the outcome of IssueInvitations: one IssueResult per
// entry, in the request's order. Their codes are present only in the first
// response; a same-key replay answers the same invitations without codes.
type BulkIssueResult struct {
	Issued []IssueResult
	Replay bool
}

// checkBulkIDs checks a bulk request's list: 1–MaxBulkInvitations IDs,
// each a UUID, none twice. what names the list's items in the message.
func checkBulkIDs(ids []string, field, what string) error {
	if len(ids) == 0 || len(ids) > MaxBulkInvitations {
		return Errorf(EINVALID, "Choose 1–%d %s.", MaxBulkInvitations, what).On(field)
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if u, err := uuid.Parse(id); err != nil || u.String() != id {
			return Errorf(EINVALID, "Each of the %s is named by its ID.", what).On(field)
		}
		if seen[id] {
			return Errorf(EINVALID, "Each of the %s may be named once.", what).On(field)
		}
		seen[id] = true
	}
	return nil
}

// IssueInvitations issues one code to each of several selected entries in
// one transaction, all or none: an entry that cannot be invited now, or
// fewer seats left than entries, refuses the whole request and names the
// entry or the seats left. Each invitation gets its own invite_issued
// event. The request key is answered like IssueInvitation's: read after
// the lock and before any state check, the same binding replays the
// invitations' metadata without codes, another binding is a conflict.
func (db *DB) IssueInvitations(ctx context.Context, a Actor, programID string, in NewInvitations) (*BulkIssueResult, error) {
	if err := validRequestKey(in.RequestKey); err != nil {
		return nil, err
	}
	if err := checkBulkIDs(in.EntryIDs, "entryIds", "entries"); err != nil {
		return nil, err
	}
	expiresAt := in.ExpiresAt.UTC().Truncate(time.Millisecond)
	binding := func(p *Program) []byte {
		fields := append([]string{p.ID, strconv.FormatInt(Millis(expiresAt), 10)}, in.EntryIDs...)
		return bind(db.bindingKey, "issue_invitations", fields...)
	}
	var res *BulkIssueResult
	replay := func(tx *Tx, p *Program) (bool, error) {
		targets, err := ownerBulkReceipt(ctx, tx, p.ID, in.RequestKey, "issue_invitations", binding(p))
		if err != nil || targets == nil {
			return err != nil, err
		}
		res = &BulkIssueResult{Replay: true}
		for _, id := range targets {
			inv, err := invitationByID(ctx, tx, id)
			if err != nil {
				return true, err
			}
			res.Issued = append(res.Issued, IssueResult{Invitation: inv, Replay: true})
		}
		return true, nil
	}
	err := db.keyedOwnerWrite(ctx, a, programID, replay, func(tx *Tx, p *Program) error {
		if err := checkExpiry(tx, p, expiresAt); err != nil {
			return err
		}
		// Every entry is checked first (an expired invitation it still
		// holds is expired now, which frees its seat), then the seats are
		// counted once for all of them.
		entries := make([]*Entry, 0, len(in.EntryIDs))
		for _, id := range in.EntryIDs {
			e, err := db.invitableEntry(ctx, tx, p, id)
			if err != nil {
				return refusedEntry(err, id)
			}
			entries = append(entries, e)
		}
		used, err := seatsInUse(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		if left := max(0, p.SeatCap-used); len(entries) > left {
			e := Errorf(ECONFLICT, "%d invitations need %d seats; %d of the %d seats are left.", len(entries), len(entries), left, p.SeatCap)
			e.SeatsLeft = &left
			return e
		}
		res = &BulkIssueResult{Issued: make([]IssueResult, 0, len(entries))}
		targets := make([]string, 0, len(entries))
		for _, e := range entries {
			r, err := db.issue(ctx, tx, a, p, e, expiresAt, InviteIssuedDetails{Batch: true})
			if err != nil {
				return err
			}
			res.Issued = append(res.Issued, *r)
			targets = append(targets, r.Invitation.ID)
		}
		return insertOwnerBulkReceipt(ctx, tx, p.ID, in.RequestKey, "issue_invitations", binding(p), targets)
	})
	if err != nil {
		return nil, err
	}
	if !res.Replay {
		for range res.Issued {
			db.obs.Invitation("issued")
		}
	}
	return res, nil
}

// refusedEntry names entryID on a bulk request's refusal that is about one
// of its entries. "Not found" stays the generic answer.
func refusedEntry(err error, entryID string) error {
	var e *Error
	if errors.As(err, &e) && e.Code == ECONFLICT {
		c := e.about(entryID, "")
		c.Message = "Entry " + entryID + ": " + e.Message
		return c
	}
	return err
}

// DeliveryRecords is a bulk delivery record: one channel and reference for
// several invitations of one program, each at most once.
type DeliveryRecords struct {
	RequestKey    string   `json:"requestKey"`
	InvitationIDs []string `json:"invitationIds"`
	Channel       string   `json:"channel"`
	Reference     string   `json:"reference"`
}

// RecordDeliveries records, in one transaction, the owner's statement that
// they sent several invitations' codes, all or none: an invitation that is
// not live or already has a record refuses the request and is named. Each
// gets its own delivery_recorded event. Idempotent by request key like
// RecordDelivery.
func (db *DB) RecordDeliveries(ctx context.Context, a Actor, programID string, rec DeliveryRecords) ([]Invitation, error) {
	if err := validRequestKey(rec.RequestKey); err != nil {
		return nil, err
	}
	channel, reference := strings.TrimSpace(rec.Channel), strings.TrimSpace(rec.Reference)
	if err := CheckDeliveryChannel(channel); err != nil {
		return nil, err
	}
	if err := CheckDeliveryReference(reference); err != nil {
		return nil, err
	}
	if err := checkBulkIDs(rec.InvitationIDs, "invitationIds", "invitations"); err != nil {
		return nil, err
	}
	binding := func(p *Program) []byte {
		return bind(db.bindingKey, "record_deliveries", append([]string{p.ID, channel, reference}, rec.InvitationIDs...)...)
	}
	var out []Invitation
	read := func(tx *Tx, ids []string) error {
		out = make([]Invitation, 0, len(ids))
		for _, id := range ids {
			inv, err := invitationByID(ctx, tx, id)
			if err != nil {
				return err
			}
			out = append(out, *inv)
		}
		return nil
	}
	replay := func(tx *Tx, p *Program) (bool, error) {
		targets, err := ownerBulkReceipt(ctx, tx, p.ID, rec.RequestKey, "record_deliveries", binding(p))
		if err != nil || targets == nil {
			return err != nil, err
		}
		return true, read(tx, targets)
	}
	err := db.keyedOwnerWrite(ctx, a, programID, replay, func(tx *Tx, p *Program) error {
		var ref any
		if reference != "" {
			ref = reference
		}
		for _, id := range rec.InvitationIDs {
			inv, err := invitationByID(ctx, tx, id)
			if err != nil {
				return err
			}
			if inv.ProgramID != p.ID {
				return Errorf(ENOTFOUND, "Not found.")
			}
			if inv.DeliveryRecordedAt != nil {
				return Errorf(ECONFLICT, "Invitation %s: a send was already recorded for it.", id).about("", id)
			}
			if inv.State != InviteIssued || !tx.Now.Before(inv.ExpiresAt) {
				return Errorf(ECONFLICT, "Invitation %s is %s; a send can be recorded only for a live one.", id, inv.StateAt(tx.Now)).about("", id)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE invitations SET delivery_recorded_at = ?, delivery_channel = ?, delivery_reference = ?
				WHERE id = ?`, Millis(tx.Now), channel, ref, inv.ID); err != nil {
				return fmt.Errorf("record delivery: %w", err)
			}
			if err := appendEvent(ctx, tx, p.ID, inv.EntryID, a,
				DeliveryRecordedDetails{InvitationID: inv.ID, Channel: channel, Batch: true}); err != nil {
				return err
			}
		}
		if err := insertOwnerBulkReceipt(ctx, tx, p.ID, rec.RequestKey, "record_deliveries", binding(p), rec.InvitationIDs); err != nil {
			return err
		}
		return read(tx, rec.InvitationIDs)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ownerBulkReceipt looks up a bulk owner action's request key: the
// targets in the request's order for a replay with the same action and
// binding, nil for a new key, and a conflict for a key bound to something
// else (a single action's key included).
func ownerBulkReceipt(ctx context.Context, tx *Tx, programID, key, action string, binding []byte) ([]string, error) {
	first, err := ownerReceipt(ctx, tx, programID, key, action, binding)
	if err != nil || first == "" {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT target_id FROM owner_receipt_targets
		WHERE program_id = ? AND request_key = ? ORDER BY position`, programID, key)
	if err != nil {
		return nil, fmt.Errorf("read receipt targets: %w", err)
	}
	defer rows.Close()
	var targets []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read receipt target: %w", err)
		}
		targets = append(targets, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read receipt targets: %w", err)
	}
	return targets, nil
}

// insertOwnerBulkReceipt stores a bulk action's receipt: the first target
// on the receipt and every target, in order, beside it.
func insertOwnerBulkReceipt(ctx context.Context, tx *Tx, programID, key, action string, binding []byte, targets []string) error {
	if err := insertOwnerReceipt(ctx, tx, programID, key, action, binding, targets[0]); err != nil {
		return err
	}
	for i, id := range targets {
		if _, err := tx.ExecContext(ctx, `INSERT INTO owner_receipt_targets (program_id, request_key, position, target_id)
			VALUES (?, ?, ?, ?)`, programID, key, i, id); err != nil {
			return fmt.Errorf("insert receipt target: %w", err)
		}
	}
	return nil
}

// IssuedCode is an invitation and the code it was issued with, as the
// owner's browser sends them back for a mail-merge sheet.
type IssuedCode struct {
	InvitationID string
	Code         string
}

// CodeSheetRow is one line of a mail-merge sheet: where to send a code,
// the code, and until when it can be redeemed.
type CodeSheetRow struct {
	InvitationID string
	Email        string
	Code         string
	ExpiresAt    time.Time
}

// CodeSheet checks that each code is the one its invitation of the program
// was issued with (the store keeps only the code's digest) and returns the
// rows of a mail-merge sheet, in the given order. It stores nothing: the
// codes come from the one answer that showed them. Any code that does not
// match, or an invitation that is not the program's, is the generic "not
// found".
func (db *DB) CodeSheet(ctx context.Context, a Actor, programID string, codes []IssuedCode) ([]CodeSheetRow, error) {
	if len(codes) == 0 || len(codes) > MaxBulkInvitations {
		return nil, Errorf(EINVALID, "Choose 1–%d invitations.", MaxBulkInvitations)
	}
	out := make([]CodeSheetRow, 0, len(codes))
	err := db.View(ctx, func(tx *Tx) error {
		p, err := ownedProgram(ctx, tx, a, programID)
		if err != nil {
			return err
		}
		for _, c := range codes {
			digest, err := CodeDigest(c.Code)
			if err != nil {
				return Errorf(ENOTFOUND, "Not found.")
			}
			if _, err := uuid.Parse(c.InvitationID); err != nil {
				return Errorf(ENOTFOUND, "Not found.")
			}
			var row CodeSheetRow
			var stored []byte
			var expires int64
			var email sql.NullString
			err = tx.QueryRowContext(ctx, `SELECT i.code_digest, i.expires_at, CASE WHEN e.erased_at IS NULL THEN e.email_key END
				FROM invitations i JOIN entries e ON e.id = i.entry_id AND e.program_id = i.program_id
				WHERE i.id = ? AND i.program_id = ?`, c.InvitationID, p.ID).Scan(&stored, &expires, &email)
			if errors.Is(err, sql.ErrNoRows) || err == nil && subtle.ConstantTimeCompare(stored, digest) != 1 {
				return Errorf(ENOTFOUND, "Not found.")
			}
			if err != nil {
				return fmt.Errorf("read invitation for sheet: %w", err)
			}
			row.InvitationID, row.Email, row.Code, row.ExpiresAt = c.InvitationID, email.String, c.Code, FromMillis(expires)
			out = append(out, row)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// MaxListedInvitations bounds the Invitations page: the newest ones.
const MaxListedInvitations = 500

// ListedInvitation is an invitation with the address of its entry ("" once
// erased).
type ListedInvitation struct {
	Invitation
	Email string
}

// ProgramInvitations lists the program's invitations, newest first, at
// most MaxListedInvitations.
func (db *DB) ProgramInvitations(ctx context.Context, a Actor, programID string) ([]ListedInvitation, error) {
	var out []ListedInvitation
	err := db.View(ctx, func(tx *Tx) error {
		p, err := ownedProgram(ctx, tx, a, programID)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+invitationColumns+`, CASE WHEN e.erased_at IS NULL THEN e.email_key END
			FROM invitations i JOIN entries e ON e.id = i.entry_id AND e.program_id = i.program_id
			WHERE i.program_id = ? ORDER BY i.issued_at DESC, i.id DESC LIMIT ?`, p.ID, MaxListedInvitations)
		if err != nil {
			return fmt.Errorf("list invitations: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var li ListedInvitation
			var email sql.NullString
			var issued, expires int64
			var delivered, terminal sql.NullInt64
			if err := rows.Scan(&li.ID, &li.ProgramID, &li.EntryID, &li.State, &issued, &expires, &delivered,
				&li.DeliveryChannel, &li.DeliveryReference, &terminal, &email); err != nil {
				return err
			}
			li.IssuedAt, li.ExpiresAt, li.Email = FromMillis(issued), FromMillis(expires), email.String
			if delivered.Valid {
				t := FromMillis(delivered.Int64)
				li.DeliveryRecordedAt = &t
			}
			if terminal.Valid {
				t := FromMillis(terminal.Int64)
				li.TerminalAt = &t
			}
			out = append(out, li)
		}
		return rows.Err()
	})
	return out, err
}
