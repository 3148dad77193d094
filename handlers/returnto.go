package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// maxReturnTarget bounds a sign-in return target, in bytes.
const maxReturnTarget = 2048

// returnTarget checks a place sign-in may send someone back to
// (docs/API.md#sign-in-and-the-way-back): only a path on this site, never
// another host however it is spelled (//host, /\host, a scheme, a tab or
// line break a browser would drop, percent-encoded slashes), never the
// sign-in pages themselves, and with no part that could carry an address or
// a secret: the fragment and any query value holding an @ or named q are
// dropped. It returns the cleaned target and whether v was acceptable.
func returnTarget(v string) (string, bool) {
	if v == "" || len(v) > maxReturnTarget || v[0] != '/' {
		return "", false
	}
	for i := 0; i < len(v); i++ {
		// rule: browsers drop tabs and line breaks from URLs and read \ as
		// /, so "/\t/evil" and "/\evil" would leave the site.
		if c := v[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return "", false
		}
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "", false
	}
	if !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") || strings.Contains(u.Path, `\`) ||
		strings.HasPrefix(u.EscapedPath(), "//") {
		return "", false
	}
	if strings.ContainsRune(u.Path, '@') {
		return "", false
	}
	switch u.Path {
	case "/sign-in", "/sign-out", "/dev/sign-in":
		return "", false
	}
	out := u.EscapedPath()
	if q := returnQuery(u.RawQuery); q != "" {
		out += "?" + q
	}
	return out, true
}

// returnQuery keeps the query parameters a page needs to look the same
// (filters, page cursors) and drops any that could hold an address: a
// search (q) or any value with an @ in it.
func returnQuery(raw string) string {
	if raw == "" {
		return ""
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return ""
	}
	for k, vs := range q {
		drop := k == "q" || k == "redirect_url" || strings.ContainsRune(k, '@')
		for _, v := range vs {
			drop = drop || strings.ContainsRune(v, '@')
		}
		if drop {
			q.Del(k)
		}
	}
	return q.Encode()
}

// safeRedirect reports whether p is a path on this site that a redirect
// may lead to (see returnTarget).
func safeRedirect(p string) bool {
	_, ok := returnTarget(p)
	return ok
}

// signInURL is the sign-in page that returns to target afterwards; with no
// acceptable target, the plain sign-in page (which then picks the landing
// page by who signed in).
func signInURL(target string) string {
	t, ok := returnTarget(target)
	if !ok {
		return "/sign-in"
	}
	return "/sign-in?redirect_url=" + url.QueryEscape(t)
}

// returnPath is where a request that found its visitor signed out should
// continue after sign-in: the page htmx was on (HX-Current-URL), the page a
// GET asked for, or for a form post the page of the same path when there
// is one — never a POST-only URL, which a GET would answer with 404 or
// 405. "" means no particular page.
func (s *Server) returnPath(r *http.Request) string {
	if isHTMX(r) {
		cur, err := url.Parse(r.Header.Get("HX-Current-URL"))
		if err != nil || cur.Scheme+"://"+cur.Host != s.origin {
			return ""
		}
		t, _ := returnTarget(cur.RequestURI())
		return t
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		t, _ := returnTarget(r.URL.RequestURI())
		return t
	}
	probe := r.Clone(context.Background())
	probe.Method = http.MethodGet
	if _, pattern := s.mux.Handler(probe); pattern == "" || pattern == "/" {
		return ""
	}
	t, _ := returnTarget(r.URL.Path)
	return t
}

// landing is where sign-in leads when the person came from no particular
// page: owners to their console, everyone else to their own waitlists.
func (s *Server) landing(ctx context.Context, userID string) string {
	if owner, err := s.db.IsOwner(ctx, userID); err == nil && owner {
		return "/owner"
	}
	return "/me"
}
