package handlers

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gorilla/securecookie"
	"github.com/gorilla/sessions"
)

// stateCookie is the name of admit's own signed and encrypted cookie. It
// holds every field of the cookie state except the received signup; the
// identity lives in the provider's session (and, for OpenID Connect and
// development sign-in, admit's server-side sessions in the store).
const stateCookie = "admit_session"

// cookieState is what admit's own cookies hold for one browser, typed: not
// a session (a sign-in lives with the identity), only what a browser
// carries between pages. A request reads it when a handler first asks
// (Server.cookieState), handlers
// read and set its fields, and withCookieState writes it back once, before the
// answer's headers leave, only if it changed
// (docs/ARCHITECTURE.md#a-request-start-to-finish). No handler saves it.
type cookieState struct {
	// CSRFSecret is what this browser's CSRF tokens are minted from
	// (secure.CSRF); a new identity gets a new one.
	CSRFSecret string
	// Who caches the address the navigation shows for one provider
	// session: looked up once per provider session rather than from the
	// identity provider on every page.
	Who whoLine
	// Code holds a new invitation's code until the one page that shows it;
	// CodeShown then holds that invitation's ID until the owner's next
	// page elsewhere (leaveCodePage).
	Code      heldCode
	CodeShown string
	// Note is the confirmation the next whole page's shell shows, whatever
	// page a redirect leads to (sign-out, withdrawal, redemption); Flash is
	// the one the owner pages show. Both are fixed sentences, with counts
	// or a program's name at most, never personal data.
	Note, Flash string
	// Received is a browser's accepted signup on its way from its POST to
	// the page that shows it. It rides in a cookie of its own,
	// receivedCookie, scoped to the waitlist pages and minutes long
	// (docs/API.md#the-signup-form-in-a-browser).
	Received receipt
	// unreadable is set when the browser sent an admit_session cookie that
	// does not decode (old keys, tampering): read as empty, rewritten
	// only when the cookie state changes — or on sign-out, which clears it.
	unreadable bool
}

// whoLine is the address shown for one provider session, and whether the
// provider had not verified it when it was looked up.
type whoLine struct {
	ProviderSession, Address string
	Unverified               bool
}

// heldCode is a new invitation's code and the invitation it belongs to.
type heldCode struct{ InvitationID, Code string }

// receipt is the received-signup cookie: Held when the browser sent one,
// readable or not (it is cleared either way), and what it said.
type receipt struct {
	Held  bool
	State receivedState
}

// csrfSecret returns the browser's CSRF secret, making one on first need.
func (s *cookieState) csrfSecret() string {
	if s.CSRFSecret == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			panic(err)
		}
		s.CSRFSecret = base64.RawURLEncoding.EncodeToString(b)
	}
	return s.CSRFSecret
}

// newIdentity forgets what belonged to the identity before: a new identity
// gets a new CSRF secret and shows its own address.
func (s *cookieState) newIdentity() { s.CSRFSecret, s.Who = "", whoLine{} }

// signOut starts the cookie state over empty: no CSRF secret, no address, no
// code, no confirmation, and a cookie that could not be read is replaced.
// The received signup, in its own cookie, stays.
func (s *cookieState) signOut() { *s = cookieState{Received: s.Received} }

// takeNote returns the pending confirmation, if any, and forgets it.
func (s *cookieState) takeNote() string {
	n := s.Note
	s.Note = ""
	return n
}

// takeFlash returns the owner pages' pending confirmation and forgets it.
func (s *cookieState) takeFlash() string {
	f := s.Flash
	s.Flash = ""
	return f
}

// takeCode returns the invitation's code if the cookie state still holds it,
// and forgets it: a code is shown exactly once. The invitation is then
// marked as the one whose code was shown.
func (s *cookieState) takeCode(invitationID string) string {
	if s.Code.Code == "" || s.Code.InvitationID != invitationID {
		return ""
	}
	code := s.Code.Code
	s.Code, s.CodeShown = heldCode{}, invitationID
	return code
}

// leaveCodePage runs on every signed-in page (invitationID is the page's
// own, or "") and forgets the shown code's mark unless this is that code's
// page. rule: a browser may keep a
// no-store page in its back-forward cache and show it again on Back —
// unless a cookie of the site changed meanwhile — so this change makes Back
// load the code page anew, and it then says the code was shown
// (docs/console.md#invitation-codes).
func (s *cookieState) leaveCodePage(invitationID string) {
	if s.CodeShown != "" && s.CodeShown != invitationID {
		s.CodeShown = ""
	}
}

// keepReceived holds a browser's accepted signup for the page that shows it.
func (s *cookieState) keepReceived(st receivedState) { s.Received = receipt{Held: true, State: st} }

// takeReceived returns the accepted signup for slug and clears it whatever
// it held — one GET, one showing. ok is false when there is none (already
// shown, expired, unreadable, or another program's).
func (s *cookieState) takeReceived(slug string) (st receivedState, ok bool) {
	held := s.Received
	s.Received = receipt{}
	if !held.Held || held.State.Slug == "" || held.State.Slug != slug {
		return receivedState{}, false
	}
	return held.State, true
}

// cookieStateWire is admit_session's plaintext (JSON, then signed and
// encrypted): the keys and shapes of the gorilla/sessions values it was
// before it was typed, so a cookie written then still reads. Keys
// are in alphabetical order, as a JSON map's were.
type cookieStateWire struct {
	Flashes    []string `json:"_flash,omitempty"`
	CodeShown  string   `json:"codeShown,omitempty"`
	CSRF       string   `json:"csrf,omitempty"`
	IssuedCode string   `json:"issuedCode,omitempty"` // "<invitation ID> <code>"
	Notes      []string `json:"note,omitempty"`
	Who        string   `json:"who,omitempty"` // "<provider session ID> <address>[ unverified]"
}

// receivedWire is admit_received's plaintext: the receivedState as JSON
// text under "signup", as before the cookie state was typed.
type receivedWire struct {
	Signup string `json:"signup"`
}

func (s cookieState) wire() cookieStateWire {
	w := cookieStateWire{CodeShown: s.CodeShown, CSRF: s.CSRFSecret}
	if s.Flash != "" {
		w.Flashes = []string{s.Flash}
	}
	if s.Note != "" {
		w.Notes = []string{s.Note}
	}
	if s.Code != (heldCode{}) {
		w.IssuedCode = s.Code.InvitationID + " " + s.Code.Code
	}
	if s.Who != (whoLine{}) {
		w.Who = s.Who.ProviderSession + " " + s.Who.Address
		if s.Who.Unverified {
			w.Who += " unverified"
		}
	}
	return w
}

func (w cookieStateWire) state() cookieState {
	s := cookieState{CSRFSecret: w.CSRF, CodeShown: w.CodeShown, Flash: last(w.Flashes), Note: last(w.Notes)}
	if id, code, ok := strings.Cut(w.IssuedCode, " "); ok {
		s.Code = heldCode{InvitationID: id, Code: code}
	}
	if sid, rest, ok := strings.Cut(w.Who, " "); ok {
		addr, mark, _ := strings.Cut(rest, " ")
		s.Who = whoLine{ProviderSession: sid, Address: addr, Unverified: mark == "unverified"}
	}
	return s
}

// last is the latest of a list of confirmations: the one shown.
func last(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return l[len(l)-1]
}

// requestCookieState is one request's cookie state: read at the first ask, and
// what was read, to tell whether it changed.
type requestCookieState struct {
	loaded   bool
	now, was cookieState
}

// cookieStateKey is the request context's key of its *requestCookieState.
type cookieStateKey struct{}

// cookieState returns this request's cookie state, reading its cookies the first
// time it is asked for: a request that never asks reads none. Outside
// withCookieState (the panic page) it is a copy nothing saves.
func (s *Server) cookieState(r *http.Request) *cookieState {
	rs, ok := r.Context().Value(cookieStateKey{}).(*requestCookieState)
	if !ok {
		cs := s.readCookieState(r)
		return &cs
	}
	if !rs.loaded {
		rs.was, rs.loaded = s.readCookieState(r), true
		rs.now = rs.was
	}
	return &rs.now
}

// readCookieState reads both of admit's cookies. A cookie that fails to decode
// (old keys, tampering) starts an empty cookie state.
func (s *Server) readCookieState(r *http.Request) cookieState {
	var cs cookieState
	if c, err := r.Cookie(stateCookie); err == nil && c.Value != "" {
		var w cookieStateWire
		if securecookie.DecodeMulti(stateCookie, c.Value, &w, s.cookieStore.Codecs...) == nil {
			cs = w.state()
		} else {
			cs.unreadable = true
		}
	}
	if c, err := r.Cookie(receivedCookie); err == nil && c.Value != "" {
		cs.Received.Held = true
		var w receivedWire
		if securecookie.DecodeMulti(receivedCookie, c.Value, &w, s.cookieStore.Codecs...) == nil {
			if json.Unmarshal([]byte(w.Signup), &cs.Received.State) != nil {
				cs.Received.State = receivedState{}
			}
		}
	}
	return cs
}

// cookieStateCookies are the Set-Cookie values of what changed in rs: none
// when nothing did. Nothing is returned unless every changed cookie was
// encoded.
func (s *Server) cookieStateCookies(rs *requestCookieState) ([]*http.Cookie, error) {
	if !rs.loaded {
		return nil, nil
	}
	var out []*http.Cookie
	now, was := rs.now, rs.was
	now.Received, was.Received = receipt{}, receipt{}
	if now != was {
		v, err := securecookie.EncodeMulti(stateCookie, now.wire(), s.cookieStore.Codecs...)
		if err != nil {
			return nil, err
		}
		out = append(out, sessions.NewCookie(stateCookie, v, s.cookieStore.Options))
	}
	if rs.now.Received != rs.was.Received {
		c, err := s.receivedSetCookie(rs.now.Received)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// receivedSetCookie writes the received signup, or clears its cookie.
func (s *Server) receivedSetCookie(rc receipt) (*http.Cookie, error) {
	opts := *s.cookieStore.Options
	opts.Path = "/waitlist/"
	if !rc.Held {
		opts.MaxAge = -1
		return sessions.NewCookie(receivedCookie, "", &opts), nil
	}
	b, err := json.Marshal(rc.State)
	if err != nil {
		return nil, err
	}
	v, err := securecookie.EncodeMulti(receivedCookie, receivedWire{Signup: string(b)}, s.cookieStore.Codecs...)
	if err != nil {
		return nil, err
	}
	opts.MaxAge = receivedLifetime
	return sessions.NewCookie(receivedCookie, v, &opts), nil
}
