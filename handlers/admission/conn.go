package admission

import (
	"context"
	"net"
	"sync/atomic"
	"time"
)

// Conn is what admit remembers about one client connection: when
// the last signup it carried was refused for load, and so when the
// refusal's Retry-After ends. A client that sends again on the same
// connection before then ignores Retry-After, as bots do, and its refusal
// is paced even while refusals overall are not (Limiter.refuse).
type Conn struct {
	// retryAt is the Unix time in nanoseconds before which a signup on
	// this connection resends one refused for load; 0 when none was.
	retryAt atomic.Int64
}

type connKey struct{}

// RetryWait is how long a client refused for load is asked to wait before
// it sends again: the refusal's Retry-After.
const RetryWait = time.Second

// ConnContext gives each connection a record of its own. The http.Server
// that serves admit sets it as its ConnContext; a handler served without
// it cannot tell a resend on the same connection, and paces refusals by
// their overall rate alone.
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, &Conn{})
}

// ConnFrom returns the record of ctx's connection, or nil.
func ConnFrom(ctx context.Context) *Conn {
	c, _ := ctx.Value(connKey{}).(*Conn)
	return c
}

// resendsBefore reports whether a signup arriving at now on c resends one
// refused for load before its Retry-After ended. A nil record never does.
func (c *Conn) resendsBefore(now time.Time) bool {
	return c != nil && now.UnixNano() < c.retryAt.Load()
}

// refusedAt records that a refusal for load leaves c at t: the client is
// asked to wait RetryWait from then.
func (c *Conn) refusedAt(t time.Time) {
	if c != nil {
		c.retryAt.Store(t.Add(RetryWait).UnixNano())
	}
}
