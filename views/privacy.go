package views

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// RetentionRow is one line of the privacy page's retention table.
type RetentionRow struct {
	// ID names the row for tests (data-testid "retention-<ID>").
	ID    string
	State string
	// Kept says how long the address stays in the live database.
	Kept string
	// Everywhere is the computed bound including the sweep and backups.
	Everywhere string
}

// PrivacyView is the privacy page, filled from the code's constants and the
// live configuration, never written by hand.
type PrivacyView struct {
	// Contacts say who answers privacy questions, per workspace.
	Contacts         []PrivacyContact
	Rows             []RetentionRow
	RetiredProgram   string
	CounterLifetime  string
	SweepInterval    string
	BackupConfigured bool
	BackupRetention  string
	// PostgreSQL says the server keeps its data in PostgreSQL, whose
	// erasure and backups differ from the SQLite file's (docs/erasure.md#postgresql).
	PostgreSQL        bool
	RemovalEverywhere string
	// ReceiptKept is how long a signup's receipt answers replays;
	// ReceiptEverywhere is when it is gone from every copy.
	ReceiptKept, ReceiptEverywhere string
	IdentityProvider               string
	// Sessions describes what a signed-in session keeps on this server;
	// SessionLife is how long one lasts at most, SessionGone how long
	// until an expired one is deleted from the live database and backups.
	ServerSessions           bool
	SessionKeeps             string
	SessionLife, SessionGone string
	// OwnerInviteLife is how long an owner added by address may take the
	// place (store.OwnerInviteLifetime), in words.
	OwnerInviteLife string
	// NetworkHourlyLimit is the signup attempts a network may make per UTC
	// hour; the redemption limits are per account and per network.
	NetworkHourlyLimit                                 int
	RedeemAccountHourlyLimit, RedeemNetworkHourlyLimit int
}

// Duration renders a duration for people: whole days when it is at least a
// day (rounded up, so a promise is never understated), else hours or minutes.
func Duration(d time.Duration) string {
	switch {
	case d >= 24*time.Hour:
		n := int(math.Ceil(d.Hours() / 24))
		return plural(n, "day")
	case d >= time.Hour:
		return plural(int(math.Ceil(d.Hours())), "hour")
	default:
		return plural(int(math.Ceil(d.Minutes())), "minute")
	}
}

func plural(n int, unit string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", unit)
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// PrivacyContact is a workspace, its public programs and who answers
// privacy questions about them.
type PrivacyContact struct {
	Workspace string
	Contact   string
	Programs  []string
}

// programList joins program names for a sentence: "A", "A and B", "A, B and C".
func programList(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
