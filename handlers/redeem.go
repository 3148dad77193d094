package handlers

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"admit/store"
	"admit/views"
)

// Redemption attempt limits (docs/API.md#redeem: attempts are limited per
// account and per network, and no answer reveals a count). Every
// well-formed redemption that reaches the counters counts, successful or
// not; an attempt refused with 429 is not counted (its counter transaction
// rolls back). The 429 body is the same fixed text whichever limit was hit
// and says no number. A malformed code is
// answered 400 before counting: it cannot match anything.
const (
	// RedeemAccountHourlyLimit bounds redemption attempts per signed-in
	// account per UTC hour.
	RedeemAccountHourlyLimit = 10
	// RedeemNetworkHourlyLimit bounds redemption attempts per client network
	// (an IPv4 address or an IPv6 /64) per UTC hour, across accounts.
	RedeemNetworkHourlyLimit = 30
)

// Counter purposes of the redemption attempt limits; they key separate
// counters from signup's.
const (
	redeemAccountCounter = "redeem-account"
	redeemNetworkCounter = "redeem-network"
)

// codeShapeMessage is the 400 message for a code that is not 43 base64url
// characters (store.CheckCodeShape).
var codeShapeMessage = store.ErrorMessage(store.CheckCodeShape(""))

// redeemDeniedMessage is the form's one message for every failed
// redemption: absent, foreign, unverified, revoked, used, expired or
// withdrawn all read the same. The page adds the address the person is
// signed in with and the list of possible reasons (views.RedeemReasons),
// the same for every failure.
const redeemDeniedMessage = "This code cannot be redeemed"

// codeCaseMessage answers a code of the right length that cannot be one as
// written: a code is 32 random bytes, so its letters mix capitals and small
// letters, and its last character is one of a few. Decided by what was
// typed alone, it says nothing about any invitation.
const codeCaseMessage = "Invitation codes are case-sensitive, and this one has the right length but not a code's mix of capital and small letters. Copy it again exactly as it was sent: pasting is safest."

// errCodeNotActive is the redemption of a live code whose send the owner
// has not recorded yet: the same 404 as every other failure for the JSON
// API (its body is the fixed not-found), its own message on the page.
var errCodeNotActive = &httpError{http.StatusNotFound, "not_found", redeemNotActiveMessage}

// redeemNotActiveMessage tells the holder of a code whose send is not
// recorded to ask the sender. It is decided by the code alone
// (store.ErrCodeNotActive): it says only that the code exists and waits,
// which holding it already proves.
const redeemNotActiveMessage = "This code is not active yet: the person who sent it has not recorded sending it. Ask them to record the send, then enter the code again."

// redeem is the one redemption path shared by the form and the JSON API:
// the code's shape (400), then store.Redeem's single transaction, which
// counts the attempt against the account's and then the network's hourly
// limits (429) and redeems with the verified emails the recipient group
// fetched before it. Every failed redemption is the same generic 404. The
// code is never logged: the request log holds only the route pattern, and
// no error here carries it.
func (s *Server) redeem(r *http.Request, code string) (*store.Redemption, error) {
	if err := store.CheckCodeShape(code); err != nil {
		if codeCaseChanged(code) {
			return nil, &httpError{http.StatusBadRequest, "invalid", codeCaseMessage}
		}
		return nil, err
	}
	if codeCaseChanged(code) {
		return nil, &httpError{http.StatusBadRequest, "invalid", codeCaseMessage}
	}
	ctx := r.Context()
	p := principalFrom(ctx)
	network := s.clientNetwork(r)
	red, err := s.db.Redeem(ctx, p.UserID, emailsFrom(ctx), code,
		store.AttemptLimit{Max: RedeemAccountHourlyLimit, Key: func(hour time.Time) []byte {
			return s.counterKey(redeemAccountCounter, hour, p.UserID)
		}},
		store.AttemptLimit{Max: RedeemNetworkHourlyLimit, Key: func(hour time.Time) []byte {
			return s.counterKey(redeemNetworkCounter, hour, network)
		}})
	if err != nil {
		// docs/API.md#redeem: one generic denial for absent/foreign/unverified/
		// revoked/used/expired codes; a unique conflict never grants and reads the same.
		if errors.Is(err, store.ErrCodeNotActive) {
			return nil, errCodeNotActive
		}
		if c := store.ErrorCode(err); c == store.ENOTFOUND || c == store.ECONFLICT || c == store.EINVALID {
			return nil, errNotFound
		}
		return nil, err
	}
	return red, nil
}

// codeCaseChanged reports whether code has a code's length and alphabet
// but letters of one case only, or a last character no code ends with —
// the marks of a code retyped in other letter case (an upper-cased or
// lower-cased code fails both with near certainty). A code whose 32 random
// bytes give letters of one case only is so rare that refusing it is
// safe.
func codeCaseChanged(code string) bool {
	if len(code) != store.CodeLength {
		return false
	}
	var lower, upper bool
	for i := 0; i < len(code); i++ {
		switch c := code[i]; {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= '0' && c <= '9' || c == '-' || c == '_':
		default:
			return false
		}
	}
	if _, err := store.CodeDigest(code); err != nil {
		return true
	}
	return lower != upper
}

// codeInMessage finds the code in a pasted invitation message: the text as
// typed when it is one word, else the one run of exactly 43 code
// characters in it. More than one such run, or none, leaves the text as it
// was, for the shape check to refuse.
func codeInMessage(text string) string {
	text = strings.TrimSpace(text)
	if !strings.ContainsAny(text, " \t\r\n") && len(text) <= store.CodeLength {
		return text
	}
	found := ""
	for _, run := range strings.FieldsFunc(text, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_')
	}) {
		if len(run) != store.CodeLength || run == found {
			continue
		}
		if found != "" {
			return text
		}
		found = run
	}
	if found == "" {
		return text
	}
	return found
}

// handleRedeem shows the token-free redemption page. It is public: it holds
// no code and no private data. Signed out, it explains and links to sign-in
// with a return to this page; signed in, it shows the form.
func (s *Server) handleRedeem(w http.ResponseWriter, r *http.Request) error {
	noStore(w) // the form carries the sign-in's CSRF token
	c := s.chrome(r, "Redeem an invitation code")
	return s.render(w, r, http.StatusOK, c, views.Redeem(c, views.RedeemView{SignInURL: signInURL("/redeem")}))
}

// handleRedeemPost redeems a code from the form and, on success, sends the
// recipient to the program's private page (303). A malformed code (400), a
// failed redemption (404) and a rate limit (429) show the form again with
// one message per status; the submitted code is never echoed back.
func (s *Server) handleRedeemPost(w http.ResponseWriter, r *http.Request) error {
	in, err := readRedeemForm(r)
	if err != nil {
		return err
	}
	red, err := s.redeem(r, in.Code)
	if err != nil {
		status, _, message := classify(err)
		c := s.chrome(r, "Redeem an invitation code")
		v := views.RedeemView{SignInURL: signInURL("/redeem")}
		switch {
		case errors.Is(err, errCodeNotActive):
			v.CodeError = redeemNotActiveMessage
		case status == http.StatusNotFound:
			// rule (docs/API.md#redeem): every refusal lists the same
			// reasons; only the person's own address is named.
			v.CodeError, v.Denied = redeemDeniedMessage, true
			if c.SignedInAs != "" {
				v.CodeError += " with the address you are signed in with, " + c.SignedInAs
			}
			v.CodeError += "."
		case status == http.StatusBadRequest:
			v.CodeError = message
		case status == http.StatusTooManyRequests:
			v.Message = retryMessage(message, s.setRetryAfter(w))
		default:
			return err
		}
		return s.render(w, r, status, c, views.Redeem(c, v))
	}
	s.cookieState(r).Note = "Your code worked: you now have early access to this program."
	http.Redirect(w, r, "/early-access/"+red.Slug, http.StatusSeeOther)
	return nil
}

// handleRedeemUnavailable answers a redemption that could not be judged
// because the identity provider could not be reached: 503, and the form
// again with the code as it was sent, so it need not be found and pasted
// again. Nothing was counted or redeemed.
func (s *Server) handleRedeemUnavailable(w http.ResponseWriter, r *http.Request) error {
	in, err := readRedeemForm(r)
	if err != nil {
		return err
	}
	w.Header().Set("Retry-After", identityRetryAfter)
	c := s.chrome(r, "Redeem an invitation code")
	v := views.RedeemView{SignInURL: signInURL("/redeem"), Code: in.Code,
		Message: "We could not reach " + s.providerName() + " to check the address you are signed in with, so your code was not checked. It is still in the field below: send it again in a moment."}
	return s.render(w, r, http.StatusServiceUnavailable, c, views.Redeem(c, v))
}

// redeemRequest is a redemption, from the form or the JSON body.
type redeemRequest struct {
	Code string `json:"code"`
}

// readRedeemForm reads the redeem form. A pasted code often brings a space
// or a line break along, or the whole invitation message: the code is
// found in it.
func readRedeemForm(r *http.Request) (redeemRequest, error) {
	f, err := readForm(r)
	if err != nil {
		return redeemRequest{}, err
	}
	in := redeemRequest{Code: codeInMessage(f.get("code"))}
	return in, f.err
}

// redeemJSON is the JSON answer to a successful redemption.
type redeemJSON struct {
	Program string `json:"program"`
	State   string `json:"state"`
}

// handleRedeemAPI redeems a code from a JSON body: 200 {program, state}.
// The code must be exactly 43 base64url characters, with no trimming.
func (s *Server) handleRedeemAPI(w http.ResponseWriter, r *http.Request) error {
	var body redeemRequest
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	red, err := s.redeem(r, body.Code)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, redeemJSON{Program: red.Slug, State: store.StateActive})
	return nil
}
