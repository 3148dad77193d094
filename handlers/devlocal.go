package handlers

import (
	"net"
	"net/http"
	"strings"
)

// forwardingHeaders are set by reverse proxies on the requests they pass
// on; a request carrying any of them did not come straight from a browser
// on this machine.
var forwardingHeaders = []string{"X-Forwarded-For", "Forwarded", "X-Real-IP", "X-Forwarded-Host", "X-Forwarded-Proto"}

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
