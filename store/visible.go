package store

import "unicode"

// A single line of text an owner types that people then see (a program's
// name, a workspace's name, a privacy link) holds only characters that show
// as themselves: no control characters, no line breaks, no text-direction
// controls and no characters that render as nothing. A name carrying a
// right-to-left override, a zero-width space or a NUL would look like
// another name, or look empty, on a public page (docs/API.md#names).

// checkVisibleLine refuses s if it holds a character that would not show as
// itself, naming the field (what, as a sentence's subject: "The program
// name") and the character.
func checkVisibleLine(s, what, field string) error {
	for _, r := range s {
		if kind := invisibleKind(r); kind != "" {
			return Errorf(EINVALID, "%s must not contain line breaks, control characters or invisible characters; it contains %s (U+%04X).", what, kind, r).On(field)
		}
	}
	return nil
}

// invisibleKind names the kind of character r is when it would not show as
// itself on one line, or returns "".
func invisibleKind(r rune) string {
	switch {
	case r == '\n' || r == '\r' || unicode.In(r, unicode.Zl, unicode.Zp):
		return "a line break"
	case unicode.Is(unicode.Cc, r):
		return "a control character"
	case unicode.Is(unicode.Bidi_Control, r):
		return "a text-direction control"
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
		return "an invisible character"
	}
	return ""
}
