package store

import (
	"context"
	"database/sql"
	"sync"
)

// maxCachedStatements bounds each pool's statement cache. admit's queries
// are fixed strings (a handful vary with a placeholder count), so the bound
// is only a guard.
const maxCachedStatements = 256

// stmtCache keeps one prepared statement per SQL text for a pool. The
// driver parses and plans a statement on every unprepared call, which
// costs more than running admit's short queries (docs/PERFORMANCE.md#prepared-statements: a third of
// a signup and 40% of a private read went to the SQL parser). A prepared
// *sql.Stmt is prepared once per connection and reused by every
// transaction on that connection.
//
// A statement is never prepared while a transaction holds a connection: the
// writer pool has a single connection, so that would wait for itself. A
// miss runs unprepared and is prepared after the transaction has ended.
//
// One rule follows from sharing a statement: inside one transaction, do not
// run a query text again while rows of that same text are still open (close
// or drain them first, as every loop in this package does).
type stmtCache struct {
	pool *sql.DB
	mu   sync.Mutex
	// stmts maps SQL text to its statement, or to nil when it cannot be
	// prepared on its own (it then always runs unprepared).
	stmts map[string]*sql.Stmt
}

func newStmtCache(pool *sql.DB) *stmtCache {
	return &stmtCache{pool: pool, stmts: map[string]*sql.Stmt{}}
}

// lookup returns the prepared statement for query, and whether the query
// is known (prepared, or known not to be preparable).
func (c *stmtCache) lookup(query string) (*sql.Stmt, bool) {
	if c == nil {
		return nil, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.stmts[query]
	return s, ok
}

// prepare prepares the queries a finished transaction missed. It must run
// with no connection of the pool held by the caller.
func (c *stmtCache) prepare(ctx context.Context, queries []string) {
	for _, q := range queries {
		if _, known := c.lookup(q); known {
			continue
		}
		s, err := c.pool.PrepareContext(ctx, q)
		if err != nil && ctx.Err() != nil {
			return // try again after a later transaction
		}
		c.mu.Lock()
		if _, known := c.stmts[q]; known || len(c.stmts) >= maxCachedStatements {
			c.mu.Unlock()
			if s != nil {
				s.Close()
			}
			continue
		}
		c.stmts[q] = s // nil when the text cannot be prepared alone
		c.mu.Unlock()
	}
}

// close closes every prepared statement.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, s := range c.stmts {
		if s != nil {
			s.Close()
		}
		delete(c.stmts, q)
	}
}

// stmt returns the transaction's handle on the cached statement for query,
// or nil when the query runs unprepared (and, on a miss, notes it).
func (tx *Tx) stmt(ctx context.Context, query string) *sql.Stmt {
	if s := tx.stmts[query]; s != nil {
		return s // a batch of signups runs the same statements many times
	}
	s, known := tx.cache.lookup(query)
	if s != nil {
		ts := tx.Tx.StmtContext(ctx, s)
		if tx.stmts == nil {
			tx.stmts = map[string]*sql.Stmt{}
		}
		tx.stmts[query] = ts
		return ts
	}
	if !known {
		tx.missed = append(tx.missed, query)
	}
	return nil
}

// ExecContext runs a statement in the transaction, prepared once per
// connection when it can be.
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := tx.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return tx.Tx.ExecContext(ctx, query, args...)
}

// QueryContext runs a query in the transaction, prepared once per
// connection when it can be.
func (tx *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := tx.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return tx.Tx.QueryContext(ctx, query, args...)
}

// QueryRowContext runs a single-row query in the transaction, prepared
// once per connection when it can be.
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := tx.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return tx.Tx.QueryRowContext(ctx, query, args...)
}
