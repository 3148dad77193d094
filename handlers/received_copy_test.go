package handlers

import (
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"

	"admit/store"
)

// receivedPage joins the demo waitlist as a browser does and returns the
// page the 303 leads to.
func receivedPage(tb testing.TB, app *testApp, email string) string {
	tb.Helper()
	c := app.NewClient(tb)
	key := formRequestKey(tb, c.Get(tb, signupPath).Body)
	r := c.PostForm(tb, signupPath, signupFormValues(key, email, 1, true), "Accept", browserAccept)
	if got, want := r.StatusCode, http.StatusSeeOther; got != want {
		tb.Fatalf("signup: status %d, want %d", got, want)
	}
	page := c.Get(tb, r.Header.Get("Location"))
	if got, want := page.StatusCode, http.StatusOK; got != want {
		tb.Fatalf("received page: status %d, want %d", got, want)
	}
	return html.UnescapeString(page.Body)
}

func TestReceived_NamesTheProgramAndSaysWhatHappensNext(t *testing.T) {
	app := MustStartApp(t)
	body := receivedPage(t, app, "first@example.com")
	for _, want := range []string{
		"<title>Request received · " + store.DemoName + " · admit</title>",
		"the waitlist for <strong>" + store.DemoName + "</strong>, run by admit demo team",
		`data-testid="received-next"`, "What happens next", "invitation code", `href="/redeem"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("received page lacks %q", want)
		}
	}
	if strings.Contains(body, "You asked to join:") {
		t.Errorf("received page still names the purpose, not the program")
	}
	// The link comes first; what happens next follows it.
	if i, j := strings.Index(body, `data-testid="removal-link"`), strings.Index(body, `data-testid="received-next"`); i < 0 || j < i {
		t.Errorf("what happens next comes before the removal link")
	}

	// A renamed program is named by its new name at once.
	owner := mustOwnerClient(t, app)
	r := owner.PostJSON(t, "PATCH", "/api/owner/programs/"+app.Demo.ID,
		fmt.Sprintf(`{"expectedRevision":%d,"name":"Nimbus beta"}`, app.Demo.Revision))
	if got, want := r.StatusCode, http.StatusOK; got != want {
		t.Fatalf("rename: status %d, want %d: %s", got, want, r.Body)
	}
	if body := receivedPage(t, app, "second@example.com"); !strings.Contains(body, "<strong>Nimbus beta</strong>") {
		t.Errorf("after a rename the received page does not use the new name")
	}
}
