package store

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The checks here turn what a person typed into a form, or a client sent,
// into the values the operations take, each with the message shown beside
// the field or returned as the 400's message. They live with the rules so
// that every validation message admit shows is written in this package.

// WholeNumber parses a whole number typed into the field described by what
// ("queue cap").
func WholeNumber(v, what string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, Errorf(EINVALID, "The %s must be a whole number.", what)
	}
	return n, nil
}

// FormRevision parses the revision a form carries in a hidden field.
func FormRevision(v string) (int64, error) {
	rev, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, Errorf(EINVALID, "This form is missing its revision. Reload the page and try again.")
	}
	return rev, nil
}

// RequireRevision checks that a JSON body named the revision it expects;
// hint, when set, says what to send when there is none yet.
func RequireRevision(rev *int64, hint string) (int64, error) {
	if rev == nil {
		if hint != "" {
			return 0, Errorf(EINVALID, "expectedRevision is required (%s).", hint)
		}
		return 0, Errorf(EINVALID, "expectedRevision is required.")
	}
	return *rev, nil
}

// ExpiryFromForm combines a form's date (YYYY-MM-DD) and time of day
// (HH:MM), both UTC, into an invitation's expiry instant. The same form
// submitted twice gives the same instant, so it binds to the same request.
func ExpiryFromForm(day, clock string) (time.Time, error) {
	d, err := time.Parse(time.DateOnly, strings.TrimSpace(day))
	if err != nil {
		return time.Time{}, Errorf(EINVALID, "Choose the day the code expires.")
	}
	tod, err := time.Parse("15:04", strings.TrimSpace(clock))
	if err != nil {
		return time.Time{}, Errorf(EINVALID, "This form is missing its time of day. Reload the page and try again.")
	}
	return d.Add(time.Duration(tod.Hour())*time.Hour + time.Duration(tod.Minute())*time.Minute), nil
}

// ExpiryInstant parses an invitation's expiry sent as an RFC 3339 instant.
func ExpiryInstant(v string) (time.Time, error) {
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, Errorf(EINVALID, "expiresAt must be an RFC 3339 instant.")
	}
	return at, nil
}

// TimeBound parses a queue filter's bound: an RFC 3339 instant, or a UTC
// date (YYYY-MM-DD), which as an upper bound (end) includes the whole day.
func TimeBound(v string, end bool) (time.Time, error) {
	if d, err := time.Parse(time.DateOnly, v); err == nil {
		if end {
			return d.Add(24 * time.Hour), nil
		}
		return d, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, Errorf(EINVALID, "A time bound is a date (YYYY-MM-DD) or an RFC 3339 instant.")
	}
	return t.UTC(), nil
}

// CheckRetireConfirmation checks that confirm repeats the program's slug:
// retiring cannot be undone.
func CheckRetireConfirmation(confirm, slug string) error {
	if strings.TrimSpace(confirm) != slug {
		return Errorf(EINVALID, "Type the program's address name exactly to confirm retiring it.").On("confirm")
	}
	return nil
}

// CheckAssetType checks a content type sniffed from an upload's bytes
// against AssetTypes.
func CheckAssetType(sniffed string) error {
	if !oneOf(sniffed, AssetTypes) {
		return Errorf(EINVALID, "Upload a PNG, JPEG, GIF or WebP image, or a PDF.")
	}
	return nil
}

// CheckCodeShape checks that a pasted invitation code has a code's shape:
// 43 base64url characters.
func CheckCodeShape(code string) error {
	if _, err := CodeDigest(code); err != nil {
		return Errorf(EINVALID, "An invitation code is exactly 43 characters: letters, digits, hyphens and underscores. Copy it again from your invitation.")
	}
	return nil
}

// CheckRemovalToken checks that a pasted removal token has a token's
// shape: 64 lowercase hex characters.
func CheckRemovalToken(t string) error {
	ok := len(t) == 64
	for i := 0; ok && i < len(t); i++ {
		c := t[i]
		ok = c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
	}
	if !ok {
		return Errorf(EINVALID, "A removal token is 64 characters, digits 0–9 and letters a–f. Copy it from your private link, after the #.")
	}
	return nil
}

// The signup's checks, in the order the form shows them: a filled honeypot
// (the form's alone, checked by the handler); then, for the form and the
// JSON API alike, checkSignup, which Signup runs: the request key, the
// notice version, the address (NormalizeEmail) and the choice.

// CheckHoneypot refuses a form whose hidden field, which people never see,
// was filled in.
func CheckHoneypot(v string) error {
	if v != "" {
		return Errorf(EINVALID, "This form could not be accepted. Please reload the page and try again.")
	}
	return nil
}

// checkRequestKey checks a request key (a UUID in its 36-character form)
// and returns it in canonical form.
func checkRequestKey(k string) (string, error) {
	u, err := uuid.Parse(k)
	if err != nil || len(k) != 36 {
		return "", Errorf(EINVALID, "This form is missing its request key. Reload the page and try again.")
	}
	return u.String(), nil
}

// checkNoticeVersion checks that the form named the notice it showed.
func checkNoticeVersion(n int) error {
	if n < 1 {
		return Errorf(EINVALID, "This form is missing its notice version. Reload the page and try again.")
	}
	return nil
}

// checkPermission checks that the person ticked the box to join.
// CheckPermission is the signup's check of the affirmative choice, for a
// form that reports every field's error at once.
func CheckPermission(given bool) error { return checkPermission(given) }

func checkPermission(given bool) error {
	if !given {
		return Errorf(EINVALID, "Tick the box to confirm your choice to join under this notice.")
	}
	return nil
}

// checkSignup is the one check of a signup's fields: the checks above in
// the form's order, returning the request with its key and address in their
// one normal form, the form in which every signup is deduplicated, bound to
// its key and stored. A refusal of the address or the choice names its
// field (InvalidSignupField).
func checkSignup(r SignupRequest) (SignupRequest, error) {
	key, err := checkRequestKey(r.RequestKey)
	if err != nil {
		return SignupRequest{}, err
	}
	r.RequestKey = key
	if err := checkNoticeVersion(r.NoticeVersion); err != nil {
		return SignupRequest{}, err
	}
	if r.Email, err = NormalizeEmail(r.Email); err != nil {
		return SignupRequest{}, &signupFieldError{field: SignupFieldEmail, err: err}
	}
	if err := checkPermission(r.Permission); err != nil {
		return SignupRequest{}, &signupFieldError{field: SignupFieldPermission, err: err}
	}
	return r, nil
}

// SignupField is the field of a signup that a refusal is about, for the
// form to show its message beside it.
type SignupField int

const (
	// SignupFieldNone is a refusal of the signup as a whole (its request
	// key, its notice version, the program's state), or no refusal.
	SignupFieldNone SignupField = iota
	SignupFieldEmail
	SignupFieldPermission
)

// signupFieldError is a refusal of one field of a signup; it unwraps to
// the *Error that says why.
type signupFieldError struct {
	field SignupField
	err   error
}

func (e *signupFieldError) Error() string { return e.err.Error() }
func (e *signupFieldError) Unwrap() error { return e.err }

// InvalidSignupField reports which field of a signup err, an error from
// Signup, refuses.
func InvalidSignupField(err error) SignupField {
	var fe *signupFieldError
	if errors.As(err, &fe) {
		return fe.field
	}
	return SignupFieldNone
}

// PageLimit parses a page size asked for in a query (?limit=): "" is the
// default (0), anything else a whole number from 1 to MaxPageSize.
func PageLimit(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPageSize {
		return 0, Errorf(EINVALID, "The page size must be a whole number from 1 to %d.", MaxPageSize)
	}
	return n, nil
}

// CheckUploadChosen checks that an upload holds a file with some bytes.
func CheckUploadChosen(size int) error {
	if size == 0 {
		return Errorf(EINVALID, "Choose a file to upload.")
	}
	return nil
}
