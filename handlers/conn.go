package handlers

import (
	"context"
	"net"
	"sync/atomic"
	"time"
)

// connRecord is what admit remembers about one client connection: when
// the last signup it carried was refused for load, and so when the
// refusal's Retry-After ends. A client that sends again on the same
// connection before then ignores Retry-After, as bots do, and its refusal
// is paced even while refusals overall are not (signupLimiter.refuse).
type connRecord struct {
	// retryAt is the Unix time in nanoseconds before which a signup on
	// this connection resends one refused for load; 0 when none was.
	retryAt atomic.Int64
}

type connRecordKey struct{}

// ConnContext gives each connection a record of its own. The http.Server
// that serves admit sets it as its ConnContext; a handler served without
// it cannot tell a resend on the same connection, and paces refusals by
// their overall rate alone.
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connRecordKey{}, &connRecord{})
}

// connRecordFrom returns the record of ctx's connection, or nil.
func connRecordFrom(ctx context.Context) *connRecord {
	c, _ := ctx.Value(connRecordKey{}).(*connRecord)
	return c
}

// resendsBefore reports whether a signup arriving at now on c resends one
// refused for load before its Retry-After ended. A nil record never does.
func (c *connRecord) resendsBefore(now time.Time) bool {
	return c != nil && now.UnixNano() < c.retryAt.Load()
}

// refusedAt records that a refusal for load leaves c at t: the client is
// asked to wait busyRetryWait from then.
func (c *connRecord) refusedAt(t time.Time) {
	if c != nil {
		c.retryAt.Store(t.Add(busyRetryWait).UnixNano())
	}
}
