package browsertest

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"admit/internal/browser"
	"admit/internal/identity"
	"admit/internal/oidcprovider"
)

// TestOIDC_BrowserFlowWithAndWithoutJavaScript signs in through the real
// provider in headless Chromium — a recipient to redemption and private
// content, then the owner to the console — with JavaScript on and off, at
// a desktop and a phone width.
func TestOIDC_BrowserFlowWithAndWithoutJavaScript(t *testing.T) {
	for _, tc := range []struct {
		name  string
		noJS  bool
		width int64
	}{{"JavaScript on, 1280 px", false, 1280}, {"JavaScript off, 390 px", true, phoneWidth}} {
		t.Run(tc.name, func(t *testing.T) {
			app := mustOIDCApp(t)
			inv := newAccessKit(app).Invite(t, app.Demo, "reader@example.com", true)
			var opts []browser.Option
			if tc.noJS {
				opts = append(opts, browser.WithJavaScriptDisabled())
			}
			ctx := browser.MustNew(t, opts...)
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(tc.width, 844)); err != nil {
				t.Fatal(err)
			}
			shot := func(name string) {
				mustFitWidth(t, ctx, name, int(tc.width))
				mustScreenshot(t, ctx, "oidc-"+name+"-"+map[bool]string{false: "js", true: "nojs"}[tc.noJS])
			}

			// A recipient: sign in from the redeem page and come back to it.
			app.OIDC.SetUser(oidcprovider.User{Sub: oidcSub("reader@example.com"), Email: "reader@example.com", EmailVerified: oidcprovider.Verified})
			mustNavigate(t, ctx, "open sign-in", chromedp.Navigate(app.URL+"/sign-in?redirect_url=%2Fredeem"))
			if got := mustText(t, ctx, `[data-testid="oidc-sign-in"]`); got != "Continue with Test ID" {
				t.Fatalf("sign-in link text %q", got)
			}
			shot("sign-in")
			resp := mustNavigate(t, ctx, "continue with the provider", chromedp.Click(chromedp.CSS(`[data-testid="oidc-sign-in"]`)))
			if resp.URL != app.URL+"/redeem" {
				t.Fatalf("sign-in led to %s, want /redeem", resp.URL)
			}
			if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#code"), inv.Code)); err != nil {
				t.Fatal(err)
			}
			resp = mustNavigate(t, ctx, "redeem", chromedp.Click(chromedp.CSS(`#redeem-form button[type="submit"]`)))
			if !strings.HasSuffix(resp.URL, "/early-access/demo") {
				t.Fatalf("redeeming led to %s", resp.URL)
			}
			if body := mustText(t, ctx, "main"); !strings.Contains(body, "Welcome to the admit demo.") {
				t.Fatal("the private page does not show the content")
			}
			mustNavigate(t, ctx, "account", chromedp.Navigate(app.URL+"/me/account"))
			uid := identity.OIDCUserID(app.OIDC.Issuer, oidcSub("reader@example.com"))
			if got := mustText(t, ctx, `[data-testid="user-id"]`); got != uid {
				t.Fatalf("account page user ID %q, want %q", got, uid)
			}
			shot("account")

			// Sign out: admit's session ends and the provider signs out too,
			// then returns to the start page.
			openNavMenu(t, ctx)
			mustNavigate(t, ctx, "sign out", chromedp.Click(chromedp.CSS(`#sign-out-form button[type="submit"]`)))
			shot("signed-out")
			resp = mustNavigate(t, ctx, "sign out at the provider too", chromedp.Click(chromedp.CSS(`[data-testid="provider-sign-out"]`)))
			if resp.URL != app.URL+"/" {
				t.Fatalf("the provider's sign-out ended at %s", resp.URL)
			}
			if app.OIDC.EndSessions() != 1 {
				t.Fatalf("provider logouts=%d, want 1", app.OIDC.EndSessions())
			}
			if n := sessionCount(t, app); n != 0 {
				t.Fatalf("%d sessions after sign-out", n)
			}

			// The owner, straight to the console.
			app.OIDC.SetUser(oidcprovider.User{Sub: oidcSub("owner@example.test"), Email: "owner@example.test", EmailVerified: oidcprovider.Verified})
			mustNavigate(t, ctx, "open sign-in", chromedp.Navigate(app.URL+"/sign-in"))
			resp = mustNavigate(t, ctx, "continue as the owner", chromedp.Click(chromedp.CSS(`[data-testid="oidc-sign-in"]`)))
			if resp.URL != app.URL+"/owner" {
				t.Fatalf("the owner's sign-in led to %s, want /owner", resp.URL)
			}

			// A failed sign-in: the callback in a browser that did not start it.
			if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
				t.Fatal(err)
			}
			c := app.NewClient(t)
			cb := c.OIDCAuthorize(t, "/")
			if _, err := chromedp.RunResponse(ctx, chromedp.Navigate(cb)); err != nil {
				t.Fatal(err)
			}
			if got := mustCount(t, ctx, `[data-testid="sign-in-failed"]`); got != 1 {
				t.Fatal("no failure page")
			}
			shot("sign-in-failed")
		})
	}
}

// TestA11y_OIDCPages audits the OpenID Connect mode's own pages: the
// sign-in link, the failed sign-in and the account page.
func TestA11y_OIDCPages(t *testing.T) {
	axe := mustReadAxe(t)
	app := mustOIDCApp(t)
	ctx := browser.MustNew(t, browser.WithTimeout(3*time.Minute))
	open := map[string]func(){
		"sign-in (OpenID Connect)": func() { mustNavigate(t, ctx, "sign-in", chromedp.Navigate(app.URL+"/sign-in")) },
		"sign-in failed": func() {
			cb := app.NewClient(t).OIDCAuthorize(t, "/")
			if _, err := chromedp.RunResponse(ctx, chromedp.Navigate(cb)); err != nil {
				t.Fatal(err)
			}
		},
		"account (OpenID Connect)": func() {
			app.OIDC.SetUser(oidcprovider.User{Sub: "sub-a11y", Email: "a11y@example.com", EmailVerified: oidcprovider.Verified})
			mustNavigate(t, ctx, "sign-in", chromedp.Navigate(app.URL+"/sign-in?redirect_url=%2Fme%2Faccount"))
			mustNavigate(t, ctx, "continue", chromedp.Click(chromedp.CSS(`[data-testid="oidc-sign-in"]`)))
		},
	}
	open["signed out, provider's sign-out offered"] = func() {
		openNavMenu(t, ctx)
		mustNavigate(t, ctx, "sign out", chromedp.Click(chromedp.CSS(`#sign-out-form button[type="submit"]`)))
	}
	for _, name := range []string{"sign-in (OpenID Connect)", "sign-in failed", "account (OpenID Connect)",
		"signed out, provider's sign-out offered"} {
		t.Run(name, func(t *testing.T) {
			open[name]()
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](axe)); err != nil {
				t.Fatalf("load axe-core: %v", err)
			}
			for _, v := range a11yViews {
				if err := setView(ctx, v); err != nil {
					t.Fatal(err)
				}
				// The last keyboard walk leaves the skip link focused (shown
				// over the header); a visitor arriving has no focus yet.
				if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur()`)); err != nil {
					t.Fatal(err)
				}
				for _, f := range runAxe(t, ctx, v) {
					t.Errorf("%s [%s]: %s", name, v, f)
				}
				if v.Keyboard {
					for _, f := range walkKeyboard(t, ctx) {
						t.Errorf("%s [%s]: keyboard: %s", name, v, f)
					}
				}
			}
		})
	}
}
