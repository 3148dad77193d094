package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"
)

// digest is a table's row count and content digest.
type digest struct {
	rows int64
	sum  [sha256.Size]byte
}

// tableDigest reads every row of t through q — a SQLite or a PostgreSQL
// transaction — and digests it the same way on both engines: each row's
// values, in t's column order, encoded with their kind (null, integer,
// real, text, bytes) and length (rowEncoding), hashed; the row hashes
// sorted, so that neither engine's row order matters; and those hashed in
// turn. A value that differs in one byte, changes kind (an empty text
// against a NULL, a number against its text) or moves to another column
// changes the digest.
func tableDigest(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, t copyTable) (digest, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+quoteIdents(t.columns)+` FROM `+quoteIdent(t.name))
	if err != nil {
		return digest{}, err
	}
	defer rows.Close()
	vals := make([]any, len(t.columns))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var hashes [][sha256.Size]byte
	var buf []byte
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return digest{}, err
		}
		if buf, err = rowEncoding(buf[:0], vals); err != nil {
			return digest{}, err
		}
		hashes = append(hashes, sha256.Sum256(buf))
	}
	if err := rows.Err(); err != nil {
		return digest{}, err
	}
	slices.SortFunc(hashes, func(a, b [sha256.Size]byte) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	for _, r := range hashes {
		h.Write(r[:])
	}
	d := digest{rows: int64(len(hashes))}
	copy(d.sum[:], h.Sum(nil))
	return d, nil
}

// rowEncoding appends to buf one row's values, each as a kind byte, then
// for a text or bytes value its length, then the value itself. Both
// drivers give a column's value as one of these Go types.
func rowEncoding(buf []byte, vals []any) ([]byte, error) {
	for i, v := range vals {
		switch v := v.(type) {
		case nil:
			buf = append(buf, 'n')
		case int64:
			buf = binary.BigEndian.AppendUint64(append(buf, 'i'), uint64(v))
		case int32:
			buf = binary.BigEndian.AppendUint64(append(buf, 'i'), uint64(int64(v)))
		case float64:
			buf = binary.BigEndian.AppendUint64(append(buf, 'r'), math.Float64bits(v))
		case string:
			buf = binary.BigEndian.AppendUint64(append(buf, 't'), uint64(len(v)))
			buf = append(buf, v...)
		case []byte:
			buf = binary.BigEndian.AppendUint64(append(buf, 'b'), uint64(len(v)))
			buf = append(buf, v...)
		case bool:
			// A flag is an integer on both engines; a boolean would be
			// a schema difference, and digests as one.
			buf = append(buf, 'B', map[bool]byte{false: 0, true: 1}[v])
		case time.Time:
			buf = binary.BigEndian.AppendUint64(append(buf, 'T'), uint64(v.UnixNano()))
		default:
			return nil, fmt.Errorf("column %d holds a %T, which the digest does not know", i+1, v)
		}
	}
	return buf, nil
}
