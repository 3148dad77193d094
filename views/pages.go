package views

import "time"

// ProgramCard is an open program on the start page.
type ProgramCard struct {
	Slug    string
	Purpose string
}

// SignInView configures the sign-in page.
type SignInView struct {
	// Dev shows the development form instead of ClerkJS.
	Dev         bool
	RedirectURL string
	Email       string
	Error       string
}

// MyEntry is one of the signed-in person's own waitlist entries.
type MyEntry struct {
	Slug          string
	Purpose       string
	State         string
	JoinedAt      time.Time
	NoticeVersion int
	AccessEnabled bool
}

// OwnerProgramRow is one program in the owner console.
type OwnerProgramRow struct {
	ID         string
	Slug       string
	Purpose    string
	SignupOpen bool
	Access     bool
	Occupied   int
	QueueCap   int
	Retired    bool
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
