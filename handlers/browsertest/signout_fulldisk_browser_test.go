package browsertest

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"admit/internal/browser"
	"admit/internal/testutil"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// A sign-out the server could not finish, in a browser with and without
// JavaScript, on a desktop and a phone: the page says plainly that this
// browser is signed out and the session did not end on the server, shows
// nobody signed in, and fits the screen.
func TestBrowser_SignOutTheServerCouldNotFinishSaysSo(t *testing.T) {
	for _, js := range []bool{true, false} {
		for _, width := range []int{1280, phoneWidth} {
			t.Run(fmt.Sprintf("js=%t width=%d", js, width), func(t *testing.T) {
				dir, fill := testutil.MustFullDisk(t)
				app := MustStartApp(t, withDataDir(dir))
				c := app.NewClient(t)
				c.SignIn(t, "reader@example.com")
				var opts []browser.Option
				if !js {
					opts = append(opts, browser.WithJavaScriptDisabled())
				}
				ctx := browser.MustNew(t, opts...)
				for _, ck := range c.Jar.Cookies(mustURL(t, app.URL+"/")) {
					if _, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: ck.Name, Value: ck.Value,
						URL: app.URL, Path: "/"}); err != nil {
						t.Fatalf("set cookie %s: %v", ck.Name, err)
					}
				}
				if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), phoneHeight)); err != nil {
					t.Fatal(err)
				}
				owLoad(t, ctx, "open /me/account", chromedp.Navigate(app.URL+"/me/account"))
				if err := os.Remove(app.DB.Path + "-reserve"); err != nil {
					t.Fatal(err)
				}
				fill()
				openNavMenu(t, ctx)
				resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`#sign-out-form button[type="submit"]`)))
				if err != nil || resp == nil || resp.Status != 503 {
					t.Fatalf("sign-out: %+v (%v), want a 503 page", resp, err)
				}
				if u, _ := url.Parse(resp.URL); u.Path != "/sign-out" {
					t.Fatalf("sign-out answered from %s", resp.URL)
				}
				text := mustText(t, ctx, `[data-testid="sign-out-incomplete"]`)
				for _, want := range []string{"Signed out in this browser only", "Your session did not end on the server."} {
					if !strings.Contains(text, want) {
						t.Errorf("the page lacks %q: %q", want, text)
					}
				}
				if n := mustCount(t, ctx, `[data-testid="signed-in-as"], #sign-out-form`); n != 0 {
					t.Errorf("the page shows the visitor signed in (%d elements)", n)
				}
				mustFitWidth(t, ctx, "the sign-out page", width)
				mustScreenshot(t, ctx, fmt.Sprintf("sign-out-incomplete-js%t-%d", js, width))
			})
		}
	}
}
