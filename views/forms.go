package views

import (
	"strings"

	"github.com/a-h/templ"
)

// FieldError is one entry of a form's error summary: the message and the
// id of the input it is about, or "" when it is about the whole form.
type FieldError struct {
	Field   string
	Message string
	// Note is a sentence about the errors (what was not saved), shown
	// after them and not counted as a problem.
	Note bool
}

// fieldErrors collects the non-empty messages in order, for a summary.
func fieldErrors(pairs ...FieldError) []FieldError {
	var out []FieldError
	for _, p := range pairs {
		if p.Message != "" {
			out = append(out, p)
		}
	}
	return out
}

// describedBy is an input's aria-describedby: its error first (when it
// has one), then its help.
func describedBy(hasError bool, errorID string, helpIDs ...string) string {
	var ids []string
	if hasError {
		ids = append(ids, errorID)
	}
	for _, id := range helpIDs {
		if id != "" {
			ids = append(ids, id)
		}
	}
	return strings.Join(ids, " ")
}

// problems counts the entries of a summary that are errors, not notes.
func problems(errs []FieldError) int {
	n := 0
	for _, e := range errs {
		if !e.Note {
			n++
		}
	}
	return n
}

// summaryTitle heads an error summary.
func summaryTitle(n int) string {
	if n == 1 {
		return "There is a problem"
	}
	return "There are " + plural(n, "problem")
}

// invalidIf marks an input invalid (aria-invalid="true") when bad.
func invalidIf(bad bool) templ.Attributes {
	if bad {
		return templ.Attributes{"aria-invalid": "true"}
	}
	return templ.Attributes{}
}
