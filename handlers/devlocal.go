package handlers

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"

	"admit/views"
)

// forwardingHeaders are set by reverse proxies, CDNs and load balancers
// on the requests they pass on; a request carrying any of them did not
// come straight from a browser on this machine.
var forwardingHeaders = []string{
	"Forwarded", "Via",
	"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port",
	"X-Forwarded-Server", "X-Forwarded-Prefix", "X-Forwarded-Ssl", "X-Forwarded-Scheme",
	"X-Original-Forwarded-For", "X-Original-Host", "X-Original-URL", "X-Rewrite-URL",
	"X-Real-IP", "X-Client-IP", "Client-IP", "True-Client-IP", "CF-Connecting-IP",
	"CF-Ray", "Fastly-Client-IP", "X-Cluster-Client-IP", "X-ProxyUser-Ip",
	"X-Envoy-External-Address", "X-Azure-ClientIP", "X-Appengine-User-IP",
}

// DevKeyCookie holds the development sign-in key in the browser that
// opened the link admit printed at start.
const DevKeyCookie = "admit_dev_key"

// devKeyLen is the length of a development sign-in key: 32 random bytes,
// unpadded base64url.
const devKeyLen = 43

// NewDevSignInKey returns a fresh development sign-in key: 256 random bits
// that admit prints once, in the link on its console, when it starts with
// the development identity.
func NewDevSignInKey() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DevSignInLink is the link that hands the development sign-in key to the
// browser that opens it: base is the server's loopback address.
func DevSignInLink(base, key string) string {
	return strings.TrimSuffix(base, "/") + "/dev/sign-in?" + url.Values{"key": {key}}.Encode()
}

// useDevKey checks the development sign-in key for New, or makes one that
// nobody is told when none was given: the sign-in then refuses everyone.
func useDevKey(opts *Options) error {
	if opts.DevSignInKey == "" {
		key, err := NewDevSignInKey()
		if err != nil {
			return err
		}
		opts.DevSignInKey = key
	}
	if len(opts.DevSignInKey) != devKeyLen {
		return errors.New("handlers: the development sign-in key must come from NewDevSignInKey")
	}
	return nil
}

// devKeyMatches compares a presented key with the server's in constant
// time. The empty string never matches.
func (s *Server) devKeyMatches(key string) bool {
	want := s.opts.DevSignInKey
	return want != "" && len(key) == len(want) && subtle.ConstantTimeCompare([]byte(key), []byte(want)) == 1
}

// hasDevKey reports whether r carries the development sign-in key in its
// cookie: the browser opened the link admit printed on its console.
func (s *Server) hasDevKey(r *http.Request) bool {
	c, err := r.Cookie(DevKeyCookie)
	return err == nil && s.devKeyMatches(c.Value)
}

// handleDevSignInLink takes the key from the link admit printed at start:
// a match stores it in a cookie for this browser and goes on to the
// sign-in form, so the key leaves the address bar at once; anything else
// is refused. Like the form, it answers only direct requests from this
// machine.
//
// rule (docs/DEPLOY.md#development-mode): the development sign-in needs
// something only the person at this machine has, the key on admit's
// console; no page ever shows it.
func (s *Server) handleDevSignInLink(w http.ResponseWriter, r *http.Request) error {
	if !s.directLocal(r) {
		return errNotFound
	}
	noStore(w)
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil || len(q["key"]) != 1 || !s.devKeyMatches(q.Get("key")) {
		return s.devKeyRefused(w, r, views.DevKeyWrongLink)
	}
	http.SetCookie(w, &http.Cookie{Name: DevKeyCookie, Value: q.Get("key"), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.opts.PublicURL.Scheme == "https"})
	http.Redirect(w, r, "/sign-in", http.StatusSeeOther)
	return nil
}

// devKeyRefused answers a development sign-in without the console's key:
// 403 and the sign-in page saying where the link is.
func (s *Server) devKeyRefused(w http.ResponseWriter, r *http.Request, why views.DevKeyState) error {
	c := s.chrome(r, "Sign in")
	noStore(w)
	return s.render(w, r, http.StatusForbidden, c, views.SignIn(c, views.SignInView{Dev: true, DevKey: why,
		DevLinkExample: "http://" + r.Host + "/dev/sign-in?key=…"}))
}

// directLocal reports whether r came straight from this machine: its Host
// names a loopback host (localhost, 127.0.0.0/8 or ::1, with or without a
// port), it arrived on a loopback connection, and it carries no header a
// proxy adds — neither the usual forwarding headers nor the configured
// client address header.
//
// rule (docs/DEPLOY.md#development-mode): the development sign-in trusts
// any address typed into it, so it answers only such requests; start-up
// refuses the settings of a proxied deployment, and this check holds even
// when a proxy is put in front regardless.
func (s *Server) directLocal(r *http.Request) bool {
	if !loopbackHostPort(r.Host) || !loopbackHostPort(r.RemoteAddr) {
		return false
	}
	if h := s.opts.ClientIPHeader; h != "" && hasHeader(r, h) {
		return false
	}
	for _, h := range forwardingHeaders {
		if hasHeader(r, h) {
			return false
		}
	}
	return true
}

// hasHeader reports whether r carries the header name at all: present,
// even empty, is a proxy's mark.
func hasHeader(r *http.Request, name string) bool {
	_, ok := r.Header[http.CanonicalHeaderKey(name)]
	return ok
}

// loopbackHostPort reports whether hostport (a Host header or a remote
// address, with or without a port) names localhost or a loopback IP.
func loopbackHostPort(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1] // "[::1]" without a port
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
