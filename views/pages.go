package views

import "time"

// ProgramCard is an open program on the start page.
type ProgramCard struct {
	Slug    string
	Name    string
	Purpose string
	// Full says every queue place is taken: signups are refused.
	Full bool
}

// SignInView configures the sign-in page.
type SignInView struct {
	// Dev shows the development form instead of ClerkJS.
	Dev bool
	// DevElsewhere, with Dev, replaces the form by a note: the request did
	// not come straight from this machine, where alone it works.
	DevElsewhere bool
	// DevKey, with Dev, says whether this browser holds the key from the
	// link admit printed at start: only then is the form shown.
	DevKey DevKeyState
	// DevLinkExample shows the shape of that link, its key left out.
	DevLinkExample string
	// ProviderName and StartURL offer the OpenID Connect provider: a GET
	// link to the start route.
	ProviderName string
	StartURL     string
	RedirectURL  string
	Email        string
	Error        string
}

// DevKeyState is where a browser stands with the development sign-in
// key. The zero value offers no form.
type DevKeyState int

const (
	// DevKeyMissing: the browser has not opened the console's link.
	DevKeyMissing DevKeyState = iota
	// DevKeyHeld: it has; the form is shown.
	DevKeyHeld
	// DevKeyWrongLink: it opened a link whose key is not this start's.
	DevKeyWrongLink
)

// MyEntry is one of the signed-in person's own waitlist entries.
type MyEntry struct {
	Slug          string
	Name          string
	Purpose       string
	State         string
	JoinedAt      time.Time
	NoticeVersion int
	AccessEnabled bool
	// InvitationSent says the owner recorded sending the invitation code;
	// until then the entry is invited but its code cannot be redeemed.
	InvitationSent bool
	// EraseAfter is when the address is due to be erased, or nil.
	EraseAfter *time.Time
	// Retired says the program has ended: the card says so first and
	// offers nothing.
	Retired bool
	// Now is when the page is shown, for saying how far off a date is.
	Now time.Time
}

// Program is the entry's program as people know it: its name, or its
// purpose when it has none.
func (e MyEntry) Program() string {
	if e.Name != "" {
		return e.Name
	}
	return e.Purpose
}

// StateWords says the entry's state in words.
func (e MyEntry) StateWords() string {
	if e.Retired {
		return "Program ended"
	}
	switch e.State {
	case "waiting":
		return "On the waitlist"
	case "selected":
		return "Selected"
	case "invited":
		if !e.InvitationSent {
			return "Invitation being prepared"
		}
		return "Invitation sent"
	case "active":
		return "Early access"
	case "declined":
		return "Not selected"
	case "withdrawn":
		return "Withdrawn"
	case "revoked":
		return "Access ended"
	}
	return e.State
}

// Next says what happens next, or that nothing more will.
func (e MyEntry) Next() string {
	if e.Retired {
		when := "on the schedule on the privacy page"
		if e.EraseAfter != nil {
			when = "on " + Day(*e.EraseAfter) + fromNow(e.Now, *e.EraseAfter)
		}
		return "The owner has ended this program: there is nothing more to join, redeem or open, and nothing you need to do. Your address is erased " + when + "."
	}
	switch e.State {
	case "waiting":
		return "The owner reviews the waitlist and selects people for early access. If you are selected, they send you an invitation code the way the notice describes."
	case "selected":
		return "You were selected. The owner will send you an invitation code; when it arrives, redeem it here while signed in with this address."
	case "invited":
		if !e.InvitationSent {
			return "Your invitation is being prepared: the owner has made your code but has not sent it yet. When it arrives, redeem it here while signed in with this address."
		}
		return "Your invitation code has been sent. Redeem it before it expires, signed in with this address."
	case "active":
		if e.AccessEnabled {
			return "You have early access. The private page is open to you."
		}
		return "You have early access, but the owner has paused the private page for now. It opens again when they turn it back on."
	case "declined":
		return "The owner did not select this entry. Nothing more will happen; your address is erased on the schedule on the privacy page."
	case "withdrawn":
		if e.EraseAfter != nil {
			// rule: the public signup answers the same whatever the
			// address, so a repeat signup says "received"; only here can
			// we say that it changed nothing (docs/erasure.md).
			return "You left this waitlist. This address cannot join it again until the address is erased on " +
				Day(*e.EraseAfter) + fromNow(e.Now, *e.EraseAfter) + ": joining before then changes nothing, even though a new signup says the request was received. After that date you can join again as a new entry."
		}
		return "You left this waitlist. Nothing more will happen; your address is erased on the schedule on the privacy page."
	case "revoked":
		return "The owner ended your access. Nothing more will happen."
	}
	return ""
}

// CanOpen reports whether the private page is open to this entry.
func (e MyEntry) CanOpen() bool { return !e.Retired && e.State == "active" && e.AccessEnabled }

// CanRedeem reports whether the entry waits for its code to be redeemed:
// a code whose send is not recorded cannot be yet.
func (e MyEntry) CanRedeem() bool { return !e.Retired && e.State == "invited" && e.InvitationSent }

// CanWithdraw reports whether the entry can still be withdrawn (a declined
// or revoked one too: the person may still want to leave the list).
func (e MyEntry) CanWithdraw() bool { return !e.Retired && e.State != "withdrawn" }

// OwnerProgramRow is one program in the owner console.
type OwnerProgramRow struct {
	ID         string
	Slug       string
	Name       string
	Purpose    string
	SignupOpen bool
	Access     bool
	Occupied   int
	QueueCap   int
	Retired    bool
	// Limits is which cap refuses signups right now.
	Limits SignupLimits
	// Counts are the program's entries by state, in lifecycle order.
	Counts []StateCount
}

// OwnerHomeView is the owner console's start page: the owner's programs and
// the create-program form.
type OwnerHomeView struct {
	Workspaces []OwnerWorkspace
	Programs   []OwnerProgramRow
	Create     ProgramForm
	Flash      string
	Backup     BackupView
}

// BackupView is the continuous backup's state on the owner console.
type BackupView struct {
	// Configured is false when litestream.yml names no replica.
	Configured bool
	// PostgreSQL says the database is PostgreSQL, which Litestream does
	// not back up: its backups are the operator's.
	PostgreSQL bool
	Replica    string
	// LastSync is the last successful sync; zero if none yet.
	LastSync time.Time
	// Behind says changes wait for the replica, and for how long.
	Behind string
	Error  string
	// VerifiedAt is when a restore drill last found the backup
	// restorable; NotRestorableSince is when drills began finding it not
	// restorable (zero while it is); LastFailedDrill is the last failure.
	VerifiedAt, NotRestorableSince, LastFailedDrill time.Time
}

// AccountView is the signed-in person's account page.
type AccountView struct {
	// UserID is the identifier an owner passes to `admit owner add --user`.
	UserID string
	// Provider names the identity provider.
	Provider string
}

// SignInFailedView is the page for a sign-in at the provider that failed.
type SignInFailedView struct {
	// Reason is a fixed sentence saying what went wrong.
	Reason       string
	ProviderName string
}

// SignedOutView is the page after signing out of admit when the identity
// provider offers its own sign-out too.
type SignedOutView struct {
	ProviderName string
	// ProviderURL is the provider's end-session URL (no token in it).
	ProviderURL string
}

// SignOutIncompleteView is a sign-out that cleared this browser's sign-in
// but could not end the session on the server.
type SignOutIncompleteView struct {
	// DiskFull says the server could not write for lack of space.
	DiskFull bool
	// RequestID is the request's ID, to quote to whoever runs the site.
	RequestID string
}
