package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// client sends requests to one admit server.
type client struct {
	base string
	http *http.Client
	// devKey is the development sign-in key from the link admit printed.
	devKey string
}

// newClient returns a client whose connection pool holds a keep-alive
// connection for each of up to conns concurrent requests.
func newClient(base, devKey string, conns int) *client {
	tr := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	return &client{base: base, devKey: devKey, http: &http.Client{
		Transport: tr,
		Timeout:   30 * time.Second,
		// Redirects are answers to check, not to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// session is a signed-in identity: its cookies and its CSRF token.
type session struct {
	Email  string
	Cookie string
	CSRF   string
}

// request is one HTTP exchange.
type request struct {
	Method, Path string
	// ContentType and Body, when set, are sent as the request body.
	ContentType string
	Body        []byte
	Session     *session
	// Want is the expected status; anything else is an error.
	Want int
	// Into, when set, receives the JSON response body.
	Into any
	// Attempt, when set, names this exchange in admit's request log: it is
	// sent as attemptHeader, which admit takes as the request ID.
	Attempt string
}

// attemptHeader carries a request's Attempt; the admit the load generator
// starts trusts it as its request-ID header (ADMIT_REQUEST_ID_HEADER).
const attemptHeader = "X-Loadgen-Attempt"

// do sends the request, reads the whole answer and checks its status.
// On success it returns the response (body consumed) and the body bytes
// only when Into or keep asks for them.
func (c *client) do(ctx context.Context, r request) (*http.Response, []byte, error) {
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, c.base+r.Path, body)
	if err != nil {
		return nil, nil, err
	}
	if r.ContentType != "" {
		req.Header.Set("Content-Type", r.ContentType)
	}
	if strings.HasPrefix(r.Path, "/api/") {
		req.Header.Set("Accept", "application/json")
	}
	if r.Attempt != "" {
		req.Header.Set(attemptHeader, r.Attempt)
	}
	if s := r.Session; s != nil {
		req.Header.Set("Cookie", s.Cookie)
		if s.CSRF != "" && r.Method != http.MethodGet {
			req.Header.Set("X-CSRF-Token", s.CSRF)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var b []byte
	if r.Into != nil || resp.StatusCode != r.Want {
		b, err = io.ReadAll(resp.Body)
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: read body: %w", r.Method, routeOf(r.Path), err)
	}
	if resp.StatusCode != r.Want {
		return resp, b, fmt.Errorf("%s %s: status %d, want %d: %s", r.Method, routeOf(r.Path), resp.StatusCode, r.Want, snippet(b))
	}
	if r.Into != nil {
		if err := json.Unmarshal(b, r.Into); err != nil {
			return resp, b, fmt.Errorf("%s %s: decode: %w", r.Method, routeOf(r.Path), err)
		}
	}
	return resp, b, nil
}

// jsonBody marshals v for a request body.
func jsonBody(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps and structs of plain values are sent
	}
	return b
}

// routeOf drops the query string so that error messages hold no cursor.
func routeOf(path string) string {
	p, _, _ := strings.Cut(path, "?")
	return p
}

// snippet is the start of a response body for an error message.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// signIn signs in with the development identity and fetches the CSRF token
// bound to the new session.
func (c *client) signIn(ctx context.Context, email string) (*session, error) {
	form := url.Values{"email": {email}, "redirect_url": {"/"}}
	// The key of the link admit printed at start, as a browser that
	// opened it holds it.
	key := &session{Cookie: "admit_dev_key=" + c.devKey}
	resp, _, err := c.do(ctx, request{Method: http.MethodPost, Path: "/dev/sign-in", Session: key,
		ContentType: "application/x-www-form-urlencoded", Body: []byte(form.Encode()), Want: http.StatusSeeOther})
	if err != nil {
		return nil, fmt.Errorf("dev sign-in: %w", err)
	}
	jar := map[string]string{}
	var order []string
	keep := func(cs []*http.Cookie) {
		for _, ck := range cs {
			if _, seen := jar[ck.Name]; !seen {
				order = append(order, ck.Name)
			}
			jar[ck.Name] = ck.Value
		}
	}
	keep(resp.Cookies())
	if jar["admit_dev"] == "" {
		return nil, fmt.Errorf("dev sign-in set no admit_dev cookie")
	}
	header := func() string {
		parts := make([]string, 0, len(order))
		for _, n := range order {
			if jar[n] != "" {
				parts = append(parts, n+"="+jar[n])
			}
		}
		return strings.Join(parts, "; ")
	}
	s := &session{Email: email, Cookie: header()}
	var tok struct {
		CSRFToken string `json:"csrfToken"`
	}
	resp, _, err = c.do(ctx, request{Method: http.MethodGet, Path: "/api/csrf", Session: s, Want: http.StatusOK, Into: &tok})
	if err != nil {
		return nil, err
	}
	keep(resp.Cookies())
	s.Cookie, s.CSRF = header(), tok.CSRFToken
	if s.CSRF == "" {
		return nil, fmt.Errorf("GET /api/csrf gave no token")
	}
	return s, nil
}
