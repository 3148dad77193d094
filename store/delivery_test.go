package store

import (
	"context"
	"database/sql"
	"reflect"
	"strings"
	"testing"
	"time"

	"admit/migrations"

	"github.com/google/uuid"
	"github.com/pressly/goose/v3"
)

// sentWithReference selects an entry, issues it an invitation and records
// its send with the given reference; it returns the invitation ID and code.
func (f *lifecycleFixture) sentWithReference(t *testing.T, entryID, reference string) (string, string) {
	t.Helper()
	ctx := context.Background()
	if _, err := f.db.SelectEntry(ctx, f.owner, f.p.ID, entryID, Decision{Reason: "meets_policy"}); err != nil {
		t.Fatal(err)
	}
	res, err := f.db.IssueInvitation(ctx, f.owner, f.p.ID, entryID, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: f.clock.Now().Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.RecordDelivery(ctx, f.owner, res.Invitation.ID, DeliveryRecord{RequestKey: uuid.NewString(), Channel: ChannelChat, Reference: reference}); err != nil {
		t.Fatalf("record delivery: %v", err)
	}
	return res.Invitation.ID, res.Code
}

// deliveryRecord is an invitation's stored channel and reference.
func deliveryRecord(t *testing.T, db *DB, invitationID string) (channel, reference sql.NullString) {
	t.Helper()
	mustUpdate(t, db, func(tx *Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT delivery_channel, delivery_reference FROM invitations WHERE id = ?`,
			invitationID).Scan(&channel, &reference)
	})
	return channel, reference
}

func TestRecordDelivery_ChannelIsOneOfTheCodes(t *testing.T) {
	f := newLifecycleFixture(t)
	ctx := context.Background()
	for _, code := range DeliveryChannels {
		t.Run(code, func(t *testing.T) {
			id, _ := f.join(t, "to-"+code+"@example.com")
			if _, err := f.db.SelectEntry(ctx, f.owner, f.p.ID, id, Decision{Reason: "meets_policy"}); err != nil {
				t.Fatal(err)
			}
			res, err := f.db.IssueInvitation(ctx, f.owner, f.p.ID, id, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: f.clock.Now().Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range []string{"", "Email", "e-mail", "phone", "in person", "email from my work account", "alice@example.com"} {
				before := historyRows(t, f.db, "invitations")
				_, err := f.db.RecordDelivery(ctx, f.owner, res.Invitation.ID, DeliveryRecord{RequestKey: uuid.NewString(), Channel: bad})
				wantErrorCode(t, "channel "+bad, err, EINVALID)
				if after := historyRows(t, f.db, "invitations"); !reflect.DeepEqual(before, after) {
					t.Fatalf("channel %q changed the invitations", bad)
				}
			}
			inv, err := f.db.RecordDelivery(ctx, f.owner, res.Invitation.ID, DeliveryRecord{RequestKey: uuid.NewString(), Channel: code})
			if err != nil {
				t.Fatal(err)
			}
			if inv.DeliveryChannel != code {
				t.Fatalf("channel read back %q, want %q", inv.DeliveryChannel, code)
			}
			if n := mustCount(t, f.db, `SELECT count(*) FROM audit_events WHERE event_type = 'delivery_recorded'
				AND `+jsonField("channel")+` = ? AND `+jsonField("invitationId")+` = ?`, code, inv.ID); n != 1 {
				t.Fatalf("delivery_recorded events with the channel: %d", n)
			}
		})
	}
}

func TestCheckDeliveryReference_RefusesAddressesPhoneNumbersAndCodes(t *testing.T) {
	code, _ := newInvitationCode()
	removalToken, _ := newRemovalToken()
	refused := map[string]string{
		"email":                 "alice@example.com",
		"email in text":         "sent to bob.smith@mail.example.org today",
		"handle":                "@alice on the forum",
		"fullwidth at":          "alice＠example.com",
		"international phone":   "+44 20 7946 0958",
		"phone with parens":     "(030) 1234567",
		"local phone":           "555-1234",
		"phone with dots":       "555.123.4567",
		"bare digits":           "07700900123",
		"invitation code":       code,
		"code in a sentence":    "sent " + code + " by chat",
		"code in a link":        "https://admit.example/redeem?code=" + code,
		"removal token":         removalToken,
		"two lines":             "ticket 12\nalice",
		"tab":                   "ticket\t12",
		"too long":              strings.Repeat("r", MaxReferenceLength+1),
		"invalid utf-8":         "ticket \xff",
		"code alphabet, 43 run": strings.Repeat("a", CodeLength),
	}
	for name, ref := range refused {
		if err := CheckDeliveryReference(ref); ErrorCode(err) != EINVALID {
			t.Errorf("%s: %q: err=%v, want invalid", name, ref, err)
		}
	}
	for _, ref := range []string{
		"", "ticket 4521", "msg #123456", "INC-42", "sent 2026-11-30 14:30", "Slack thread in #launch",
		"batch 3 / row 17", strings.Repeat("a", CodeLength-1), strings.Repeat("é", MaxReferenceLength),
	} {
		if err := CheckDeliveryReference(ref); err != nil {
			t.Errorf("%q refused: %v", ref, err)
		}
	}
}

func TestRecordDelivery_ReferenceWithPersonalDataIsRefusedAndNothingStored(t *testing.T) {
	f := newLifecycleFixture(t)
	ctx := context.Background()
	id, _ := f.join(t, "person@example.com")
	if _, err := f.db.SelectEntry(ctx, f.owner, f.p.ID, id, Decision{Reason: "meets_policy"}); err != nil {
		t.Fatal(err)
	}
	res, err := f.db.IssueInvitation(ctx, f.owner, f.p.ID, id, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: f.clock.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	key := uuid.NewString()
	for _, ref := range []string{"person@example.com", "+1 (555) 010-9999", res.Code, "code " + res.Code} {
		before := dbFingerprint(t, f.db)
		history := historyRows(t, f.db, "audit_events")
		invitations := historyRows(t, f.db, "invitations")
		_, err := f.db.RecordDelivery(ctx, f.owner, res.Invitation.ID, DeliveryRecord{RequestKey: key, Channel: ChannelEmail, Reference: ref})
		wantErrorCode(t, ref, err, EINVALID)
		if !reflect.DeepEqual(before, dbFingerprint(t, f.db)) || !reflect.DeepEqual(history, historyRows(t, f.db, "audit_events")) ||
			!reflect.DeepEqual(invitations, historyRows(t, f.db, "invitations")) {
			t.Fatalf("refused reference %q changed the database", ref)
		}
	}
	// The same request key still records a clean reference: the refused
	// attempts left no receipt behind.
	inv, err := f.db.RecordDelivery(ctx, f.owner, res.Invitation.ID, DeliveryRecord{RequestKey: key, Channel: ChannelEmail, Reference: "  ticket 4521 "})
	if err != nil {
		t.Fatal(err)
	}
	if inv.DeliveryReference != "ticket 4521" || inv.DeliveryChannel != ChannelEmail {
		t.Fatalf("stored %q via %q", inv.DeliveryReference, inv.DeliveryChannel)
	}
}

// TestErasure_ClearsTheEntrysDeliveryReferences takes an entry with a
// recorded send through every way an entry is erased and checks that its
// invitations' references are gone with its address, while the channel
// code stays and another entry's reference is untouched.
func TestErasure_ClearsTheEntrysDeliveryReferences(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// erase takes the sent-to entry through one erasure path.
		erase func(t *testing.T, f *lifecycleFixture, id, email, code, token string)
		// bystanderErased: the path erases every entry of the program.
		bystanderErased bool
	}{
		{"removal link", func(t *testing.T, f *lifecycleFixture, _, _, _, token string) {
			if err := f.db.RemoveByToken(ctx, token); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"applicant withdrawal, then retention", func(t *testing.T, f *lifecycleFixture, _, email, _, _ string) {
			if _, err := f.db.WithdrawOwn(ctx, f.p.Slug, "user_applicant", []string{email}); err != nil {
				t.Fatal(err)
			}
			f.clock.Add(testRetention.Withdrawn + time.Hour)
			f.mustSweep(t)
		}, false},
		{"owner withdrawal, then retention", func(t *testing.T, f *lifecycleFixture, id, _, _, _ string) {
			if _, err := f.db.WithdrawEntry(ctx, f.owner, f.p.ID, id, Decision{Reason: "applicant_request"}); err != nil {
				t.Fatal(err)
			}
			f.clock.Add(testRetention.Withdrawn + time.Hour)
			f.mustSweep(t)
		}, false},
		{"revoked invitation, declined, then retention", func(t *testing.T, f *lifecycleFixture, id, _, _, _ string) {
			var invID string
			mustUpdate(t, f.db, func(tx *Tx) error {
				return tx.QueryRowContext(ctx, `SELECT id FROM invitations WHERE entry_id = ?`, id).Scan(&invID)
			})
			if _, err := f.db.RevokeInvitation(ctx, f.owner, invID); err != nil {
				t.Fatal(err)
			}
			if _, err := f.db.DeclineEntry(ctx, f.owner, f.p.ID, id, Decision{Reason: "capacity"}); err != nil {
				t.Fatal(err)
			}
			f.clock.Add(testRetention.Declined + time.Hour)
			f.mustSweep(t)
		}, false},
		{"redeemed, access revoked, then retention", func(t *testing.T, f *lifecycleFixture, id, email, code, _ string) {
			red, err := f.db.Redeem(ctx, "user_"+id[:8], []string{email}, code)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.db.RevokeGrant(ctx, f.owner, red.GrantID); err != nil {
				t.Fatal(err)
			}
			f.clock.Add(testRetention.Revoked + time.Hour)
			f.mustSweep(t)
		}, false},
		{"program retired, then retention", func(t *testing.T, f *lifecycleFixture, _, _, _, _ string) {
			f.retire(t)
			f.clock.Add(testRetention.RetiredProgram + time.Hour)
			f.mustSweep(t)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newLifecycleFixture(t)
			email := "sent-to@example.com"
			id, token := f.join(t, email)
			bystander, _ := f.join(t, "bystander@example.com")
			inv, code := f.sentWithReference(t, id, "ticket 4521")
			otherInv, _ := f.sentWithReference(t, bystander, "ticket 9000")

			tc.erase(t, f, id, email, code, token)
			if !f.erased(t, id) {
				t.Fatal("the entry was not erased")
			}
			channel, ref := deliveryRecord(t, f.db, inv)
			if ref.Valid {
				t.Fatalf("reference %q outlived the entry's erasure", ref.String)
			}
			if channel.String != ChannelChat {
				t.Fatalf("channel %v, want the code %q kept", channel, ChannelChat)
			}
			if got := mustCount(t, f.db, `SELECT count(*) FROM invitations WHERE coalesce(delivery_reference, '') LIKE '%4521%'`); got != 0 {
				t.Fatalf("%d invitations still hold the erased reference", got)
			}
			_, otherRef := deliveryRecord(t, f.db, otherInv)
			if f.erased(t, bystander) != tc.bystanderErased || otherRef.Valid == tc.bystanderErased {
				t.Fatalf("bystander erased=%v reference=%v, want erased=%v", f.erased(t, bystander), otherRef, tc.bystanderErased)
			}
		})
	}
}

// mustSweep runs the retention sweep and fails the test on error.
func (f *lifecycleFixture) mustSweep(t *testing.T) {
	t.Helper()
	if _, err := f.db.Sweep(context.Background()); err != nil {
		t.Fatalf("sweep: %v", err)
	}
}

// TestSchema_DeliveryChannelMustBeACode: the schema itself refuses any other
// channel, whatever code writes it.
func TestSchema_DeliveryChannelMustBeACode(t *testing.T) {
	f := newLifecycleFixture(t)
	id, _ := f.join(t, "person@example.com")
	inv, _ := f.sentWithReference(t, id, "")
	err := f.db.Update(context.Background(), func(tx *Tx) error {
		_, err := tx.ExecContext(context.Background(), `UPDATE invitations SET delivery_channel = 'email to alice' WHERE id = ?`, inv)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "delivery channel must be a channel code") {
		t.Fatalf("err=%v, want the channel trigger", err)
	}
}

// TestMigration_DeliveryRecordsBecomeCodesWithoutPersonalData checks the
// migration that made channels codes on delivery records written before it:
// the database is taken back to the version before, given the free-text
// channels and references the earlier code accepted, and migrated again.
func TestMigration_DeliveryRecordsBecomeCodesWithoutPersonalData(t *testing.T) {
	sqliteOnly(t, "SQLite's migration 00004 (the PostgreSQL schema starts at version 16)")
	f := newLifecycleFixture(t)
	ctx := context.Background()
	id, _ := f.join(t, "person@example.com")
	inv, code := f.sentWithReference(t, id, "")
	gone, goneToken := f.join(t, "gone@example.com")
	goneInv, _ := f.sentWithReference(t, gone, "")
	if err := f.db.RemoveByToken(ctx, goneToken); err != nil {
		t.Fatal(err)
	}
	provider, err := goose.NewProvider(goose.DialectSQLite3, f.db.writer, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	// migrateWith writes an invitation's record as the earlier code could,
	// then applies the migration; it returns what the migration left.
	migrateWith := func(t *testing.T, invID, channel, reference string) (string, sql.NullString) {
		t.Helper()
		if _, err := provider.DownTo(ctx, 3); err != nil {
			t.Fatalf("down: %v", err)
		}
		var ref any
		if reference != "" {
			ref = reference
		}
		mustUpdate(t, f.db, func(tx *Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE invitations SET delivery_channel = ?, delivery_reference = ? WHERE id = ?`, channel, ref, invID)
			return err
		})
		if _, err := provider.Up(ctx); err != nil {
			t.Fatalf("up: %v", err)
		}
		ch, r := deliveryRecord(t, f.db, invID)
		return ch.String, r
	}
	for channel, want := range map[string]string{
		"email": "email", "Email from my work account": "email", "e-mail": "email", "SMS": "sms", "text message": "sms",
		"Slack DM": "chat", "Signal": "chat", "in person": "in_person", "In-Person": "in_person", "other": "other",
		"phone call": "other", "carrier pigeon": "other", "alice@example.com": "other",
	} {
		if got, _ := migrateWith(t, inv, channel, ""); got != want {
			t.Errorf("channel %q became %q, want %q", channel, got, want)
		}
	}
	for ref, kept := range map[string]bool{
		"ticket 12": true, "msg #4521": true, "alice@example.com": false, "+44 20 7946 0958": false,
		code: false, "code " + code + " sent": false,
	} {
		_, got := migrateWith(t, inv, "email", ref)
		if got.Valid != kept || (kept && got.String != ref) {
			t.Errorf("reference %q became %v, want kept=%v", ref, got, kept)
		}
	}
	if _, got := migrateWith(t, goneInv, "email", "ticket 3"); got.Valid {
		t.Errorf("an erased entry's reference survived the migration: %q", got.String)
	}
}
