package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
)

// ownerEmail is the development owner that admit seeds on first start.
const ownerEmail = "owner@example.test"

// programCap is the soak program's queue, hourly and seat cap: the most
// admit accepts, so the load is never turned away.
const programCap = 100000

// soakProgram is the open program the load signs up to.
type soakProgram struct {
	ID                   string `json:"id"`
	Slug                 string `json:"slug"`
	Revision             int64  `json:"revision"`
	CurrentNoticeVersion int    `json:"currentNoticeVersion"`
	SignupOpen           bool   `json:"signupOpen"`
}

// owner is the development owner's signed-in session.
type owner struct {
	http *http.Client // with the session's cookie jar
	csrf string
}

// call sends one owner API request and decodes a JSON answer into into.
func (o *owner) call(ctx context.Context, base, method, path string, body any, want int, into any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if o.csrf != "" && method != http.MethodGet {
		req.Header.Set("X-CSRF-Token", o.csrf)
	}
	resp, err := o.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: status %d, want %d", method, path, resp.StatusCode, want)
	}
	if into != nil {
		return json.Unmarshal(b, into)
	}
	return nil
}

// signInOwner signs in as the development owner with the development
// sign-in key and fetches a CSRF token.
func signInOwner(ctx context.Context, base, devKey string) (*owner, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	// The key of the link admit printed at start, as a browser that opened
	// it holds it.
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	jar.SetCookies(u, []*http.Cookie{{Name: "admit_dev_key", Value: devKey, Path: "/"}})
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := url.Values{"email": {ownerEmail}, "redirect_url": {"/"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/dev/sign-in", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("dev sign-in: status %d", resp.StatusCode)
	}
	o := &owner{http: c}
	var tok struct {
		CSRFToken string `json:"csrfToken"`
	}
	if err := o.call(ctx, base, http.MethodGet, "/api/csrf", nil, http.StatusOK, &tok); err != nil {
		return nil, err
	}
	if tok.CSRFToken == "" {
		return nil, fmt.Errorf("GET /api/csrf gave no token")
	}
	o.csrf = tok.CSRFToken
	return o, nil
}

// createProgram makes an open program with the largest caps through the
// owner API, as an owner would.
func createProgram(ctx context.Context, base, devKey, slug string) (*soakProgram, error) {
	o, err := signInOwner(ctx, base, devKey)
	if err != nil {
		return nil, err
	}
	var ws struct {
		Workspaces []struct {
			ID string `json:"id"`
		} `json:"workspaces"`
	}
	if err := o.call(ctx, base, http.MethodGet, "/api/owner/workspaces", nil, http.StatusOK, &ws); err != nil {
		return nil, err
	}
	if len(ws.Workspaces) == 0 {
		return nil, fmt.Errorf("the owner has no workspace")
	}
	const purpose = "Soak test program: checks that the backup survives crashes."
	p := &soakProgram{}
	if err := o.call(ctx, base, http.MethodPost, "/api/owner/programs", map[string]any{
		"workspaceId": ws.Workspaces[0].ID, "slug": slug, "name": "Soak test", "purpose": purpose,
		"queueCap": programCap, "hourlyCap": programCap, "seatCap": programCap, "maxInvitationDays": 14,
	}, http.StatusCreated, p); err != nil {
		return nil, err
	}
	path := "/api/owner/programs/" + p.ID
	if err := o.call(ctx, base, http.MethodPost, path+"/notices", map[string]string{
		"purpose":       purpose,
		"contactText":   "We use your address only to send one invitation code by hand if you are selected.",
		"retentionText": "Your address stays until the program is retired or you remove it with your private link.",
	}, http.StatusCreated, nil); err != nil {
		return nil, err
	}
	if err := o.call(ctx, base, http.MethodGet, path, nil, http.StatusOK, p); err != nil {
		return nil, err
	}
	if err := o.call(ctx, base, http.MethodPatch, path, map[string]any{
		"expectedRevision": p.Revision, "signupOpen": true,
	}, http.StatusOK, p); err != nil {
		return nil, err
	}
	if !p.SignupOpen || p.CurrentNoticeVersion < 1 {
		return nil, fmt.Errorf("program %s is not open after setup", slug)
	}
	return p, nil
}
