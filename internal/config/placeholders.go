package config

import (
	"net/url"
	"slices"
	"strings"
)

// placeholderMark is in every placeholder value deploy/ ships for a key or
// an ID (sk_live_replace_me, replace_me): it is never a real value.
const placeholderMark = "replace_me"

// placeholderHost is the site name deploy/ and docs/DEPLOY.md use for the
// operator's own; a URL on it or on a subdomain of it is the example,
// unchanged.
const placeholderHost = "waitlist.example.com"

// urlVars are the variables whose values are URLs (or lists of them) that
// name the operator's site or identity provider.
var urlVars = []string{"ADMIT_PUBLIC_URL", "CLERK_ISSUER", "CLERK_AUTHORIZED_PARTIES", "ADMIT_OIDC_ISSUER"}

// checkPlaceholders refuses a value copied from deploy/ without being
// changed, naming the variable and never printing a secret's value.
//
// rule: admit config and serve refuse the shipped placeholders
// (docs/DEPLOY.md, "The service").
func (r *reader) checkPlaceholders() {
	for _, v := range Vars {
		for _, n := range v.Names() {
			val := strings.TrimSpace(r.getenv(n))
			switch {
			case strings.Contains(strings.ToLower(val), placeholderMark):
				r.bad("%s holds the placeholder shipped in deploy/admit.env (%s): set the real value", n, placeholderMark)
			case slices.Contains(urlVars, n) && namesPlaceholderHost(val):
				r.bad("%s=%q is the example site shipped in deploy/admit.env: set your own", n, val)
			}
		}
	}
}

// namesPlaceholderHost says whether a URL of the comma-separated list val
// is on placeholderHost or a subdomain of it.
func namesPlaceholderHost(val string) bool {
	for _, part := range strings.Split(val, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if h := strings.ToLower(u.Hostname()); h == placeholderHost || strings.HasSuffix(h, "."+placeholderHost) {
			return true
		}
	}
	return false
}
