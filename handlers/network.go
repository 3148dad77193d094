package handlers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// clientNetwork returns the client's network for rate limiting: an IPv4
// address, or an IPv6 /64 (one subscriber usually holds a whole /64). It
// comes from RemoteAddr unless a trusted proxy header is configured.
func (s *Server) clientNetwork(r *http.Request) string {
	raw := r.RemoteAddr
	if h := s.opts.ClientIPHeader; h != "" {
		if v := strings.Join(r.Header.Values(h), ","); strings.Trim(v, ", \t") != "" {
			// rule (docs/DEPLOY.md#the-reverse-proxy): a proxy appends the
			// address it saw, to the value or as a line of its own; every line
			// is read, as one comma-separated list, and the last hop is the
			// one the proxy vouches for. The lines before it, and the hops
			// before it on its line, are whatever the client sent.
			hops := strings.Split(v, ",")
			raw = strings.TrimSpace(hops[len(hops)-1])
		}
	}
	if host, _, err := net.SplitHostPort(raw); err == nil {
		raw = host
	}
	ip := net.ParseIP(strings.Trim(raw, "[]"))
	if ip == nil {
		return "unknown"
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// counterKey is HMAC(server counter key, purpose ‖ UTC hour ‖ subject) over
// length-delimited fields. The raw address is stored nowhere; a plain hash
// of an IPv4 address would be reversible, a keyed one is not.
func (s *Server) counterKey(purpose string, hour time.Time, subject string) []byte {
	m := hmac.New(sha256.New, s.opts.Keys.Counter)
	var n [4]byte
	for _, f := range []string{"admit counter v1", purpose, strconv.FormatInt(hour.UTC().Unix(), 10), subject} {
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	return m.Sum(nil)
}
