package handlers

import "testing"

func TestDomainSuggestion_NamesTheWellKnownDomainALikelyTypoMeant(t *testing.T) {
	for _, tc := range []struct{ domain, want string }{
		{"gmial.con", "gmail.com"},
		{"gmail.con", "gmail.com"},
		{"gmai.com", "gmail.com"},
		{"hotmial.com", "hotmail.com"},
		{"outlok.com", "outlook.com"},
		{"yahooo.com", "yahoo.com"},
		{"icloud.co", "icloud.com"},
		// Well-known themselves, or near none: no hint.
		{"gmail.com", ""},
		{"mail.com", ""},
		{"ymail.com", ""},
		{"example.com", ""},
		{"example.test", ""},
		{"uni-heidelberg.de", ""},
		{"a.io", ""},
	} {
		if got := domainSuggestion(tc.domain); got != tc.want {
			t.Errorf("domainSuggestion(%q)=%q, want %q", tc.domain, got, tc.want)
		}
	}
}
