package views

// ConfirmView is the step before a dangerous action: what it is, whom or
// what it touches, what follows from it, and the form that does it. It is
// a page of its own without JavaScript and the body of a dialog with it.
type ConfirmView struct {
	Program ProgramSummary
	// Title names the action and the person or program: "Decline
	// ada@example.com?".
	Title string
	// Consequences are the sentences that say what happens.
	Consequences []string
	// Action is the POST URL; Button the label of its submit button.
	Action string
	Button string
	// Cancel leads back to where the action was started.
	Cancel string
	// Reasons, when set, is a required reason list with nothing chosen
	// beforehand (unless the owner chose Reason already).
	Reasons []string
	Reason  string
	// Confirm, when set, asks the owner to type this text (a program's
	// slug) before the button works; ConfirmLabel says why.
	Confirm      string
	ConfirmLabel string
	Hidden       []HiddenField
	// Typed is what the owner typed to confirm, kept after a refusal.
	Typed string
	// Error refuses a submitted confirmation; ErrorField is the form name
	// it is about (reason or confirm), "" for the form as a whole.
	Error      string
	ErrorField string
	// Kind names the action for tests and scripts: decline, withdraw,
	// revoke-invitation, revoke-grant, retire.
	Kind string
	// Nav is the program page the navigation marks: "queue" or "settings".
	Nav string
}

// HiddenField is a form field the confirmation sends on unchanged.
type HiddenField struct {
	Name  string
	Value string
}

// BulkDeclineConfirmView is the queue's decline, before it is done: the
// chosen entries and the reason.
type BulkDeclineConfirmView struct {
	Program ProgramSummary
	Entries []QueueRow
	Reason  string
	// Next is the queue page to return to; Action the decline form's URL.
	Next   string
	Action string
	// Retention is how long a declined entry keeps its address.
	Retention string
	// Reasons are the decline reasons to choose from; Error says why the
	// last confirmation was refused.
	Reasons []string
	Error   string
}

// errorField is the input the confirmation's error summary links to.
func (v ConfirmView) errorField() string {
	switch {
	case v.ErrorField == "confirm" && v.Confirm != "":
		return "confirm-text"
	case len(v.Reasons) > 0:
		return "confirm-reason"
	case v.Confirm != "":
		return "confirm-text"
	}
	return "confirm-submit"
}
