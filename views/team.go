package views

import "time"

// TeamView is a workspace's Team page: its owners, the places added by
// address that wait for a sign-in, and the form that adds one.
type TeamView struct {
	WorkspaceID   string
	WorkspaceName string
	Members       []TeamRow
	Waiting       []TeamWaitingRow
	Form          TeamAddForm
	Flash         string
}

// TeamRow is one owner membership.
type TeamRow struct {
	ID     string
	Name   string
	Email  string
	Added  time.Time
	Active bool
	You    bool
	// LastActive is the owner's last recorded action, nil for none.
	LastActive *time.Time
	// CanRemove is false for a removed owner and for the last current one.
	CanRemove bool
}

// Label is how the team names the owner: the name, else the address, else
// "Owner" and the end of the membership ID (as history does).
func (r TeamRow) Label() string {
	switch {
	case r.Name != "":
		return r.Name
	case r.Email != "":
		return r.Email
	case len(r.ID) >= 4:
		return "Owner " + r.ID[len(r.ID)-4:]
	}
	return "Owner"
}

// TeamWaitingRow is an owner added by address who has not signed in yet.
type TeamWaitingRow struct {
	Email   string
	Name    string
	Expires time.Time
}

// TeamAddForm adds an owner by address.
type TeamAddForm struct {
	Email, Name string
	Error       string
	// Field is the input Error is about ("email" or "name").
	Field string
}

// TeamRemoveView asks before removing an owner.
type TeamRemoveView struct {
	WorkspaceID string
	Member      TeamRow
	Error       string
}

// boolText is "true" or "false", for data attributes.
func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
