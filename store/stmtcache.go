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
	// engine is the pool's engine: on PostgreSQL each text is prepared in
	// its rebound form (rebind), still cached under the text as written.
	engine Engine
	mu     sync.Mutex
	// stmts maps SQL text to its statement, or to nil when it cannot be
	// prepared on its own (it then always runs unprepared).
	stmts map[string]*sql.Stmt
}

func newStmtCache(pool *sql.DB, engine Engine) *stmtCache {
	return &stmtCache{pool: pool, engine: engine, stmts: map[string]*sql.Stmt{}}
}

// text returns query as the pool's engine runs it.
func (c *stmtCache) text(query string) string {
	if c != nil && c.engine == PostgreSQL {
		return rebind(query)
	}
	return query
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
		s, err := c.pool.PrepareContext(ctx, c.text(q))
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
	args = tx.args(args)
	if s := tx.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return tx.Tx.ExecContext(ctx, tx.text(query), args...)
}

// QueryContext runs a query in the transaction, prepared once per
// connection when it can be.
func (tx *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	args = tx.args(args)
	if s := tx.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return tx.Tx.QueryContext(ctx, tx.text(query), args...)
}

// QueryRowContext runs a single-row query in the transaction, prepared
// once per connection when it can be.
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	args = tx.args(args)
	if s := tx.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return tx.Tx.QueryRowContext(ctx, tx.text(query), args...)
}

// text returns query as the transaction's engine runs it: on PostgreSQL
// with its ? placeholders numbered (rebind).
func (tx *Tx) text(query string) string {
	if tx.engine == PostgreSQL {
		return rebind(query)
	}
	return query
}

// args returns a statement's arguments as the transaction's engine takes
// them: on PostgreSQL a Go bool becomes 1 or 0, as SQLite's driver stores
// it, since the schema keeps flags as 0/1 integers on both engines.
func (tx *Tx) args(args []any) []any { return engineArgs(tx.engine, args) }

// engineArgs is Tx.args for engine. The caller's slice is left as it was.
func engineArgs(engine Engine, args []any) []any {
	if engine != PostgreSQL {
		return args
	}
	var out []any
	for i, a := range args {
		if b, ok := a.(bool); ok {
			if out == nil {
				out = append([]any(nil), args...)
			}
			out[i] = boolInt(b)
		}
	}
	if out == nil {
		return args
	}
	return out
}

// boolInt is 1 for true and 0 for false.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
