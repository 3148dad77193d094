package views

import (
	"strconv"
	"strings"
	"time"

	"admit/store"

	"github.com/a-h/templ"
)

// OwnerWorkspace is a workspace the owner may create programs in.
type OwnerWorkspace struct {
	ID          string
	Name        string
	DisplayName string
}

// WorkspaceForm is the workspace settings form and its submitted values.
type WorkspaceForm struct {
	DisplayName string
	Contact     string
	Error       string
	// Field is the input the error is about: displayName or contact.
	Field string
}

// WorkspaceView is a workspace's settings page.
type WorkspaceView struct {
	ID   string
	Name string
	// Saved are the values in force; Form what the form shows.
	SavedDisplayName string
	SavedContact     string
	Form             WorkspaceForm
	Flash            string
}

// StateCount is how many entries of a program are in one state.
type StateCount struct {
	State string
	N     int
}

// ProgramForm is the create-program form and its submitted values. Numbers
// stay text so that what the owner typed is shown again exactly.
type ProgramForm struct {
	WorkspaceID       string
	Slug              string
	Name              string
	Purpose           string
	QueueCap          string
	HourlyCap         string
	SeatCap           string
	MaxInvitationDays string
	Error             string
	// Field is the input the error is about, by its form name.
	Field string
}

// ProgramSummary is what every owner page shows about a program.
type ProgramSummary struct {
	ID                   string
	Slug                 string
	Name                 string
	Purpose              string
	SignupOpen           bool
	AccessEnabled        bool
	Retired              bool
	RetiredAt            *time.Time
	EntriesErasedBy      *time.Time
	HasContent           bool
	QueueCap             int
	HourlyCap            int
	SeatCap              int
	MaxInvitationDays    int
	Occupied             int
	Revision             int64
	CurrentNoticeVersion int
	CreatedAt            time.Time
	// Retirement is how far a retired program's bookkeeping has gone.
	Retirement RetirementView
	// Limits is which of the signup limits refuses signups right now.
	Limits SignupLimits
	// WorkspaceName is the display name of the program's workspace.
	WorkspaceName string
}

// SignupLimits says which of a program's caps refuses signups now: the
// queue's every place taken, or this UTC hour's intake used up until
// IntakeUntil (zero when it is not).
type SignupLimits struct {
	QueueFull   bool
	IntakeUntil time.Time
}

// Refusing reports whether a cap refuses every signup right now.
func (l SignupLimits) Refusing() bool { return l.QueueFull || !l.IntakeUntil.IsZero() }

// SettingsForm is the program settings form, checked against the program's
// revision when it was loaded.
type SettingsForm struct {
	ExpectedRevision string
	Name             string
	SignupOpen       bool
	AccessEnabled    bool
	QueueCap         string
	HourlyCap        string
	SeatCap          string
	Error            string
	// Field is the input the error is about, by its form name ("seatCap"),
	// or "" for the form as a whole.
	Field string
}

// NoticeForm publishes the next notice version.
type NoticeForm struct {
	Purpose       string
	ContactText   string
	RetentionText string
	Error         string
	// Field is the input the error is about, by its form name.
	Field string
}

// ContentForm edits the private content against its revision.
type ContentForm struct {
	ExpectedRevision string
	Body             string
	// Conflict shows the saved text beside the unsaved draft after a
	// revision conflict, so the owner can compare before saving again.
	Conflict      bool
	Saved         string
	SavedRevision int64
	Error         string
}

// AssetRow is an uploaded private asset.
type AssetRow struct {
	Name        string
	ContentType string
	Size        int
	CreatedAt   time.Time
}

// ProgramPageView is a program's settings page.
type ProgramPageView struct {
	Program  ProgramSummary
	Counts   []StateCount
	Glance   GlanceView
	Notices  []NoticeView
	Settings SettingsForm
	// SavedSettings are the settings in force; after a refused save the
	// form marks each field that differs from them as not saved.
	SavedSettings SettingsForm
	Notice        NoticeForm
	Content       ContentForm
	Assets        []AssetRow
	// AssetAccept is the upload input's accept list; AssetMaxMiB its size bound.
	AssetAccept string
	AssetMaxMiB int
	AssetError  string
	Flash       string
	// Retention says how long a retired program's entries keep their email.
	RetiredRetention string
	// Section is the console section shown: SectionOverview,
	// SectionContent or SectionSettings (docs/console.md#sections).
	Section string
	// Checklist is the overview's go-live checklist.
	Checklist []ChecklistItem
}

// The program page's console sections.
const (
	SectionOverview = "overview"
	SectionContent  = "content"
	SectionSettings = "settings"
)

// ChecklistItem is one step before a program goes live: whether it is
// done, and a link to where it is done.
type ChecklistItem struct {
	Label string
	Done  bool
	// Detail says how it stands now.
	Detail string
	URL    string
}

// QueueFilterView is the queue's filter as the owner typed it.
type QueueFilterView struct {
	State string
	// Q is the search: a whole address or the start of its local part.
	Q string
	// From and To are UTC dates (YYYY-MM-DD), both inclusive.
	From  string
	To    string
	Limit string
}

// QueueRow is one entry in the queue table.
type QueueRow struct {
	ID            string
	Email         string
	State         string
	CreatedAt     time.Time
	NoticeVersion int
	// SendNotRecorded says the entry's code was issued but its send not
	// recorded: it cannot be redeemed until the owner records it.
	SendNotRecorded bool
}

// Choosable reports whether a bulk action can take the entry: selecting
// needs a waiting entry, declining a waiting or selected one.
func (r QueueRow) Choosable() bool {
	return r.State == store.StateWaiting || r.State == store.StateSelected
}

// QueueTab is one state filter above the queue, with its count.
type QueueTab struct {
	// State is "" for every state.
	State   string
	Label   string
	N       int
	URL     string
	Current bool
}

// QueueView is a page of a program's queue.
type QueueView struct {
	Program ProgramSummary
	Counts  []StateCount
	Filter  QueueFilterView
	States  []string
	Entries []QueueRow
	// SelfURL is this page (filters and position); forms return to it.
	SelfURL string
	// NextURL is the next page, "" on the last; PrevURL the page before,
	// and FirstURL the first page with the same filters, both "" when this
	// is the first.
	NextURL  string
	PrevURL  string
	FirstURL string
	// Tabs filter by state; ClearURL drops every filter.
	Tabs     []QueueTab
	ClearURL string
	// ChooseAllURL is this page with every entry chosen (for a browser
	// without JavaScript; with it, a checkbox chooses them in place).
	ChooseAllURL   string
	SelectReasons  []string
	DeclineReasons []string
	// Checked, Reason and DeclineReason echo a bulk action that failed, or
	// every choosable entry when the owner chose them all.
	Checked       map[string]bool
	Reason        string
	DeclineReason string
	Flash         string
	Error         string
	// ErrorField is the element id Error is about, "" for the results.
	ErrorField string
	// SearchError is why the search was refused, shown beside the box;
	// the page then lists no entries.
	SearchError string
}

// CanIssue reports whether any entry on the page is selected, in a
// program that is not retired: the queue then offers to invite them.
func (v QueueView) CanIssue() bool {
	if v.Program.Retired {
		return false
	}
	for _, e := range v.Entries {
		if e.State == store.StateSelected {
			return true
		}
	}
	return false
}

// CanSelect reports whether any entry on the page is waiting, in a
// program that is not retired.
func (v QueueView) CanSelect() bool {
	if v.Program.Retired {
		return false
	}
	for _, e := range v.Entries {
		if e.State == store.StateWaiting {
			return true
		}
	}
	return false
}

// CanDecline reports whether any entry on the page can be declined, in a
// program that is not retired.
func (v QueueView) CanDecline() bool {
	if v.Program.Retired {
		return false
	}
	for _, e := range v.Entries {
		if e.Choosable() {
			return true
		}
	}
	return false
}

// EntryRow is one entry as its detail page shows it.
type EntryRow struct {
	ID            string
	Email         string
	State         string
	NoticeVersion int
	PermissionAt  time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	EraseAfter    *time.Time
}

// InvitationRow is one invitation of an entry (never its code).
type InvitationRow struct {
	ID                 string
	State              string
	IssuedAt           time.Time
	ExpiresAt          time.Time
	DeliveryRecordedAt *time.Time
	Channel            string
	Reference          string
}

// GrantRow is a recipient's access.
type GrantRow struct {
	ID        string
	Active    bool
	GrantedAt time.Time
	RevokedAt *time.Time
}

// EventRow is one audit event.
type EventRow struct {
	ID        int64
	Type      string
	ActorKind string
	EntryID   string
	// EntryEmail is the entry's address while it keeps one, where known.
	EntryEmail string
	At         time.Time
	// Details are the stored codes and IDs, in the event type's struct;
	// eventDetailText says them.
	Details store.EventDetails
	// ActorID, ActorName and ActorFormer are an owner event's actor as the
	// team knows them now (store.Event).
	ActorID     string
	ActorName   string
	ActorFormer bool
}

// IssueForm issues an invitation code. The code expires at Time (UTC, the
// time of day the page was loaded) on the chosen date, so that submitting
// the same form twice binds to the same request.
type IssueForm struct {
	RequestKey string
	ExpiresOn  string
	Time       string
	MinDate    string
	MaxDate    string
	Error      string
}

// DeliveryForm records the owner's claim that they sent a code.
type DeliveryForm struct {
	InvitationID string
	RequestKey   string
	Channel      string
	Reference    string
	// Error is about the form as a whole; ChannelError and ReferenceError
	// are shown beside their fields.
	Error          string
	ChannelError   string
	ReferenceError string
}

// channelLabels name each delivery channel code for people.
var channelLabels = map[string]string{
	store.ChannelEmail:    "Email",
	store.ChannelSMS:      "Text message (SMS)",
	store.ChannelChat:     "Chat or messaging app",
	store.ChannelInPerson: "In person",
	store.ChannelOther:    "Other",
}

// ChannelList names every delivery channel, in the form's order.
func ChannelList() string {
	labels := make([]string, len(store.DeliveryChannels))
	for i, code := range store.DeliveryChannels {
		labels[i] = ChannelLabel(code)
	}
	return strings.Join(labels[:len(labels)-1], ", ") + " or " + labels[len(labels)-1]
}

// ChannelLabel names a delivery channel code for people.
func ChannelLabel(code string) string {
	if l, ok := channelLabels[code]; ok {
		return l
	}
	return code
}

// EntryPageView is an entry's detail page.
type EntryPageView struct {
	Program        ProgramSummary
	Entry          EntryRow
	Notice         NoticeView
	Invitations    []InvitationRow
	Grant          *GrantRow
	Events         []EventRow
	SelectReasons  []string
	DeclineReasons []string
	// What the entry's state allows.
	CanSelect   bool
	CanDecline  bool
	CanWithdraw bool
	CanIssue    bool
	Issue       IssueForm
	// Seats is how the program's seats stand, shown before issuing.
	Seats store.SeatUse
	// Delivery is shown for the live invitation that has no record yet.
	Delivery    *DeliveryForm
	ActionError string
	// ActionField is the element id ActionError is about, "" for none.
	ActionField string
	Reason      string
	Flash       string
	// PrevURL and NextURL are the entries just before and after this one
	// in the queue's join order, "" at either end.
	PrevURL, NextURL string
	// CaseTwins are the program's other entries whose address differs from
	// this one only in letter case before the @.
	CaseTwins []CaseTwinRow
}

// CaseTwinRow links to another entry whose address differs only in case.
type CaseTwinRow struct {
	ID, Email, State string
}

// IssuedView shows a new invitation code, once.
type IssuedView struct {
	Program    ProgramSummary
	EntryID    string
	EntryEmail string
	Invitation InvitationRow
	// Code is empty once it has been shown: it is never shown again.
	Code string
	// RedeemURL is where the recipient enters the code.
	RedeemURL string
	Delivery  DeliveryForm
}

// Message is a message the owner can send with the code, in their own
// channel: where to go, which address to sign in with, the code and
// when it expires.
func (v IssuedView) Message() string {
	return "Hello,\n\n" +
		v.Program.invitation() + " To accept:\n\n" +
		"1. Open " + v.RedeemURL + "\n" +
		"2. Sign in with this email address: " + emailOrErased(v.EntryEmail) + "\n" +
		"3. Enter this code: " + v.Code + "\n\n" +
		"The code works once and expires on " + When(v.Invitation.ExpiresAt) + ". " +
		"If you did not expect this message, you can ignore it.\n"
}

// invitation names the program as an invitation does: its name, and who
// runs it when the workspace has a display name.
func (p ProgramSummary) invitation() string {
	name := p.Name
	if name == "" {
		name = p.Slug
	}
	if p.WorkspaceName == "" {
		return "You are invited to the early access of " + name + "."
	}
	return p.WorkspaceName + " invites you to the early access of " + name + "."
}

// EventsView is a page of a program's audit log.
type EventsView struct {
	Program  ProgramSummary
	Events   []EventRow
	NextURL  string
	FirstURL string
	// Filter is what the log shows: an event type and one entry, each
	// optional; EntryLabel names the filtered entry.
	Type       string
	EntryID    string
	EntryLabel string
	// FilterEntry echoes what the owner typed after a failed filter.
	FilterEntry string
	Error       string
	// ClearURL is the unfiltered log, "" when nothing is filtered.
	ClearURL string
}

// OwnerURL builds an owner console path from its segments.
func OwnerURL(parts ...string) string {
	return "/owner/" + strings.Join(parts, "/")
}

func programURL(id string, rest ...string) string {
	return OwnerURL(append([]string{"programs", id}, rest...)...)
}

func entryURL(programID, entryID string, rest ...string) string {
	return programURL(programID, append([]string{"entries", entryID}, rest...)...)
}

// revText formats a revision number.
func revText(n int64) string { return strconv.FormatInt(n, 10) }

// Bytes formats a size for people.
func Bytes(n int) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// emailOrErased shows an erased address as such.
func emailOrErased(email string) string {
	if email == "" {
		return "(erased)"
	}
	return email
}

// selectedIf is the selected attribute's condition for an option.
func selectedIf(value, current string) bool { return value == current }

// reasonLabels are the people-readable names of the reason codes.
var reasonLabels = map[string]string{
	"meets_policy":      "Meets the selection policy",
	"priority_cohort":   "Priority cohort",
	"owner_discretion":  "Owner's discretion",
	"not_eligible":      "Not eligible",
	"capacity":          "No capacity",
	"invalid_request":   "Invalid request",
	"other":             "Other",
	"applicant_request": "The applicant asked to withdraw",
}

func reasonLabel(code string) string {
	if l, ok := reasonLabels[code]; ok {
		return l
	}
	return code
}

// noticeSummary names a notice version in the list of versions.
func noticeSummary(n NoticeView, current bool) string {
	s := "Version " + strconv.Itoa(n.Version)
	if current {
		s += " (current)"
	}
	return s + ", published " + When(n.PublishedAt)
}

// tabID names a state tab for tests: the state, or "all".
func tabID(state string) string {
	if state == "" {
		return "all"
	}
	return state
}

// limitSelected is the page-size option's condition: "" is the default.
func limitSelected(option, current string) bool {
	if current == "" {
		return option == strconv.Itoa(store.DefaultPageSize)
	}
	return option == current
}

// pageSummary describes the page of the queue for its caption.
func pageSummary(v QueueView) string {
	n := len(v.Entries)
	s := strconv.Itoa(n) + " entries"
	if n == 1 {
		s = "1 entry"
	}
	if v.Filter.State != "" {
		s += " " + v.Filter.State
	}
	if v.Filter.Q != "" {
		s += " matching “" + v.Filter.Q + "”"
	}
	switch {
	case v.PrevURL == "" && v.NextURL == "":
		return s + "."
	case v.PrevURL == "":
		return s + " on the first page; more follow."
	case v.NextURL == "":
		return s + " on the last page."
	}
	return s + " on this page; more follow."
}

// queueEmptyScope names the state an empty search was limited to.
func queueEmptyScope(v QueueView) string {
	if v.Filter.State != "" {
		return " among " + v.Filter.State + " entries"
	}
	return ""
}

// EmailOrErased is an entry's address for people, or that it was erased.
func EmailOrErased(email string) string { return emailOrErased(email) }

// programCapMin and programCapMax are the range the owner's forms offer for
// a program's caps: the store's own.
func programCapMin() string { return strconv.Itoa(store.MinProgramCap) }
func programCapMax() string { return strconv.Itoa(store.MaxProgramCap) }

// orField is the input an error summary links to: the one at fault, or
// the form's first.
func orField(field, first string) string {
	if field != "" {
		return field
	}
	return first
}

// settingIDs are the settings form's input ids by form name.
var settingIDs = map[string]string{"name": "program-name", "signupOpen": "signupOpen", "accessEnabled": "accessEnabled",
	"queueCap": "settings-queueCap", "hourlyCap": "settings-hourlyCap", "seatCap": "settings-seatCap"}

// SettingsErrors is the refused settings form's error summary: the message,
// linked to its field, and that nothing of the form was saved.
func (v ProgramPageView) SettingsErrors() []FieldError {
	if v.Settings.Error == "" {
		return nil
	}
	id, ok := settingIDs[v.Settings.Field]
	if !ok {
		id = "program-name"
	}
	return []FieldError{{Field: id, Message: v.Settings.Error},
		{Message: "Nothing in this form was saved. Fields marked “Not saved” differ from the settings in force.", Note: true}}
}

// SettingUnsaved reports whether a refused settings form shows field
// (a form name) with a value other than the saved one.
func (v ProgramPageView) SettingUnsaved(field string) bool {
	if v.Settings.Error == "" {
		return false
	}
	f, saved := v.Settings, v.SavedSettings
	switch field {
	case "name":
		return strings.TrimSpace(f.Name) != saved.Name
	case "signupOpen":
		return f.SignupOpen != saved.SignupOpen
	case "accessEnabled":
		return f.AccessEnabled != saved.AccessEnabled
	case "queueCap":
		return strings.TrimSpace(f.QueueCap) != saved.QueueCap
	case "hourlyCap":
		return strings.TrimSpace(f.HourlyCap) != saved.HourlyCap
	case "seatCap":
		return strings.TrimSpace(f.SeatCap) != saved.SeatCap
	}
	return false
}

// settingAttrs are a settings input's error and description attributes:
// invalid when the error is about it, described by its "Not saved" mark
// and its help.
func (v ProgramPageView) settingAttrs(field string, help ...string) templ.Attributes {
	a := templ.Attributes{}
	ids := help
	if v.SettingUnsaved(field) {
		ids = append([]string{"unsaved-" + field}, help...)
	}
	if len(ids) > 0 {
		a["aria-describedby"] = strings.Join(ids, " ")
	}
	if v.Settings.Error != "" && v.Settings.Field == field {
		a["aria-invalid"] = "true"
	}
	return a
}

// Errors is the record-a-send form's error summary: the message about the
// form, then each field's, linked to it.
func (f DeliveryForm) Errors() []FieldError {
	return fieldErrors(FieldError{Field: "channel", Message: f.Error},
		FieldError{Field: "channel", Message: f.ChannelError}, FieldError{Field: "reference", Message: f.ReferenceError})
}
