package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Entry is one person on a program's waitlist.
type Entry struct {
	ID        string
	ProgramID string
	// Email is the normalized address, or "" once erased.
	Email         string
	State         string
	NoticeID      string
	NoticeVersion int
	PermissionAt  time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	EraseAfter    *time.Time
	ErasedAt      *time.Time
}

// SelectReason is why an owner selected an entry (SelectReasons).
type SelectReason string

// Reasons for selecting.
const (
	SelectMeetsPolicy     SelectReason = "meets_policy"
	SelectPriorityCohort  SelectReason = "priority_cohort"
	SelectOwnerDiscretion SelectReason = "owner_discretion"
)

// DeclineReason is why an owner declined an entry (DeclineReasons).
type DeclineReason string

// Reasons for declining.
const (
	DeclineNotEligible    DeclineReason = "not_eligible"
	DeclineCapacity       DeclineReason = "capacity"
	DeclineInvalidRequest DeclineReason = "invalid_request"
	DeclineOther          DeclineReason = "other"
)

// Reason codes an owner records for a decision: a fixed list, never free text.
var (
	SelectReasons  = []string{string(SelectMeetsPolicy), string(SelectPriorityCohort), string(SelectOwnerDiscretion)}
	DeclineReasons = []string{string(DeclineNotEligible), string(DeclineCapacity), string(DeclineInvalidRequest),
		string(DeclineOther)}
	WithdrawReasons = []string{string(ViaApplicantRequest)}
)

// EntryStates lists every entry state, in lifecycle order.
var EntryStates = []string{StateWaiting, StateSelected, StateInvited, StateActive, StateDeclined, StateWithdrawn, StateRevoked}

func oneOf(v string, list []string) bool {
	for _, x := range list {
		if v == x {
			return true
		}
	}
	return false
}

const entryColumns = `e.id, e.program_id, e.email_key, e.state, e.notice_id, n.version, e.permission_at,
	e.created_at, e.updated_at, e.erase_after, e.erased_at`

const entryFrom = ` FROM entries e JOIN notices n ON n.id = e.notice_id AND n.program_id = e.program_id `

func scanEntry(row interface{ Scan(...any) error }) (*Entry, error) {
	var e Entry
	var perm, created, updated int64
	var eraseAfter, erasedAt sql.NullInt64
	if err := row.Scan(&e.ID, &e.ProgramID, &e.Email, &e.State, &e.NoticeID, &e.NoticeVersion, &perm,
		&created, &updated, &eraseAfter, &erasedAt); err != nil {
		return nil, err
	}
	e.PermissionAt, e.CreatedAt, e.UpdatedAt = FromMillis(perm), FromMillis(created), FromMillis(updated)
	if eraseAfter.Valid {
		t := FromMillis(eraseAfter.Int64)
		e.EraseAfter = &t
	}
	if erasedAt.Valid {
		t := FromMillis(erasedAt.Int64)
		e.ErasedAt = &t
		e.Email = ""
	}
	return &e, nil
}

// entryByID reads an entry of the given program; another program's entry is
// not found.
func entryByID(ctx context.Context, tx *Tx, programID, entryID string) (*Entry, error) {
	if _, err := uuid.Parse(entryID); err != nil {
		return nil, Errorf(ENOTFOUND, "Not found.")
	}
	e, err := scanEntry(tx.QueryRowContext(ctx, `SELECT `+entryColumns+entryFrom+`WHERE e.id = ? AND e.program_id = ?`,
		entryID, programID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Errorf(ENOTFOUND, "Not found.")
	}
	if err != nil {
		return nil, fmt.Errorf("read entry: %w", err)
	}
	return e, nil
}

// Queue page bounds.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// QueueFilter selects a page of a program's queue.
type QueueFilter struct {
	// State is one of EntryStates, or "" for all.
	State string
	// From and To bound the join time: From ≤ created < To; zero is unbounded.
	From, To time.Time
	// Query is a search: a whole address, normalised as at signup and then
	// matched with the part before the @ in any letter case (addresses keep
	// that part as typed, so Liam@ and liam@ are two entries and an owner
	// looking for one must see both), or the start of the part before the
	// @, in any letter case. "" matches every entry. Erased entries never
	// match.
	Query string
	// Cursor is the opaque position returned as NextCursor, or "".
	Cursor string
	// Before is the opaque position returned as PrevCursor, or "": the page
	// that ends just before it. At most one of Cursor and Before is set.
	Before string
	// Limit is 1–MaxPageSize; 0 means DefaultPageSize.
	Limit int
}

// QueuePage is one page of the queue, oldest first.
type QueuePage struct {
	Entries    []Entry
	NextCursor string
	// PrevCursor leads to the page before this one, "" on the first.
	PrevCursor string
	// SendNotRecorded holds the page's entries whose issued invitation has
	// no recorded send: its code cannot be redeemed yet.
	SendNotRecorded map[string]bool
}

// queueCursor is a position in the queue: after (or before) an entry in
// join order, or, for a search, in address order.
type queueCursor struct {
	search bool
	at     int64
	id     string
}

// encodeCursor makes an opaque cursor from a position in join order: the
// join time and the entry ID, nothing else.
func encodeCursor(createdAt int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(createdAt, 10) + "." + id))
}

// EntryCursor is e's position in the queue's join order, for a
// QueueFilter's Cursor (the entries after it) or Before (those before it).
func EntryCursor(e *Entry) string { return encodeCursor(e.CreatedAt.UnixMilli(), e.ID) }

// encodeSearchCursor makes an opaque cursor from a position in a search's
// address order: only the entry ID, never the address.
func encodeSearchCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("s." + id))
}

func decodeCursor(c string) (queueCursor, error) {
	bad := Errorf(EINVALID, "The page position is not valid. Start again from the first page.")
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return queueCursor{}, bad
	}
	head, id, ok := strings.Cut(string(b), ".")
	if _, err := uuid.Parse(id); !ok || err != nil {
		return queueCursor{}, bad
	}
	if head == "s" {
		return queueCursor{search: true, id: id}, nil
	}
	t, err := strconv.ParseInt(head, 10, 64)
	if err != nil {
		return queueCursor{}, bad
	}
	return queueCursor{at: t, id: id}, nil
}

// Validate checks the filter's bounds.
func (f *QueueFilter) Validate() error {
	if f.State != "" && !oneOf(f.State, EntryStates) {
		return Errorf(EINVALID, "Unknown state %q.", f.State)
	}
	if f.Limit == 0 {
		f.Limit = DefaultPageSize
	}
	if f.Limit < 1 || f.Limit > MaxPageSize {
		return Errorf(EINVALID, "A page holds 1–%d entries.", MaxPageSize)
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return Errorf(EINVALID, "The start of the time range must be before its end.")
	}
	if f.Cursor != "" && f.Before != "" {
		return Errorf(EINVALID, "A page starts after one position or ends before one, not both.")
	}
	_, _, err := f.search()
	return err
}

// MaxSearchLength bounds a queue search, in bytes: the longest address.
const MaxSearchLength = 254

// searchMode is what a queue search matches.
type searchMode int

const (
	searchPrefix         searchMode = iota // the start of the part before the @
	searchExact                            // a whole address
	searchDomain                           // every address at exactly one domain
	searchPrefixOrDomain                   // a local-part prefix that is also a domain: both
)

// searchRefused is a search's refusal, shown beside the search box.
func searchRefused() error {
	return Errorf(EINVALID, "Search for a whole address (name@example.com), a domain (@example.com or example.com) or the start of the part before the @.").On("q")
}

// search reads the filter's query, lowercased: a whole address (searchExact)
// in the signup grammar's normal form; a domain (searchDomain), written
// @example.com; a local-part prefix; or a term with a dot and no @ that is
// also a domain in the signup grammar (searchPrefixOrDomain), which finds
// both; "" for no search (docs/API.md#queue-and-entries).
func (f *QueueFilter) search() (term string, mode searchMode, err error) {
	q := strings.Trim(f.Query, " ")
	switch {
	case q == "":
		return "", searchPrefix, nil
	case len(q) > MaxSearchLength:
		return "", searchPrefix, Errorf(EINVALID, "A search is at most %d characters.", MaxSearchLength).On("q")
	case strings.HasPrefix(q, "@"):
		if !validDomain(q[1:]) {
			return "", searchPrefix, searchRefused()
		}
		return strings.ToLower(q[1:]), searchDomain, nil
	case strings.Contains(q, "@"):
		addr, err := NormalizeEmail(q)
		if err != nil {
			return "", searchPrefix, searchRefused()
		}
		return strings.ToLower(addr), searchExact, nil
	case strings.Contains(q, ".") && validDomain(q):
		return strings.ToLower(q), searchPrefixOrDomain, nil
	}
	for i := 0; i < len(q); i++ {
		c := q[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte(".!#$%&'*+/=?^_`{|}~-", c) >= 0) {
			return "", searchPrefix, searchRefused()
		}
	}
	return strings.ToLower(q), searchPrefix, nil
}

// prefixEnd is the least string greater than every string that starts
// with prefix (a non-empty ASCII string): its last byte, plus one.
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	b[len(b)-1]++
	return string(b)
}

// Queue returns a bounded page of the program's entries with keyset
// pagination: each page continues after the last (join time, ID) seen, so
// every entry is visited once even while new ones arrive.
func (db *DB) Queue(ctx context.Context, a Actor, programID string, f QueueFilter) (*QueuePage, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	page := &QueuePage{}
	err := db.View(ctx, func(tx *Tx) error {
		if _, err := ownedProgram(ctx, tx, a, programID); err != nil {
			return err
		}
		q, args, err := queueQuery(tx.engine, programID, f, func(entryID string) (string, error) {
			return searchKeyOf(ctx, tx, programID, entryID)
		})
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("queue: %w", err)
		}
		defer rows.Close()
		scan := scanEntry
		if term, _, _ := f.search(); term != "" {
			scan = scanSearchEntry
		}
		for rows.Next() {
			e, err := scan(rows)
			if err != nil {
				return err
			}
			page.Entries = append(page.Entries, *e)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		page.SendNotRecorded, err = unsentInvitations(ctx, tx, programID, page.Entries)
		return err
	})
	if err != nil {
		return nil, err
	}
	more := len(page.Entries) > f.Limit
	if more {
		page.Entries = page.Entries[:f.Limit]
	}
	if f.Before != "" {
		// Read newest first to find the page just before; show it oldest first.
		slices.Reverse(page.Entries)
	}
	if len(page.Entries) == 0 {
		return page, nil
	}
	cursor := func(e Entry) string {
		if term, _, _ := f.search(); term != "" {
			return encodeSearchCursor(e.ID)
		}
		return encodeCursor(Millis(e.CreatedAt), e.ID)
	}
	first, last := page.Entries[0], page.Entries[len(page.Entries)-1]
	if (f.Before == "" && more) || f.Before != "" {
		page.NextCursor = cursor(last)
	}
	if (f.Before != "" && more) || f.Cursor != "" {
		page.PrevCursor = cursor(first)
	}
	return page, nil
}

// searchKeyOf is an entry's place in a search's address order: its
// lowercased address. An entry not in the program is an invalid position.
func searchKeyOf(ctx context.Context, tx *Tx, programID, entryID string) (string, error) {
	var key string
	err := tx.QueryRowContext(ctx, `SELECT lower(email_key) FROM entries WHERE id = ? AND program_id = ?`, entryID, programID).Scan(&key)
	if errors.Is(err, sql.ErrNoRows) {
		return "", Errorf(EINVALID, "The page position is not valid. Start again from the first page.")
	}
	if err != nil {
		return "", fmt.Errorf("read search position: %w", err)
	}
	return key, nil
}

// queueQuery is the SQL for a page of the queue. rule: a search reads only
// the entries it matches, in the order of an index, so a page costs the
// same whether a prefix matches ten entries or all of them; an erased entry
// never matches. A search's pages are in address order, by the lowercased
// address and then the ID; every other page is in join order. keyOf
// resolves a search cursor's entry to its place in address order.
func queueQuery(engine Engine, programID string, f QueueFilter, keyOf func(entryID string) (string, error)) (string, []any, error) {
	term, mode, err := f.search()
	if err != nil {
		return "", nil, err
	}
	if term != "" {
		return searchQuery(engine, programID, f, term, mode, keyOf)
	}
	q := `SELECT ` + entryColumns + entryFrom + `WHERE e.program_id = ?`
	args := []any{programID}
	if f.State != "" {
		q += ` AND e.state = ?`
		args = append(args, f.State)
	}
	q += joinTimeRange(f, &args)
	order, dir := ` ORDER BY e.created_at, e.id`, ">"
	if f.Before != "" {
		order, dir = ` ORDER BY e.created_at DESC, e.id DESC`, "<"
	}
	if pos := f.Cursor + f.Before; pos != "" {
		c, err := decodeCursor(pos)
		if err != nil {
			return "", nil, err
		}
		if c.search {
			return "", nil, Errorf(EINVALID, "The page position belongs to another list. Start again from the first page.")
		}
		q += ` AND (e.created_at, e.id) ` + dir + ` (?, ?)`
		args = append(args, c.at, c.id)
	}
	return q + order + ` LIMIT ?`, append(args, f.Limit+1), nil
}

// joinTimeRange is the filter's bounds on the join time, as SQL
// conditions; their values are appended to args.
func joinTimeRange(f QueueFilter, args *[]any) string {
	var q string
	if !f.From.IsZero() {
		q += ` AND e.created_at >= ?`
		*args = append(*args, Millis(f.From))
	}
	if !f.To.IsZero() {
		q += ` AND e.created_at < ?`
		*args = append(*args, Millis(f.To))
	}
	return q
}

// searchQuery is the SQL for a page of a search: every lowercased address
// that starts with term or, when exact, equals it. rule: a search
// reads entries_state_search_idx (migration 00007), which keeps each
// state's entries of a program in address order: one range per state (only
// the filter's state, when it names one), each read in that order, merged
// by SQLite's compound ORDER BY, which reads each range only as far as the
// page needs. There is no index over the addresses of every state: it
// would cost each signup one more randomly placed page (migration 00010,
// docs/PERFORMANCE.md#cpu-per-signup). Each row carries its lowercased address
// as one more column, the merge's key (see scanSearchEntry).
func searchQuery(engine Engine, programID string, f QueueFilter, term string, mode searchMode, keyOf func(entryID string) (string, error)) (string, []any, error) {
	spans := searchSpans(term, mode)
	after, afterArgs, err := searchAfter(f, spans, keyOf)
	if err != nil {
		return "", nil, err
	}
	states := EntryStates
	if f.State != "" {
		states = []string{f.State}
	}
	arms := make([]string, 0, len(states)*len(spans))
	var args []any
	for _, sp := range spans {
		for _, st := range states {
			args = append(append(args, programID, st), afterArgs...)
			arms = append(arms, searchArm(engine, f, sp, after, len(states)*len(spans) > 1, &args))
		}
	}
	// Column 1 is the entry's ID (entryColumns).
	order := ` ORDER BY search_key, 1`
	if f.Before != "" {
		order = ` ORDER BY search_key DESC, 1 DESC`
	}
	// An entry both spans find is listed once.
	join := ` UNION ALL `
	if len(spans) > 1 {
		join = ` UNION `
	}
	return strings.Join(arms, join) + order + ` LIMIT ?`, append(args, f.Limit+1), nil
}

// searchSpan is a range of lowercased addresses, read in address order
// from one state's part of the index; domain, when set, keeps only the
// addresses at exactly that domain.
type searchSpan struct {
	lo, loOp, hi, hiOp, domain string
}

// searchSpans returns the address ranges a search term reads in mode.
func searchSpans(term string, mode searchMode) []searchSpan {
	switch mode {
	case searchExact:
		// rule: a whole address matches its part before the @ in any
		// letter case: the range is that one lowercased address.
		return []searchSpan{{term, ">=", term, "<=", ""}}
	case searchDomain:
		// rule: a domain matches exactly (stored domains are lowercase),
		// never a subdomain. Addresses are ordered by their local part,
		// so a domain search reads each state's whole range (from the
		// cursor) until the page is full: every address is ASCII, below
		// 0x7f.
		return []searchSpan{{"", ">=", "\x7f", "<", term}}
	case searchPrefixOrDomain:
		// rule: a term with no @ that is also a domain finds both.
		return []searchSpan{{term, ">=", prefixEnd(term), "<", ""}, {"", ">=", "\x7f", "<", term}}
	}
	return []searchSpan{{term, ">=", prefixEnd(term), "<", ""}}
}

// searchAfter narrows spans to the page after (or before) the filter's
// cursor and returns the condition that tells apart entries with the
// cursor's own address, with its arguments; nothing without a cursor.
func searchAfter(f QueueFilter, spans []searchSpan, keyOf func(entryID string) (string, error)) (string, []any, error) {
	pos := f.Cursor + f.Before
	if pos == "" {
		return "", nil, nil
	}
	// rule: a search's cursor holds only an entry ID, never an
	// address; its place in the order is that entry's lowercased
	// address, read here and bound. The index seeks to it: the range
	// starts (or, going back, ends) at that address, and only entries
	// with the very same address are told apart by ID.
	c, err := decodeCursor(pos)
	if err != nil {
		return "", nil, err
	}
	if !c.search {
		return "", nil, Errorf(EINVALID, "The page position belongs to another list. Start again from the first page.")
	}
	key, err := keyOf(c.id)
	if err != nil {
		return "", nil, err
	}
	for i := range spans {
		sp := &spans[i]
		if f.Cursor != "" {
			sp.lo = max(sp.lo, key)
		} else if key < sp.hi {
			sp.hi, sp.hiOp = key, "<="
		}
	}
	if f.Cursor != "" {
		return ` AND (lower(e.email_key) > ? OR e.id > ?)`, []any{key, c.id}, nil
	}
	return ` AND (lower(e.email_key) < ? OR e.id < ?)`, []any{key, c.id}, nil
}

// searchArm is the query of one span in one state, its arguments after
// the program, state and cursor ones appended to args; several says the
// search has more than one arm.
func searchArm(engine Engine, f QueueFilter, sp searchSpan, after string, several bool, args *[]any) string {
	arm := `SELECT ` + entryColumns + `, lower(e.email_key) AS search_key
			FROM entries e ` + engine.pick(`INDEXED BY entries_state_search_idx`, ``) + `
			JOIN notices n ON n.id = e.notice_id AND n.program_id = e.program_id
			WHERE e.program_id = ? AND e.state = ?` + after +
		` AND lower(e.email_key) ` + sp.loOp + ` ? AND lower(e.email_key) ` + sp.hiOp + ` ? AND e.erased_at IS NULL`
	*args = append(*args, sp.lo, sp.hi)
	if sp.domain != "" {
		arm += engine.pick(` AND substr(e.email_key, instr(e.email_key, '@') + 1) = ?`,
			` AND split_part(e.email_key, '@', 2) = ?`)
		*args = append(*args, sp.domain)
	}
	arm += joinTimeRange(f, args)
	if engine == PostgreSQL && several {
		// PostgreSQL's planner, unlike SQLite's compound ORDER BY,
		// may read every arm whole and sort (a prefix matching
		// 100,000 entries took 120 ms): each arm reads its range
		// in index order only as far as the page needs. (One arm
		// alone is a plain ordered read already.)
		dir := ""
		if f.Before != "" {
			dir = " DESC"
		}
		arm = `(` + arm + ` ORDER BY lower(e.email_key)` + dir + `, e.id` + dir + ` LIMIT ?)`
		*args = append(*args, f.Limit+1)
	}
	return arm
}

// scanSearchEntry reads a row of searchQuery: an entry and then its
// search key, which it drops.
func scanSearchEntry(row interface{ Scan(...any) error }) (*Entry, error) {
	return scanEntry(rowWithKey{row})
}

// rowWithKey scans a row that has one more column than its destinations.
type rowWithKey struct {
	row interface{ Scan(...any) error }
}

func (r rowWithKey) Scan(dest ...any) error {
	var key string
	return r.row.Scan(append(dest, &key)...)
}

// StateCounts counts a program's entries by state. It reads the counters
// that triggers on entries keep (migration 00002), not the queue itself.
func (db *DB) StateCounts(ctx context.Context, a Actor, programID string) (map[string]int, error) {
	var out map[string]int
	err := db.View(ctx, func(tx *Tx) error {
		if _, err := ownedProgram(ctx, tx, a, programID); err != nil {
			return err
		}
		var err error
		out, err = stateCounts(ctx, tx, programID)
		return err
	})
	return out, err
}

// stateCounts reads the number of a program's entries in each state that
// has any.
func stateCounts(ctx context.Context, tx *Tx, programID string) (map[string]int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT state, n FROM entry_state_counts WHERE program_id = ? AND n > 0`, programID)
	if err != nil {
		return nil, fmt.Errorf("count states: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[s] = n
	}
	return out, rows.Err()
}

// unchangedIfRetired refuses an owner's change to a retired program's
// entries: from the retirement's commit they are the retirement's to
// settle (docs/erasure.md), and the program stays read-only. Withdrawal is
// the applicant's choice, not the owner's, and stays open: by the
// applicant themselves, by their removal link, or by the owner on their
// documented request (WithdrawEntry).
func unchangedIfRetired(p *Program) error {
	if p.RetiredAt != nil {
		return Errorf(ECONFLICT, "This program is retired: its entries, invitations and access can no longer be changed.")
	}
	return nil
}

// transitionDetails are the details of an event that moves an entry: the
// transition records the state the entry left in them.
type transitionDetails interface {
	EventDetails
	leaving(state string) EventDetails
}

func (d SelectedDetails) leaving(state string) EventDetails  { d.From = state; return d }
func (d DeclinedDetails) leaving(state string) EventDetails  { d.From = state; return d }
func (d WithdrawnDetails) leaving(state string) EventDetails { d.From = state; return d }

// transition moves one entry from one of the allowed states to the next,
// with its audit event (d, and the state it left), and returns the entry
// read back.
func (db *DB) transition(ctx context.Context, tx *Tx, a Actor, p *Program, entryID string, from []string, to string, d transitionDetails) (*Entry, error) {
	e, err := entryByID(ctx, tx, p.ID, entryID)
	if err != nil {
		return nil, err
	}
	if !oneOf(e.State, from) {
		return nil, Errorf(ECONFLICT, "This entry is %s; it must be %s.", e.State, strings.Join(from, " or "))
	}
	if err := db.setEntryState(ctx, tx, p.ID, e.ID, to, p.RetiredAt != nil); err != nil {
		return nil, err
	}
	if err := appendEvent(ctx, tx, p.ID, e.ID, a, d.leaving(e.State)); err != nil {
		return nil, err
	}
	return entryByID(ctx, tx, p.ID, e.ID)
}

// Decision is an owner's decision on one entry (select, decline or
// withdraw): the reason code it is recorded with, from the decision's list
// (SelectReasons, DeclineReasons, WithdrawReasons).
type Decision struct {
	Reason string `json:"reason"`
}

// Selection is a bulk select: up to MaxPageSize waiting entries and the
// reason, from SelectReasons, recorded for each.
type Selection struct {
	EntryIDs []string `json:"entryIds"`
	Reason   string   `json:"reason"`
}

// SelectEntry marks a waiting entry selected, recording the owner's reason.
func (db *DB) SelectEntry(ctx context.Context, a Actor, programID, entryID string, d Decision) (*Entry, error) {
	reason := d.Reason
	if !oneOf(reason, SelectReasons) {
		return nil, Errorf(EINVALID, "Choose a reason for selecting: %s.", strings.Join(SelectReasons, ", ")).On("reason")
	}
	var e *Entry
	err := db.Update(ctx, func(tx *Tx) error {
		p, err := ownedForChange(ctx, tx, a, programID, "")
		if err != nil {
			return err
		}
		e, err = db.transition(ctx, tx, a, p, entryID, []string{StateWaiting}, StateSelected, SelectedDetails{Reason: SelectReason(reason)})
		return err
	})
	return e, err
}

// SelectEntries selects several waiting entries in one transaction: all of
// them or, if any is no longer waiting, none.
func (db *DB) SelectEntries(ctx context.Context, a Actor, programID string, sel Selection) ([]Entry, error) {
	entryIDs, reason := sel.EntryIDs, sel.Reason
	if !oneOf(reason, SelectReasons) {
		return nil, Errorf(EINVALID, "Choose a reason for selecting: %s.", strings.Join(SelectReasons, ", ")).On("reason")
	}
	if len(entryIDs) == 0 || len(entryIDs) > MaxPageSize {
		return nil, Errorf(EINVALID, "Select 1–%d entries.", MaxPageSize)
	}
	return db.decideEach(ctx, a, programID, entryIDs, func(tx *Tx, p *Program, id string) (*Entry, error) {
		return db.transition(ctx, tx, a, p, id, []string{StateWaiting}, StateSelected,
			SelectedDetails{Reason: SelectReason(reason), Batch: true})
	})
}

// DeclineEntry declines a waiting or selected entry that has no issued
// invitation and no grant.
func (db *DB) DeclineEntry(ctx context.Context, a Actor, programID, entryID string, d Decision) (*Entry, error) {
	reason := d.Reason
	if !oneOf(reason, DeclineReasons) {
		return nil, Errorf(EINVALID, "Choose a reason for declining: %s.", strings.Join(DeclineReasons, ", ")).On("reason")
	}
	var e *Entry
	err := db.Update(ctx, func(tx *Tx) error {
		p, err := ownedForChange(ctx, tx, a, programID, "")
		if err != nil {
			return err
		}
		e, err = db.decline(ctx, tx, a, p, entryID, DeclinedDetails{Reason: DeclineReason(reason)})
		return err
	})
	return e, err
}

// DeclineEntries declines several entries in one transaction, the mirror
// of SelectEntries: all of them or, if any cannot be declined, none.
func (db *DB) DeclineEntries(ctx context.Context, a Actor, programID string, sel Selection) ([]Entry, error) {
	entryIDs, reason := sel.EntryIDs, sel.Reason
	if !oneOf(reason, DeclineReasons) {
		return nil, Errorf(EINVALID, "Choose a reason for declining: %s.", strings.Join(DeclineReasons, ", ")).On("reason")
	}
	if len(entryIDs) == 0 || len(entryIDs) > MaxPageSize {
		return nil, Errorf(EINVALID, "Decline 1–%d entries.", MaxPageSize)
	}
	return db.decideEach(ctx, a, programID, entryIDs, func(tx *Tx, p *Program, id string) (*Entry, error) {
		return db.decline(ctx, tx, a, p, id, DeclinedDetails{Reason: DeclineReason(reason), Batch: true})
	})
}

// decideEach is the one path of the bulk decisions (SelectEntries,
// DeclineEntries): in one owner's write it applies decide to each distinct
// entry ID in order, and keeps all of them or, when any fails, none.
func (db *DB) decideEach(ctx context.Context, a Actor, programID string, entryIDs []string,
	decide func(tx *Tx, p *Program, entryID string) (*Entry, error)) ([]Entry, error) {
	var out []Entry
	err := db.Update(ctx, func(tx *Tx) error {
		p, err := ownedForChange(ctx, tx, a, programID, "")
		if err != nil {
			return err
		}
		out = out[:0]
		seen := map[string]bool{}
		for _, id := range entryIDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			e, err := decide(tx, p, id)
			if err != nil {
				return err
			}
			out = append(out, *e)
		}
		return nil
	})
	return out, err
}

// decline is the one decline transition: a waiting or selected entry with
// no issued invitation and no grant becomes declined.
func (db *DB) decline(ctx context.Context, tx *Tx, a Actor, p *Program, entryID string, d DeclinedDetails) (*Entry, error) {
	var blocking int
	if err := tx.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM invitations WHERE entry_id = ? AND program_id = ? AND state = 'issued') +
		(SELECT count(*) FROM grants WHERE entry_id = ? AND program_id = ?)`,
		entryID, p.ID, entryID, p.ID).Scan(&blocking); err != nil {
		return nil, fmt.Errorf("check decline: %w", err)
	}
	if blocking > 0 {
		return nil, Errorf(ECONFLICT, "This entry has an invitation or access. Revoke it first.")
	}
	return db.transition(ctx, tx, a, p, entryID, []string{StateWaiting, StateSelected}, StateDeclined, d)
}

// withdraw is the one withdrawal transition, for the applicant and for an
// owner acting on the applicant's documented request: the entry becomes
// withdrawn and its issued invitation and active grant are revoked in the
// same transaction. Repeating it changes nothing and gives the same answer.
func (db *DB) withdraw(ctx context.Context, tx *Tx, a Actor, p *Program, entryID string, via WithdrawalVia) (*Entry, error) {
	e, err := entryByID(ctx, tx, p.ID, entryID)
	if err != nil {
		return nil, err
	}
	if e.State == StateWithdrawn {
		return e, nil
	}
	if err := endAccess(ctx, tx, p.ID, e.ID, a); err != nil {
		return nil, err
	}
	return db.transition(ctx, tx, a, p, e.ID, []string{e.State}, StateWithdrawn, WithdrawnDetails{Via: via})
}

// WithdrawEntry withdraws an entry on the applicant's documented request.
func (db *DB) WithdrawEntry(ctx context.Context, a Actor, programID, entryID string, d Decision) (*Entry, error) {
	reason := d.Reason
	if !oneOf(reason, WithdrawReasons) {
		return nil, Errorf(EINVALID, "An owner withdraws an entry only on the applicant's request (reason applicant_request).")
	}
	var e *Entry
	err := db.Update(ctx, func(tx *Tx) error {
		p, err := ownedProgram(ctx, tx, a, programID)
		if err != nil {
			return err
		}
		e, err = db.withdraw(ctx, tx, a, p, entryID, ViaApplicantRequest)
		return err
	})
	return e, err
}

// EntriesByID reads the program's entries with the given IDs, in the order
// asked, each once; an ID that is not an entry of this program is not
// found (and nothing is returned).
func (db *DB) EntriesByID(ctx context.Context, a Actor, programID string, entryIDs []string) ([]Entry, error) {
	if len(entryIDs) == 0 || len(entryIDs) > MaxPageSize {
		return nil, Errorf(EINVALID, "Choose 1–%d entries.", MaxPageSize)
	}
	var out []Entry
	err := db.View(ctx, func(tx *Tx) error {
		p, err := ownedProgram(ctx, tx, a, programID)
		if err != nil {
			return err
		}
		out = out[:0]
		seen := map[string]bool{}
		for _, id := range entryIDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			e, err := entryByID(ctx, tx, p.ID, id)
			if err != nil {
				return err
			}
			out = append(out, *e)
		}
		return nil
	})
	return out, err
}

// unsentInvitations returns which of the invited entries hold an issued,
// unexpired invitation whose send is not recorded: one lookup per invited entry on
// the page, by the entry's invitation index.
func unsentInvitations(ctx context.Context, tx *Tx, programID string, entries []Entry) (map[string]bool, error) {
	out := map[string]bool{}
	for _, e := range entries {
		if e.State != StateInvited {
			continue
		}
		var unsent bool
		err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM invitations WHERE entry_id = ? AND program_id = ?
			AND state = 'issued' AND delivery_recorded_at IS NULL AND expires_at > ?)`, e.ID, programID, Millis(tx.Now)).Scan(&unsent)
		if err != nil {
			return nil, fmt.Errorf("read unsent invitations: %w", err)
		}
		if unsent {
			out[e.ID] = true
		}
	}
	return out, nil
}
