package store

import "strings"

// NormalizeEmail applies admit's one email grammar (docs/API.md#signup) to
// public input and to identity-provider addresses alike. It trims
// surrounding ASCII spaces, keeps the local part exactly as written and
// lowercases the domain. It deliberately rejects some valid but unusual
// addresses (quoted local parts, IP literals, non-ASCII) rather than changing
// them silently.
func NormalizeEmail(s string) (string, error) {
	s = strings.Trim(s, " ")
	if len(s) < 3 || len(s) > 254 {
		return "", errInvalidEmail()
	}
	at := strings.IndexByte(s, '@')
	if at < 0 || at != strings.LastIndexByte(s, '@') {
		return "", errInvalidEmail()
	}
	local, domain := s[:at], s[at+1:]
	if !validLocal(local) || !validDomain(domain) {
		return "", errInvalidEmail()
	}
	return local + "@" + strings.ToLower(domain), nil
}

// errInvalidEmail is NormalizeEmail's refusal, made only when it refuses:
// every signup normalizes an address, nearly always a valid one.
func errInvalidEmail() error {
	return Errorf(EINVALID, "Enter an email address like name@example.com (ASCII letters, digits and common symbols).")
}

func validLocal(l string) bool {
	if len(l) < 1 || len(l) > 64 || l[0] == '.' || l[len(l)-1] == '.' || strings.Contains(l, "..") {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte(".!#$%&'*+/=?^_`{|}~-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func validDomain(d string) bool {
	if len(d) < 1 || len(d) > 253 || !strings.Contains(d, ".") {
		return false
	}
	for _, label := range strings.Split(d, ".") {
		if len(label) < 1 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
