package views

import (
	"strconv"
	"strings"
	"time"
)

// RedeemView is the redemption page.
type RedeemView struct {
	// SignInURL is the sign-in page returning to /redeem.
	SignInURL string
	// Message is the form's message after an attempt refused as a whole
	// (a limit); CodeError after one refused for its code. The submitted
	// code is never shown again.
	Message   string
	CodeError string
	// Denied lists the possible reasons of a refused code, the same for
	// every refusal.
	Denied bool
	// Code is shown again only after an answer that judged nothing (the
	// identity provider could not be reached), so the person need not
	// paste it again; a judged code is never echoed.
	Code string
}

// redeemReasonsID is the reasons list's ID when the page shows it.
func redeemReasonsID(v RedeemView) string {
	if v.Denied {
		return "code-reasons"
	}
	return ""
}

// PrivateView is a program's private page.
type PrivateView struct {
	Slug    string
	Name    string
	Purpose string
	// Paragraphs is the owner's text split on blank lines, each paragraph
	// a list of lines; templ escapes every line.
	Paragraphs [][]string
	Revision   int64
	UpdatedAt  time.Time
	Assets     []PrivateAsset
}

// PrivateAsset is a file on a private page.
type PrivateAsset struct {
	Name        string
	URL         string
	ContentType string
	Size        int
}

// IsImage reports whether the asset is shown inline as an image.
func (a PrivateAsset) IsImage() bool { return strings.HasPrefix(a.ContentType, "image/") }

// WithdrawView is the confirmation page before withdrawing one's own entry.
type WithdrawView struct {
	Slug    string
	Name    string
	Purpose string
	State   string
}

// StateWords says the entry's state in the words /me uses.
func (v WithdrawView) StateWords() string { return MyEntry{State: v.State}.StateWords() }

// Paragraphs splits text into paragraphs on blank lines (lines holding only
// white space); each paragraph keeps its single line breaks as separate
// lines. Nothing is interpreted: the text stays text.
func Paragraphs(body string) [][]string {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	var out [][]string
	var cur []string
	for _, line := range strings.Split(body, "\n") {
		if strings.TrimSpace(line) == "" {
			if len(cur) > 0 {
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, strings.TrimRight(line, " \t\r"))
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// sizeText formats a byte count for people.
func sizeText(n int) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 0, 64) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// revisionText formats a content revision number.
func revisionText(n int64) string { return strconv.FormatInt(n, 10) }
