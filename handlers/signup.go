package handlers

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"admit/store"
	"admit/views"

	"github.com/google/uuid"
)

// signupForm is the public signup, from the HTML form or the JSON API.
type signupForm struct {
	RequestKey    string
	Email         string
	NoticeVersion int
	Permission    bool
	// Honeypot is a field people never see; bots fill it.
	Honeypot string
	// Case is the answer to the question about capitals in the address:
	// "keep", "lower", or "" when not asked yet.
	Case string
	// Domain is the answer to "did you mean …?": "keep", "suggested", or
	// "" when not asked yet.
	Domain string
}

// admit runs the one admission path shared by the form and the JSON API:
// the form's honeypot, then the store's Signup, which checks every field
// (its refusal names the field at fault: store.InvalidSignupField), counts
// the network's hourly attempt and admits, in one transaction.
func (s *Server) admit(r *http.Request, slug string, f *signupForm) (*store.SignupResult, error) {
	if err := store.CheckHoneypot(f.Honeypot); err != nil {
		s.db.ObserveInvalidSignup()
		return nil, err
	}
	network := s.clientNetwork(r)
	return s.db.Signup(r.Context(), store.SignupRequest{Slug: slug, RequestKey: f.RequestKey, Email: f.Email,
		NoticeVersion: f.NoticeVersion, Permission: f.Permission,
		Attempts: &store.AttemptLimit{Max: s.opts.NetworkHourlyLimit, Key: func(hour time.Time) []byte {
			return s.counterKey("signup", hour, network)
		}}})
}

// removalURL is the private removal link for a token: the token rides in
// the fragment, which browsers never send to the server.
func (s *Server) removalURL(token string) string {
	return s.origin + "/manage/#" + token
}

// waitlistView loads the program and its current notice for the page.
func (s *Server) waitlistView(r *http.Request, slug string) (*views.WaitlistView, error) {
	p, n, err := s.db.PublicProgram(r.Context(), slug)
	if err != nil {
		return nil, err
	}
	return &views.WaitlistView{
		Slug: p.Slug, Name: p.Name, Purpose: p.Purpose, Open: p.SignupOpen && p.RetiredAt == nil, Retired: p.RetiredAt != nil,
		Full:          p.QueueFull(),
		WorkspaceName: p.WorkspaceName, Contact: p.WorkspaceContact,
		Notice: views.NoticeView{Version: n.Version, Purpose: n.Purpose, ContactText: n.ContactText,
			RetentionText: n.RetentionText, PublishedAt: n.PublishedAt},
		RequestKey:   newSignupKey(),
		KnownDomains: strings.Join(wellKnownDomains, " "),
	}, nil
}

// newSignupKey is the request key a signup form carries: a time-ordered
// UUID (version 7), so that the receipts of form signups, keyed by it, are
// written next to each other at the end of their index instead of on a
// random page each (docs/PERFORMANCE.md#signup-events-written-together). It
// tells nothing but when the form was served, to the person it was served
// to; the receipt keeps its own time anyway.
func newSignupKey() string { return uuid.Must(uuid.NewV7()).String() }

// handleWaitlist shows a program's notice and signup form.
func (s *Server) handleWaitlist(w http.ResponseWriter, r *http.Request) error {
	v, err := s.waitlistView(r, r.PathValue("slug"))
	if err != nil {
		return err
	}
	// The form carries a fresh request key: never cache it.
	noStore(w)
	r, own, err := s.ownEntryHere(r, v.Slug)
	if err != nil {
		return err
	}
	v.Own = own
	c := s.chrome(r, v.Name)
	return s.render(w, r, http.StatusOK, c, views.Waitlist(c, *v))
}

// ownEntryHere finds the signed-in visitor's own entry in the program at
// slug, matched by their verified addresses, fetched fresh from the
// identity provider (and kept in the returned request for the page's
// shell). An anonymous visitor, a provider that cannot be reached, or no
// entry gives nil: the page is then the same as for anyone
// (docs/signup.md#a-signed-in-applicant). It concerns only the visitor's
// own session: the public signup answers do not change.
func (s *Server) ownEntryHere(r *http.Request, slug string) (*http.Request, *views.MyEntry, error) {
	p, err := s.id.Authenticate(r)
	if err != nil {
		return r, nil, nil
	}
	ctx := r.Context()
	emails, unverified, err := s.addresses(ctx, p)
	if err != nil {
		return r, nil, nil
	}
	ctx = context.WithValue(ctx, principalKey, p)
	ctx = context.WithValue(ctx, emailsKey, emails)
	ctx = context.WithValue(ctx, unverifiedKey, unverified)
	r = r.WithContext(ctx)
	if len(emails) == 0 {
		return r, nil, nil
	}
	e, err := s.db.OwnEntry(ctx, slug, emails)
	if store.ErrorCode(err) == store.ENOTFOUND {
		return r, nil, nil
	}
	if err != nil {
		return r, nil, err
	}
	own := myEntry(*e, s.db.Now())
	return r, &own, nil
}

// readSignupForm reads the no-JavaScript signup form. The form is returned
// whatever the error, for the page to show again.
func readSignupForm(r *http.Request) (*signupForm, error) {
	f, err := readForm(r)
	if err != nil {
		return &signupForm{}, err
	}
	form := &signupForm{RequestKey: strings.TrimSpace(f.get("requestKey")), Email: f.get("email"),
		Honeypot: f.get("website"), Permission: f.get("permission") == "yes", Case: f.get("case"), Domain: f.get("domain")}
	if n, err := strconv.Atoi(f.get("noticeVersion")); err == nil {
		form.NoticeVersion = n
	}
	return form, f.err
}

// handleWaitlistPost is the no-JavaScript signup form. Its body was read,
// and its in-progress place taken, by the intake (admission.Intake).
func (s *Server) handleWaitlistPost(w http.ResponseWriter, r *http.Request) error {
	slug := r.PathValue("slug")
	f, err := readSignupForm(r)
	submittedEmail := f.Email
	failed := func(err error) error {
		return s.signupFailed(w, r, slug, f, submittedEmail, err)
	}
	if err != nil {
		return failed(err)
	}
	noStore(w)
	// rule (docs/signup.md#capital-letters): an address with capitals
	// before the @ is asked about once; the answer keeps it or uses small
	// letters, and the contract's exact spelling holds either way. A
	// likely mistyped well-known domain is asked about in the same round
	// (docs/signup.md#typing-hints): a hint, never a change unasked.
	if caseQ, domainQ := questionsToAsk(f); caseQ != nil || domainQ != nil {
		return s.askBeforeJoining(w, r, slug, f, caseQ, domainQ)
	}
	if f.Domain == "suggested" {
		if fixed := suggestedAddress(f.Email); fixed != "" {
			f.Email = fixed
		}
	}
	if f.Case == "lower" {
		f.Email = LowerLocalPart(f.Email)
	}
	submittedEmail = f.Email
	res, err := s.admit(r, slug, f)
	if err != nil {
		return failed(err)
	}

	st := receivedState{Slug: slug, NoticeVersion: f.NoticeVersion, Token: res.RemovalToken}
	if wantsPage(r) {
		// The received page names the address as admitted; it rides in the
		// sealed cookie with the token, never in a URL or a log.
		if norm, err := store.NormalizeEmail(f.Email); err == nil {
			st.Email = norm
		}
		// rule (docs/API.md#html-routes): a browser's post is answered
		// 303 to the page that shows it, so reloading never posts again;
		// the token goes there sealed in a cookie, never in the URL.
		s.cookieState(r).keepReceived(st)
		http.Redirect(w, r, receivedPath(slug), http.StatusSeeOther)
		return nil
	}
	// The page quotes the notice the person agreed to, which a replay may
	// show after a newer one was published.
	q, err := s.quote(r.Context(), slug, f.NoticeVersion)
	if err != nil {
		return err
	}
	c := s.chrome(r, "Request received · "+q.Name)
	return s.render(w, r, http.StatusAccepted, c, views.Received(c, s.receivedView(q, st)))
}

// signupFailed shows the signup form again after a refusal (400, 409,
// 429, or 503 when admit is too busy to take it or its disk is full) with
// the submitted address and one message in its place. Anything else goes
// to the error adapter.
func (s *Server) signupFailed(w http.ResponseWriter, r *http.Request, slug string, f *signupForm, submittedEmail string, err error) error {
	status, _, message := classify(err)
	noSpace := answerNoSpace(w, err)
	if noSpace {
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "route", r.Pattern, "err", err)
	}
	busy := answerBusy(w, err) || noSpace
	switch {
	case unreadableBody(err):
		return err
	case status == http.StatusBadRequest, status == http.StatusConflict, status == http.StatusTooManyRequests, busy:
	default:
		return err
	}
	noStore(w)
	v, lerr := s.waitlistView(r, slug)
	if lerr != nil {
		return lerr
	}
	v.Email, v.Permission = submittedEmail, f.Permission
	switch field := store.InvalidSignupField(err); {
	case status == http.StatusBadRequest && field == store.SignupFieldEmail:
		v.EmailError = message
		// Every field's error at once: the choice is judged too, so the
		// person fixes both in one go.
		if perr := store.CheckPermission(f.Permission); perr != nil {
			v.PermissionError = store.ErrorMessage(perr)
		}
	case status == http.StatusBadRequest && field == store.SignupFieldPermission:
		v.PermissionError = message
	case status == http.StatusTooManyRequests:
		v.Message = s.signupLimitMessage(w, err)
		// The refusal decides: the page read after it may already differ.
		v.Full = errors.Is(err, store.ErrQueueFull)
	default:
		v.Message = message
	}
	if status == http.StatusBadRequest || busy {
		// Nothing was stored: the same key may be submitted again.
		if _, perr := uuid.Parse(f.RequestKey); perr == nil {
			v.RequestKey = f.RequestKey
		}
	}
	// 409 and 429 get the fresh key waitlistView made.
	c := s.chrome(r, v.Name)
	return s.render(w, r, status, c, views.Waitlist(c, *v))
}

// questionsToAsk are the questions for a form not yet answered whose
// other fields pass (the address normalizes, the choice is ticked, the
// honeypot is empty): about
// capitals before the @, and about a domain that looks like a mistyped
// well-known one. nil asks nothing.
func questionsToAsk(f *signupForm) (*views.CaseAsk, *views.DomainAsk) {
	// A filled honeypot is refused as before, never asked a question.
	if store.CheckPermission(f.Permission) != nil || store.CheckHoneypot(f.Honeypot) != nil {
		return nil, nil
	}
	norm, err := store.NormalizeEmail(f.Email)
	if err != nil {
		return nil, nil
	}
	var caseQ *views.CaseAsk
	var domainQ *views.DomainAsk
	if lower := LowerLocalPart(norm); f.Case == "" && lower != norm {
		caseQ = &views.CaseAsk{Typed: norm, Lower: lower}
	}
	if fixed := suggestedAddress(norm); f.Domain == "" && fixed != "" {
		domainQ = &views.DomainAsk{Typed: norm, Suggested: fixed}
	}
	return caseQ, domainQ
}

// LowerLocalPart writes the ASCII letters before the last @ in small
// letters; the domain is left as it is (the store lowers it).
func LowerLocalPart(email string) string {
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return email
	}
	return strings.ToLower(email[:at]) + email[at:]
}

// askBeforeJoining shows the form again with its questions, keeping what
// was typed and the request key: nothing was stored or counted.
func (s *Server) askBeforeJoining(w http.ResponseWriter, r *http.Request, slug string, f *signupForm, caseQ *views.CaseAsk, domainQ *views.DomainAsk) error {
	v, err := s.waitlistView(r, slug)
	if err != nil {
		return err
	}
	v.Email, v.Permission, v.CaseAsk, v.DomainAsk = f.Email, f.Permission, caseQ, domainQ
	if _, perr := uuid.Parse(f.RequestKey); perr == nil {
		v.RequestKey = f.RequestKey
	}
	c := s.chrome(r, v.Name)
	return s.render(w, r, http.StatusOK, c, views.Waitlist(c, *v))
}
