package views

import (
	"strings"
	"time"

	"github.com/a-h/templ"
)

// NoticeView is the exact notice an applicant is shown.
type NoticeView struct {
	Version       int
	Purpose       string
	ContactText   string
	RetentionText string
	PublishedAt   time.Time
}

// WaitlistView is the public signup page and its form state.
type WaitlistView struct {
	Slug    string
	Name    string
	Purpose string
	Notice  NoticeView
	Open    bool
	// Retired says the list is closed for good.
	Retired bool
	// Full says every queue place is taken: the page says so in place of
	// the form. It is a fact of the program, the same for every visitor.
	Full bool
	// WorkspaceName runs the program; Contact takes privacy questions ("" when unset).
	WorkspaceName string
	Contact       string
	// RequestKey is a fresh server-generated UUID for this form.
	RequestKey string
	// Email and Permission echo what was submitted when the form is shown again.
	Email      string
	Permission bool
	// Message is a form-level message (reload, full, try later).
	Message         string
	EmailError      string
	PermissionError string
	// Own is the signed-in visitor's own entry in this program, matched by
	// a verified address: the page shows its status and leads to /me in
	// place of the form. nil for everyone else.
	Own *MyEntry
	// CaseAsk, when set, asks once whether the address's capitals are
	// meant (docs/signup.md#capital-letters).
	CaseAsk *CaseAsk
	// DomainAsk, when set, asks once whether a domain that looks like a
	// mistyped well-known one is meant (docs/signup.md#typing-hints).
	DomainAsk *DomainAsk
	// KnownDomains are the well-known mail domains, space-separated, for
	// the form's script to ask "did you mean …?" as the server would.
	KnownDomains string
}

// DomainAsk is the address as typed and with the well-known domain it
// likely meant.
type DomainAsk struct{ Typed, Suggested string }

// Asking reports whether the form asks a question before joining.
func (v WaitlistView) Asking() bool { return v.CaseAsk != nil || v.DomainAsk != nil }

// firstQuestion is the ID of the first question the form asks.
func (v WaitlistView) firstQuestion() string {
	if v.DomainAsk != nil {
		return "domain-question"
	}
	return "case-question"
}

// CaseAsk is the address as typed and with its local part in small
// letters, for the signup form's question about capitals.
type CaseAsk struct{ Typed, Lower string }

// ReceivedView is the page after a signup was accepted (202).
type ReceivedView struct {
	Slug string
	// Name and WorkspaceName say which program was joined and who runs it.
	Name          string
	WorkspaceName string
	Purpose       string
	NoticeVersion int
	// ContactText is the notice's "how we will contact you".
	ContactText   string
	RetentionText string
	// RemovalURL and RemovalToken are empty on a same-key replay: a secret
	// is shown once.
	RemovalURL   string
	RemovalToken string
	// SignInURL is the sign-in page leading to one's own entries, for a
	// person whose link was already shown.
	SignInURL string
	// Email is the address the signup was made with, when the page
	// follows the browser's own post; "" otherwise.
	Email string
}

// ManageView is the removal page.
type ManageView struct {
	Token string
	Error string
}

// Errors lists the form's messages for its error summary.
func (v WaitlistView) Errors() []FieldError {
	return fieldErrors(FieldError{Message: v.Message}, FieldError{Field: "email", Message: v.EmailError},
		FieldError{Field: "permission", Message: v.PermissionError})
}

// contactHref links a privacy contact: mailto: for an address, the https
// link itself otherwise (store.CheckContact allows nothing else).
func contactHref(contact string) templ.SafeURL {
	if strings.HasPrefix(contact, "https://") {
		return templ.SafeURL(contact)
	}
	return templ.SafeURL("mailto:" + contact)
}
