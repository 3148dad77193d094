package store

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Delivery channel codes: how an owner says they sent an invitation code.
// A record of the send holds one of these and, optionally, a short
// reference; neither may hold personal data (rule: a delivery record holds
// no address, phone number or code, and its reference is erased with the
// entry; docs/history.md).
const (
	ChannelEmail    = "email"
	ChannelSMS      = "sms"
	ChannelChat     = "chat"
	ChannelInPerson = "in_person"
	ChannelOther    = "other"
)

// DeliveryChannels lists every channel code, in the order a form offers them.
var DeliveryChannels = []string{ChannelEmail, ChannelSMS, ChannelChat, ChannelInPerson, ChannelOther}

// MaxReferenceLength bounds a delivery reference, in characters.
const MaxReferenceLength = 160

// phoneDigits is how many digits in one run (spaces, dots, dashes, slashes,
// parentheses and plus signs between them) make a reference look like a
// phone number: the shortest local numbers have seven.
const phoneDigits = 7

// isoDate is a calendar date, which has eight digits but is not a phone
// number: it is left out before counting digits.
var isoDate = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b`)

// CheckDeliveryChannel reports whether channel is one of DeliveryChannels.
func CheckDeliveryChannel(channel string) error {
	if !oneOf(channel, DeliveryChannels) {
		return Errorf(EINVALID, "Choose how you sent the code: %s.", strings.Join(DeliveryChannels, ", "))
	}
	return nil
}

// CheckDeliveryReference reports whether reference may be stored: one line
// of at most MaxReferenceLength characters holding no email address or
// handle (no @), nothing that looks like a phone number, and nothing shaped
// like an invitation code (CodeLength characters of the base64url alphabet
// in a row) or another token. The empty reference is allowed.
func CheckDeliveryReference(reference string) error {
	if !utf8.ValidString(reference) || utf8.RuneCountInString(reference) > MaxReferenceLength {
		return Errorf(EINVALID, "The reference is at most %d characters.", MaxReferenceLength)
	}
	for _, r := range reference {
		if unicode.IsControl(r) {
			return Errorf(EINVALID, "The reference is one line of text.")
		}
		if r == '@' || r == '＠' || r == '﹫' {
			return Errorf(EINVALID, "The reference cannot hold an email address or a handle (nothing with @).")
		}
	}
	if longestDigitRun(isoDate.ReplaceAllString(reference, " ")) >= phoneDigits {
		return Errorf(EINVALID, "The reference looks like a phone number. Use at most %d digits in a row, or leave it empty.", phoneDigits-1)
	}
	if longestCodeRun(reference) >= CodeLength {
		return Errorf(EINVALID, "The reference looks like an invitation code or another secret. Never record the code itself.")
	}
	return nil
}

// longestDigitRun is the most digits in one run of digits and the
// separators people type inside phone numbers.
func longestDigitRun(s string) int {
	longest, n := 0, 0
	for _, r := range s {
		switch {
		case unicode.IsDigit(r):
			n++
			longest = max(longest, n)
		case strings.ContainsRune(" +-.()/\u00a0", r):
		default:
			n = 0
		}
	}
	return longest
}

// longestCodeRun is the longest run of base64url characters: an invitation
// code is CodeLength of them, a removal token 64.
func longestCodeRun(s string) int {
	longest, n := 0, 0
	for _, r := range s {
		if r < utf8.RuneSelf && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			n++
			longest = max(longest, n)
			continue
		}
		n = 0
	}
	return longest
}
