package browsertest

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"admit/internal/browser"
	"admit/store"
)

// recipientBrowserLoad runs steps that cause one page load and fails unless
// the new document answers want.
func recipientBrowserLoad(tb testing.TB, ctx context.Context, what string, want int64, steps ...chromedp.Action[chromedp.Void]) *network.Response {
	tb.Helper()
	resp, err := chromedp.RunResponse(ctx, steps...)
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	if resp == nil {
		tb.Fatalf("%s: no document response", what)
		return nil
	}
	if resp.Status != want {
		tb.Fatalf("%s: %s answered %d, want %d", what, resp.URL, resp.Status, want)
	}
	return resp
}

// TestBrowser_RecipientRedeemsAndReadsThenRevokeDenies is the recipient's
// whole path in a real browser with JavaScript off: signed out, /redeem
// leads to sign-in and back; the pasted code lands on the private page,
// whose text the recipient reads; after the owner revokes the grant,
// reloading the page is the generic 404.
func TestBrowser_RecipientRedeemsAndReadsThenRevokeDenies(t *testing.T) {
	t.Parallel()
	app := MustStartApp(t)
	k := newAccessKit(app)
	const email = "recipient@example.com"
	inv := k.Invite(t, app.Demo, email, true)
	ctx := browser.MustNew(t, browser.WithJavaScriptDisabled())
	holdDevKey(t, ctx, app)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulatePortrait,
		chromedp.EmulateMobile, chromedp.EmulateScale(2))); err != nil {
		t.Fatalf("phone viewport: %v", err)
	}

	// Signed out, the redemption page explains and offers sign-in only.
	recipientBrowserLoad(t, ctx, "open /redeem", 200, chromedp.Navigate(app.URL+"/redeem"))
	if got, want := mustCount(t, ctx, `[name="code"]`), 0; got != want {
		t.Fatalf("code fields while signed out=%d, want %d", got, want)
	}
	resp := recipientBrowserLoad(t, ctx, "follow the sign-in link", 200,
		chromedp.Click(chromedp.CSS(`[data-testid="redeem-sign-in"]`)))
	if got, want := resp.URL, app.URL+"/sign-in?redirect_url="+url.QueryEscape("/redeem"); got != want {
		t.Fatalf("sign-in link led to %s, want %s", got, want)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`[data-testid="dev-sign-in"] input[name="email"]`), email)); err != nil {
		t.Fatalf("type the email: %v", err)
	}
	resp = recipientBrowserLoad(t, ctx, "sign in", 200,
		chromedp.Click(chromedp.CSS(`[data-testid="dev-sign-in"] button[type="submit"]`)))
	if got, want := resp.URL, app.URL+"/redeem"; got != want {
		t.Fatalf("after sign-in the browser is at %s, want %s", got, want)
	}

	mustScreenshot(t, ctx, "redeem")

	// Paste the code and submit: the browser lands on the private page.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("code"), inv.Code)); err != nil {
		t.Fatalf("paste the code: %v", err)
	}
	resp = recipientBrowserLoad(t, ctx, "redeem", 200,
		chromedp.Click(chromedp.CSS(`#redeem-form button[type="submit"]`)))
	if got, want := resp.URL, app.URL+"/early-access/demo"; got != want {
		t.Fatalf("after redeeming the browser is at %s, want %s", got, want)
	}
	if strings.Contains(resp.URL, inv.Code) {
		t.Fatal("the code is in a URL")
	}
	text := mustText(t, ctx, `[data-testid="private-content"]`)
	for _, want := range []string{"Welcome to the admit demo.", "This text is private"} {
		if !strings.Contains(text, want) {
			t.Fatalf("private text %q lacks %q", text, want)
		}
	}
	if got, want := mustCount(t, ctx, `[data-testid="private-content"] p`), 2; got != want {
		t.Fatalf("paragraphs=%d, want %d", got, want)
	}
	mustFitWidth(t, ctx, "/early-access/demo", phoneWidth)
	mustScreenshot(t, ctx, "private")

	// My waitlists shows the entry as active with a link to the page.
	recipientBrowserLoad(t, ctx, "open /me", 200, chromedp.Navigate(app.URL+"/me"))
	if got, want := mustCount(t, ctx, `[data-testid="my-entries"] a[href="/early-access/demo"]`), 1; got != want {
		t.Fatalf("links to the private page on /me=%d, want %d", got, want)
	}
	mustFitWidth(t, ctx, "/me", phoneWidth)
	mustScreenshot(t, ctx, "me")
	recipientBrowserLoad(t, ctx, "back to the private page", 200, chromedp.Navigate(app.URL+"/early-access/demo"))

	// The owner revokes the grant; the next load is denied.
	var grantID string
	if err := app.DB.View(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT id FROM grants WHERE entry_id = ?`, inv.EntryID).Scan(&grantID)
	}); err != nil {
		t.Fatal(err)
	}
	k.RevokeGrant(t, grantID)
	recipientBrowserLoad(t, ctx, "reload after revoke", 404, chromedp.Reload())
	if got := mustText(t, ctx, `[data-testid="error"] h1`); got != "Not found" {
		t.Fatalf("after revoke h1=%q, want %q", got, "Not found")
	}
	if got, want := mustCount(t, ctx, `[data-testid="private-content"]`), 0; got != want {
		t.Fatalf("private content sections after revoke=%d, want %d", got, want)
	}
	mustScreenshot(t, ctx, "private-revoked")
}
