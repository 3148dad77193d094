// Package views holds admit's templ components: the layout, the pages and
// the blocks that htmx swaps.
package views

import (
	"encoding/json"
	"time"
)

// Chrome is what every page's shell needs.
type Chrome struct {
	Title string
	// DevMode shows the development banner on every page.
	DevMode bool
	// CSRF is the session-bound token for forms and htmx requests; empty
	// for a signed-out visitor.
	CSRF string
	// SignedIn and IsOwner choose the navigation links. IsOwner also loads
	// the console's scripts (htmx and owner.js) and htmx's configuration.
	SignedIn bool
	IsOwner  bool
	// Clerk holds what the page needs to load ClerkJS; nil when it is not loaded.
	Clerk *ClerkJS
	// Path is the current request path, for the sign-in redirect.
	Path string
	// Back is the page this page's forms are on, which each owner form
	// sends along: sign-in returns there if the session ended meanwhile.
	Back string
	// SignInURL is the navigation's sign-in link: back to this page
	// afterwards, when this page is one to come back to.
	SignInURL string
	// SignedInAs is the address the navigation shows for a signed-in
	// person; "" when it could not be looked up.
	SignedInAs string
	// AddressUnverified says the identity provider has not verified
	// SignedInAs, so it matches no entry or invitation; Provider names the
	// provider, for saying where to verify it.
	AddressUnverified bool
	Provider          string
	// Flash confirms what the last action did (signed out, withdrawn,
	// redeemed), once, after its redirect.
	Flash string
	// WritesFailing is when the server's writes began failing (zero while
	// they succeed), shown to owners; DiskFull says it is for lack of space.
	WritesFailing time.Time
	DiskFull      bool
}

// ErrorView is the page or block for an error status.
type ErrorView struct {
	Status  int
	Title   string
	Message string
	// RequestID is shown for a server error, for quoting.
	RequestID string
	// SignInURL is the sign-in page returning to where the person was
	// (a 401), or, on a 503 of a sign-in that cannot be tried again from
	// its own URL, the sign-in page to start over from.
	SignInURL string
	// RetryAfter says when to try again, in words: when a limit resets (a
	// 429), or in a few seconds (a refusal for load).
	RetryAfter string
}

// ClerkJS configures the Clerk browser script on a page.
type ClerkJS struct {
	PublishableKey string
	// ScriptURL is the ClerkJS bundle on the Frontend API origin.
	ScriptURL string
	// Mount is "sign-in" to mount the sign-in component, "" to only keep the
	// session fresh.
	Mount string
	// RedirectURL is where sign-in returns to (a local path).
	RedirectURL string
}

// hxHeaders returns the hx-headers attribute value carrying the CSRF token.
func hxHeaders(csrf string) string {
	if csrf == "" {
		return ""
	}
	b, _ := json.Marshal(map[string]string{"X-CSRF-Token": csrf})
	return string(b)
}

// htmxConfig turns off htmx features the CSP forbids and lets htmx swap
// error responses, so validation messages and error blocks appear in place.
const htmxConfig = `{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"selfRequestsOnly":true,` +
	`"responseHandling":[{"code":"204","swap":false},{"code":"[23]..","swap":true},{"code":"[45]..","swap":true,"error":true}]}`

// When formats an instant for people: UTC, to the minute.
func When(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2 Jan 2006, 15:04 UTC")
}

// Day formats an instant's date for people, the one date format of
// admit's pages ("20 Dec 2026", UTC).
func Day(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2 Jan 2006")
}

// HourText is an instant's time of day as the console shows times
// ("11:00 UTC"), for an instant within the day at hand.
func HourText(t time.Time) string { return t.UTC().Format("15:04") + " UTC" }

// signInLink is the navigation's sign-in link.
func signInLink(c Chrome) string {
	if c.SignInURL == "" {
		return "/sign-in"
	}
	return c.SignInURL
}
