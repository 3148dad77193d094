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
// GET asked for, or for a form post the page the form was on (its back
// field) or else the page of the same route — never a POST-only URL, which
// a GET would answer with 404 or 405 or, worse, with another route's page
// (POST …/entries/select read as the entry "select"). "" means no
// particular page.
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
	// The body of a refused post is read only here, bounded like any
	// other (maxBody), and only when it is a urlencoded form.
	if mediaType(r) == "application/x-www-form-urlencoded" && r.ParseForm() == nil {
		if t := s.formBack(r); t != "" {
			return t
		}
	}
	// rule: only a page of the POST's own route (a confirmation page and
	// its form share a path); a GET of the same path that another route
	// answers is no way back.
	if t, _ := returnTarget(r.URL.Path); t != "" && s.pageRoute(t) == strings.TrimPrefix(r.Pattern, r.Method+" ") {
		return t
	}
	return ""
}

// backField is the hidden field every owner form carries: the page the
// form is on, where sign-in returns to when the session ended meanwhile.
const backField = "back"

// formBack is the page an already parsed form post says it was on (its
// back field), when that is a page of this site that a GET answers; ""
// otherwise.
func (s *Server) formBack(r *http.Request) string {
	vs := r.PostForm[backField]
	if len(vs) != 1 {
		return ""
	}
	t, ok := returnTarget(vs[0])
	if !ok || s.pageRoute(t) == "" {
		return ""
	}
	return t
}

// pageRoute is the route (without its method) that answers a GET of the
// site path p, or "" when only the catch-all would — or when p is an
// action's URL that a broader page route merely also matches (a POST
// route of its own, with another pattern, claims the path).
func (s *Server) pageRoute(p string) string {
	get := s.routeFor(http.MethodGet, p)
	if post := s.routeFor(http.MethodPost, p); post != "" && post != get {
		return ""
	}
	return get
}

// routeFor is the pattern, without its method, of the route that answers
// method on site path p; "" for none but the catch-all.
func (s *Server) routeFor(method, p string) string {
	u, err := url.Parse(p)
	if err != nil {
		return ""
	}
	probe, err := http.NewRequestWithContext(context.Background(), method, u.RequestURI(), nil)
	if err != nil {
		return ""
	}
	_, pattern := s.mux.Handler(probe)
	if pattern == "" || pattern == "/" {
		return ""
	}
	return strings.TrimPrefix(pattern, method+" ")
}

// pageBack is the back field of the forms on the page this request
// renders: the page itself for a GET, or for a form shown again after a
// refused post, the page that form was on.
func (s *Server) pageBack(r *http.Request) string {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		t, _ := returnTarget(r.URL.RequestURI())
		return t
	}
	return s.formBack(r)
}

// landing is where sign-in leads when the person came from no particular
// page: owners to their console, everyone else to their own waitlists.
func (s *Server) landing(ctx context.Context, userID string) string {
	if owner, err := s.db.IsOwner(ctx, userID); err == nil && owner {
		return "/owner"
	}
	return "/me"
}
