package handlers

import (
	"strings"

	"admit/internal/typo"
)

// wellKnownDomains are mail domains many people have. An address whose
// domain is one of them gets no hint; one a letter or two away from
// exactly one of them gets "did you mean …?" (docs/signup.md#typing-hints).
// Real providers whose names are close to another's (mail.com, ymail.com)
// are listed so that they are never taken for a mistake.
var wellKnownDomains = []string{
	"gmail.com", "googlemail.com", "yahoo.com", "ymail.com", "hotmail.com", "outlook.com",
	"live.com", "msn.com", "icloud.com", "me.com", "mac.com", "aol.com", "proton.me",
	"protonmail.com", "pm.me", "gmx.com", "gmx.net", "gmx.de", "web.de", "mail.com", "email.com",
	"yandex.ru", "mail.ru", "fastmail.com", "zoho.com", "hotmail.co.uk", "yahoo.co.uk",
	"btinternet.com", "comcast.net", "orange.fr", "free.fr", "libero.it", "qq.com", "163.com",
}

// domainSuggestion returns the well-known domain that domain (lower case)
// is most likely a mistyping of, or "" when it is one, or near none, or
// near more than one equally. A hint only: the address is never changed
// without the person choosing it.
func domainSuggestion(domain string) string {
	if len(domain) < 5 {
		return ""
	}
	best, bestDist, ties := "", 3, 0
	for _, d := range wellKnownDomains {
		if d == domain {
			return ""
		}
		switch dist := typo.Distance(domain, d); {
		case dist < bestDist:
			best, bestDist, ties = d, dist, 0
		case dist == bestDist:
			ties++
		}
	}
	if best == "" || ties > 0 || bestDist > 2 {
		return ""
	}
	return best
}

// suggestedAddress is email with its domain replaced by the suggestion for
// it, or "" when there is none.
func suggestedAddress(email string) string {
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return ""
	}
	s := domainSuggestion(strings.ToLower(email[at+1:]))
	if s == "" {
		return ""
	}
	return email[:at+1] + s
}
