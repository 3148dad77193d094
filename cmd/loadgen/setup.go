package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// ownerEmail is the development owner that admit seeds on first start.
const ownerEmail = "owner@example.test"

// benchPurpose is every benchmark program's purpose and notice purpose.
const benchPurpose = "Load test program: measures how fast admit admits, lists and serves early access."

// program is the part of the API's Program the tool needs.
type program struct {
	ID                   string `json:"id"`
	Slug                 string `json:"slug"`
	Revision             int64  `json:"revision"`
	CurrentNoticeVersion int    `json:"currentNoticeVersion"`
	SignupOpen           bool   `json:"signupOpen"`
	AccessEnabled        bool   `json:"accessEnabled"`
	QueueCap             int    `json:"queueCap"`
}

// createProgram makes an open program with both caps at 100000, a notice
// and private content, through the owner API exactly as an owner would.
func createProgram(ctx context.Context, c *client, owner *session, slug string) (*program, error) {
	var ws struct {
		Workspaces []struct {
			ID string `json:"id"`
		} `json:"workspaces"`
	}
	if _, _, err := c.do(ctx, request{Method: http.MethodGet, Path: "/api/owner/workspaces", Session: owner,
		Want: http.StatusOK, Into: &ws}); err != nil {
		return nil, err
	}
	if len(ws.Workspaces) == 0 {
		return nil, fmt.Errorf("the owner has no workspace")
	}
	p := &program{}
	if _, _, err := c.do(ctx, request{Method: http.MethodPost, Path: "/api/owner/programs", Session: owner,
		ContentType: "application/json", Want: http.StatusCreated, Into: p, Body: jsonBody(map[string]any{
			"workspaceId": ws.Workspaces[0].ID, "slug": slug, "name": "Load test", "purpose": benchPurpose,
			"queueCap": maxQueueEntries, "hourlyCap": maxQueueEntries, "seatCap": maxQueueEntries, "maxInvitationDays": 14,
		})}); err != nil {
		return nil, err
	}
	base := "/api/owner/programs/" + p.ID
	if _, _, err := c.do(ctx, request{Method: http.MethodPost, Path: base + "/notices", Session: owner,
		ContentType: "application/json", Want: http.StatusCreated, Body: jsonBody(map[string]string{
			"purpose":       benchPurpose,
			"contactText":   "We use your address only to send one invitation code by hand if you are selected.",
			"retentionText": "Your address stays until the program is retired or you remove it with your private link.",
		})}); err != nil {
		return nil, err
	}
	if _, _, err := c.do(ctx, request{Method: http.MethodPut, Path: base + "/content", Session: owner,
		ContentType: "application/json", Want: http.StatusOK, Body: jsonBody(map[string]any{
			"expectedRevision": 0,
			"body":             "Welcome to the early access.\n\nThis is the private content of a load-test program: a few paragraphs, as an owner would write them.\n\nThank you for trying it.",
		})}); err != nil {
		return nil, err
	}
	if _, _, err := c.do(ctx, request{Method: http.MethodGet, Path: base, Session: owner, Want: http.StatusOK, Into: p}); err != nil {
		return nil, err
	}
	if _, _, err := c.do(ctx, request{Method: http.MethodPatch, Path: base, Session: owner,
		ContentType: "application/json", Want: http.StatusOK, Into: p, Body: jsonBody(map[string]any{
			"expectedRevision": p.Revision, "signupOpen": true, "accessEnabled": true,
		})}); err != nil {
		return nil, err
	}
	if !p.SignupOpen || !p.AccessEnabled || p.CurrentNoticeVersion < 1 {
		return nil, fmt.Errorf("program %s is not open after setup: %+v", slug, p)
	}
	return p, nil
}

// signupBody is a valid JSON signup for the program's current notice.
func signupBody(p *program, email string) []byte {
	return jsonBody(map[string]any{"requestKey": uuid.NewString(), "email": email,
		"noticeVersion": p.CurrentNoticeVersion, "permission": true})
}

// signup posts one JSON signup and expects 202.
func signup(ctx context.Context, c *client, p *program, email string) error {
	_, _, err := c.do(ctx, request{Method: http.MethodPost, Path: "/api/public/programs/" + p.Slug + "/signups",
		ContentType: "application/json", Body: signupBody(p, email), Want: http.StatusAccepted})
	return err
}

// entryJSON is the part of the API's Entry the tool needs.
type entryJSON struct {
	ID    string  `json:"id"`
	Email *string `json:"email"`
	State string  `json:"state"`
}

// queuePage is GET …/entries.
type queuePage struct {
	Entries    []entryJSON `json:"entries"`
	NextCursor *string     `json:"nextCursor"`
}

// setupRecipient takes email through the whole path to private content:
// signup, the owner selects the entry, issues an invitation and records its
// delivery, then the recipient signs in and redeems the code. It returns
// the recipient's session.
func setupRecipient(ctx context.Context, c *client, owner *session, p *program, email string) (*session, error) {
	if err := signup(ctx, c, p, email); err != nil {
		return nil, err
	}
	base := "/api/owner/programs/" + p.ID
	var page queuePage
	if _, _, err := c.do(ctx, request{Method: http.MethodGet, Path: base + "/entries?state=waiting&limit=200",
		Session: owner, Want: http.StatusOK, Into: &page}); err != nil {
		return nil, err
	}
	entryID := ""
	for _, e := range page.Entries {
		if e.Email != nil && *e.Email == email {
			entryID = e.ID
		}
	}
	if entryID == "" {
		return nil, fmt.Errorf("the recipient's entry is not on the first queue page")
	}
	if _, _, err := c.do(ctx, request{Method: http.MethodPost, Path: base + "/entries/" + entryID + "/select",
		Session: owner, ContentType: "application/json", Want: http.StatusOK,
		Body: jsonBody(map[string]string{"reason": "meets_policy"})}); err != nil {
		return nil, err
	}
	var issued struct {
		Invitation struct {
			ID string `json:"id"`
		} `json:"invitation"`
		Code string `json:"code"`
	}
	if _, _, err := c.do(ctx, request{Method: http.MethodPost, Path: base + "/entries/" + entryID + "/invitations",
		Session: owner, ContentType: "application/json", Want: http.StatusCreated, Into: &issued,
		Body: jsonBody(map[string]string{"requestKey": uuid.NewString(),
			"expiresAt": time.Now().UTC().Add(7 * 24 * time.Hour).Format(time.RFC3339)})}); err != nil {
		return nil, err
	}
	if _, _, err := c.do(ctx, request{Method: http.MethodPost, Path: "/api/owner/invitations/" + issued.Invitation.ID + "/delivery-record",
		Session: owner, ContentType: "application/json", Want: http.StatusOK,
		Body: jsonBody(map[string]string{"requestKey": uuid.NewString(), "channel": "email"})}); err != nil {
		return nil, err
	}
	rec, err := c.signIn(ctx, email)
	if err != nil {
		return nil, err
	}
	if _, _, err := c.do(ctx, request{Method: http.MethodPost, Path: "/api/me/invitations/redeem", Session: rec,
		ContentType: "application/json", Want: http.StatusOK, Body: jsonBody(map[string]string{"code": issued.Code})}); err != nil {
		return nil, err
	}
	return rec, nil
}

// deepCursor follows the API's cursors, up to 200 entries a page, until
// exactly depth entries lie before the position, and returns that cursor.
func deepCursor(ctx context.Context, c *client, owner *session, p *program, depth int) (string, error) {
	cursor, seen := "", 0
	for pages := 0; seen < depth; pages++ {
		if pages > depth/200+2 {
			return "", fmt.Errorf("the queue ended after %d entries, before %d", seen, depth)
		}
		// The last page is cut short so that the cursor lands exactly
		// depth entries in, whatever depth is.
		path := "/api/owner/programs/" + p.ID + "/entries?limit=" + strconv.Itoa(min(200, depth-seen))
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var page queuePage
		if _, _, err := c.do(ctx, request{Method: http.MethodGet, Path: path, Session: owner, Want: http.StatusOK, Into: &page}); err != nil {
			return "", err
		}
		seen += len(page.Entries)
		if page.NextCursor == nil {
			return "", fmt.Errorf("the queue ended after %d entries, before %d", seen, depth)
		}
		cursor = *page.NextCursor
	}
	return cursor, nil
}
