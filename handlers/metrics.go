package handlers

import "time"

// RequestObserver is told about every request when it is done, for
// metrics: the method (one of the fixed HTTP methods or OTHER), the
// registered route pattern or "unmatched", the status and the duration.
// Nothing a client typed reaches it.
type RequestObserver interface {
	Request(method, route string, status int, d time.Duration)
}

// Routes returns every registered route pattern: with "unmatched", the
// only route names a RequestObserver is given.
func (s *Server) Routes() []string {
	out := make([]string, 0, len(s.patterns))
	for p := range s.patterns {
		out = append(out, p)
	}
	return out
}
