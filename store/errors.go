package store

import (
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Error codes. Handlers map each to one HTTP status in one table.
const (
	EINVALID     = "invalid"      // malformed input or out of bounds
	ENOTFOUND    = "not_found"    // absent, foreign or revoked: never says which
	ECONFLICT    = "conflict"     // revision, key binding or state
	ERATELIMITED = "rate_limited" // caps and attempt rates
	EFORBIDDEN   = "forbidden"    // a valid owner denied by policy
	EUNAVAILABLE = "unavailable"  // a dependency cannot be reached
	EINTERNAL    = "internal"     // everything unexpected
)

// Error is a domain error with a machine-readable code and a message that is
// safe to show a person. Messages never contain personal data.
type Error struct {
	Code    string
	Message string
	// Field names the input the error is about, as the JSON API spells it
	// ("seatCap"), or "" when it is about the request as a whole. Forms
	// link their error summary to that field.
	Field string
	// The parts of a bulk request's refusal a client needs in order to
	// correct it (docs/API.md#bulk-invitations): how many seats are left,
	// or the one entry or invitation that cannot take the action.
	SeatsLeft    *int
	EntryID      string
	InvitationID string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// On returns a copy of e about the named input field.
func (e *Error) On(field string) *Error {
	c := *e
	c.Field = field
	return &c
}

// about returns a copy of e naming the entry or invitation of a bulk
// request it refuses.
func (e *Error) about(entryID, invitationID string) *Error {
	c := *e
	c.EntryID, c.InvitationID = entryID, invitationID
	return &c
}

// ErrorField returns the input field err is about, or "".
func ErrorField(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err: the code of a wrapped *Error, ECONFLICT
// for a constraint failure, EUNAVAILABLE for a lost connection to the
// database server or a PostgreSQL server that takes only reads, EINTERNAL
// otherwise (and "" for nil).
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if isConstraint(err) {
		return ECONFLICT
	}
	if isLostConnection(err) || pgCode(err) == pgReadOnlyTransaction {
		return EUNAVAILABLE
	}
	return EINTERNAL
}

// ErrorMessage returns the person-readable message of err, or a generic one
// for internal errors, which may hold details that must not be shown.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	if isConstraint(err) {
		return "The change conflicts with the current state."
	}
	if isLostConnection(err) {
		return "The server cannot reach its database right now. Please try again later."
	}
	if pgCode(err) == pgReadOnlyTransaction {
		// A standby that takes only reads: after a failover, until the
		// address points at the new primary (docs/DEPLOY.md).
		return "The database takes no changes right now. Please try again later."
	}
	return "Something went wrong on our side."
}

// isConstraint reports a row refused by one of the schema's own rules (a
// unique key, a check, a foreign key, a NOT NULL column, a trigger's
// RAISE(ABORT)), recognised by SQLite's extended result code or by
// PostgreSQL's SQLSTATE (a trigger function's RAISE EXCEPTION is P0001).
func isConstraint(err error) bool {
	switch pgCode(err) {
	case pgUniqueViolation, pgForeignKeyViolation, pgCheckViolation, pgNotNullViolation, pgRaiseException:
		return true
	}
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_ROWID,
		sqlite3.SQLITE_CONSTRAINT_CHECK, sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY, sqlite3.SQLITE_CONSTRAINT_NOTNULL,
		sqlite3.SQLITE_CONSTRAINT_DATATYPE, sqlite3.SQLITE_CONSTRAINT_TRIGGER:
		return true
	}
	return false
}
