package browsertest

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"admit/store"
)

// TestTeam_InBrowser: the Team page, with JavaScript on and off, adds an
// owner by address and removes one through its confirmation (a dialog with
// JavaScript), and passes the accessibility audit.
func TestTeam_InBrowser(t *testing.T) {
	for _, m := range ofModes {
		t.Run(m.name, func(t *testing.T) {
			app := MustStartApp(t)
			c := app.NewClient(t)
			other := c.SignIn(t, "other@example.test")
			if _, err := app.DB.AddOwner(context.Background(), store.Actor{Kind: store.ActorCLI}, store.DemoWorkspace, other); err != nil {
				t.Fatal(err)
			}
			ctx := ofBrowser(t, app, m)
			team := app.URL + "/owner/workspaces/" + app.Demo.WorkspaceID + "/team"
			a11yLoad(t, ctx, "open the team", 200, chromedp.Navigate(team))
			ofScreenshot(t, ctx, "team-"+ofShot(m))
			ofAudit(t, ctx, m, "team page")
			ofFill(t, ctx, [2]string{"#owner-email", "nia@example.com"}, [2]string{"#owner-name", "Nia"})
			a11yLoad(t, ctx, "add an owner", 200, chromedp.Click(chromedp.CSS(`[data-testid="team-add"]`)))
			if got := mustText(t, ctx, `[data-testid="team-waiting"]`); !strings.Contains(got, "nia@example.com") {
				t.Fatalf("waiting list %q", got)
			}
			otherID := staffIDOf(t, app, other)
			press := chromedp.Click(chromedp.CSS(`[data-member-id="` + otherID + `"] [data-testid="remove-owner"]`))
			if m.js {
				if err := chromedp.Do(ctx, press); err != nil {
					t.Fatal(err)
				}
				owWaitFor(t, ctx, "the remove dialog", `!!document.querySelector('dialog[open] [data-confirm-kind="remove-owner"]')`)
			} else {
				a11yLoad(t, ctx, "remove", 200, press)
				ofAudit(t, ctx, m, "remove confirmation")
			}
			a11yLoad(t, ctx, "confirm", 200, chromedp.Click(chromedp.CSS(`[data-testid="confirm-submit"]`)))
			if got := mustText(t, ctx, `[data-testid="flash"]`); !strings.Contains(got, "no longer an owner") {
				t.Fatalf("flash %q", got)
			}
			if n := owCount(t, app, `SELECT count(*) FROM staff_members WHERE active = 1 AND workspace_id = ?`, app.Demo.WorkspaceID); n != 1 {
				t.Fatalf("active owners=%d, want 1", n)
			}
			ofScreenshot(t, ctx, "team-after-"+ofShot(m))
		})
	}
}
