package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/textproto"
	"regexp"
	"strings"
	"testing"

	"admit/store"
)

// mustOwnerClient signs the demo owner in and fetches the CSRF token.
func mustOwnerClient(tb testing.TB, app *testApp) *testClient {
	tb.Helper()
	c := app.NewClient(tb)
	c.SignIn(tb, "owner@example.test")
	c.CSRF(tb)
	return c
}

// mustForeignOwner makes email's user the owner of a second workspace and
// returns a signed-in client for them (with a CSRF token), the workspace
// and the user ID.
func mustForeignOwner(tb testing.TB, app *testApp, email string) (*testClient, *store.Workspace, string) {
	tb.Helper()
	c := app.NewClient(tb)
	id := c.SignIn(tb, email)
	w, err := app.DB.AddOwner(context.Background(), store.Actor{Kind: store.ActorCLI}, "Second workspace", id)
	if err != nil {
		tb.Fatalf("add second owner: %v", err)
	}
	c.CSRF(tb)
	return c, w, id
}

// owWantNoAddressInAudit fails if any audit detail holds an address.
func owWantNoAddressInAudit(tb testing.TB, app *testApp) {
	tb.Helper()
	if n := owCount(tb, app, `SELECT count(*) FROM audit_events WHERE details LIKE '%@%'`); n != 0 {
		tb.Fatalf("%d audit events hold an '@' in their details", n)
	}
}

// owDecode decodes a JSON response body into a generic value.
func owDecode(tb testing.TB, body string) map[string]any {
	tb.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		tb.Fatalf("decode %q: %v", body, err)
	}
	return v
}

// owPath walks a decoded JSON value by object keys and array indexes.
func owPath(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// owStr returns a decoded JSON string, or "".
func owStr(v any) string {
	s, _ := v.(string)
	return s
}

// owMultipart builds a multipart/form-data body from ordered fields; a
// field named "file" is sent as a file part with the given file name.
func owMultipart(tb testing.TB, filename string, fields ...[2]string) (string, string) {
	tb.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		if f[0] == "file" {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="file"; filename="`+filename+`"`)
			h.Set("Content-Type", "application/octet-stream")
			w, err := mw.CreatePart(h)
			if err != nil {
				tb.Fatal(err)
			}
			w.Write([]byte(f[1]))
			continue
		}
		if err := mw.WriteField(f[0], f[1]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		tb.Fatal(err)
	}
	return mw.FormDataContentType(), buf.String()
}

// ownerPNG is a minimal PNG signature followed by padding: enough for
// http.DetectContentType.
var ownerPNG = "\x89PNG\r\n\x1a\n" + strings.Repeat("\x00", 64)

var owErrorBlockPattern = regexp.MustCompile(`(?s)<section class="error".*?</section>`)

// owErrorBlock is the error section of an HTML error page: the part that must
// read the same whoever asks.
func owErrorBlock(tb testing.TB, body string) string {
	tb.Helper()
	b := owErrorBlockPattern.FindString(body)
	if b == "" {
		tb.Fatalf("no error block in %q", body)
	}
	return b
}

// owWantStatus fails unless the response has the wanted status.
func owWantStatus(tb testing.TB, what string, r *testResponse, want int) {
	tb.Helper()
	if r.StatusCode != want {
		tb.Fatalf("%s: status %d, want %d; body %.600s", what, r.StatusCode, want, r.Body)
	}
}

// owLocation is a redirect's target.
func owLocation(r *testResponse) string { return r.Header.Get("Location") }
