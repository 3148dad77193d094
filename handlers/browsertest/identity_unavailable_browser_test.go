package browsertest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"admit/internal/browser"
	"admit/internal/oidcprovider"

	"github.com/chromedp/chromedp"
)

// A sign-in whose token endpoint fails, in headless Chromium with and
// without JavaScript, on a desktop and a phone: the callback's page is the
// provider's 503, says when to try again, fits the screen, and its link
// starts the sign-in over — which works once the endpoint answers again.
func TestBrowser_TokenEndpointFailingAtSignIn(t *testing.T) {
	for _, js := range []bool{true, false} {
		for _, width := range []int{1280, phoneWidth} {
			t.Run(fmt.Sprintf("js=%t width=%d", js, width), func(t *testing.T) {
				app := mustOIDCApp(t)
				app.OIDC.SetUser(oidcprovider.User{Sub: oidcSub("reader@example.com"), Email: "reader@example.com", EmailVerified: oidcprovider.Verified})
				var opts []browser.Option
				if !js {
					opts = append(opts, browser.WithJavaScriptDisabled())
				}
				ctx := browser.MustNew(t, opts...)
				if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), phoneHeight)); err != nil {
					t.Fatal(err)
				}
				mustNavigate(t, ctx, "open sign-in", chromedp.Navigate(app.URL+"/sign-in"))
				app.OIDC.SetTokenEndpointStatus(http.StatusInternalServerError)
				resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`[data-testid="oidc-sign-in"]`)))
				if err != nil || resp == nil || resp.Status != http.StatusServiceUnavailable || !strings.Contains(resp.URL, "/auth/callback") {
					t.Fatalf("the callback: %+v (%v), want its 503", resp, err)
				}
				text := mustText(t, ctx, `[data-testid="error"]`)
				for _, want := range []string{"could not reach our sign-in provider", "You can try again in half a minute."} {
					if !strings.Contains(text, want) {
						t.Errorf("the page lacks %q: %q", want, text)
					}
				}
				mustFitWidth(t, ctx, "the callback's 503", width)
				mustScreenshot(t, ctx, fmt.Sprintf("callback-503-js%t-%d", js, width))

				app.OIDC.SetTokenEndpointStatus(0)
				mustNavigate(t, ctx, "sign in again", chromedp.Click(chromedp.CSS(`[data-testid="error-sign-in-again"]`)))
				resp = mustNavigate(t, ctx, "continue with the provider", chromedp.Click(chromedp.CSS(`[data-testid="oidc-sign-in"]`)))
				if strings.Contains(resp.URL, "/auth/callback") || strings.Contains(resp.URL, "/sign-in") {
					t.Fatalf("signing in again ended at %s", resp.URL)
				}
				if n := sessionCount(t, app); n != 1 {
					t.Fatalf("%d sessions after signing in again, want 1", n)
				}
			})
		}
	}
}
