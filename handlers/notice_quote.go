package handlers

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
)

// maxQuotes bounds the quote cache: one entry per program and notice
// version that a successful signup used.
const maxQuotes = 10000

// noticeQuote is what the form's 202 page quotes: the program's slug,
// name, purpose and workspace, and the contact and retention texts of the
// notice version the person agreed to.
type noticeQuote struct {
	Slug, Name, Purpose, WorkspaceName, ContactText, RetentionText string
}

// quoteCache keeps noticeQuotes by program slug and notice version. They
// never change once published: notices are append-only (a trigger refuses
// any update), and a program's slug and purpose are fixed when it is
// created. Its name and its workspace's display name can change: saving
// either forgets every quote (rare, so the cache is simply emptied). So the 202 page reads them once per version, not once per
// signup: that read was a third of the form's cost outside the write
// transaction (docs/PERFORMANCE.md#the-notice-quote). The zero value is ready to use.
type quoteCache struct {
	m sync.Map // slug "\x00" version → noticeQuote
	n atomic.Int64
}

// quote returns the quote for the program at slug and notice version v.
func (s *Server) quote(ctx context.Context, slug string, v int) (noticeQuote, error) {
	key := slug + "\x00" + strconv.Itoa(v)
	if q, ok := s.quotes.m.Load(key); ok {
		return q.(noticeQuote), nil
	}
	p, n, err := s.db.PublicNotice(ctx, slug, v)
	if err != nil {
		return noticeQuote{}, err
	}
	q := noticeQuote{Slug: p.Slug, Name: p.Name, Purpose: p.Purpose, WorkspaceName: p.WorkspaceName,
		ContactText: n.ContactText, RetentionText: n.RetentionText}
	if s.quotes.n.Add(1) <= maxQuotes {
		s.quotes.m.Store(key, q)
	}
	return q, nil
}

// forgetQuotes empties the quote cache, after a program's name or a
// workspace's display name changed.
func (s *Server) forgetQuotes() {
	s.quotes.m.Range(func(k, _ any) bool {
		s.quotes.m.Delete(k)
		return true
	})
	s.quotes.n.Store(0)
}
