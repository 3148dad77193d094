package handlers

import "strings"

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
		switch dist := typoDistance(domain, d); {
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

// typoDistance is the optimal-string-alignment distance between a and b:
// the insertions, deletions, substitutions and swaps of two neighbouring
// characters that turn one into the other.
func typoDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
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
