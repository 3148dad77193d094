package browsertest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"admit/internal/testutil"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
)

// On a full disk the owner console opens with a banner saying the server
// cannot write, readable without scrolling sideways on a desktop and on a
// phone.
func TestBrowser_DiskFullBannerOnTheConsole(t *testing.T) {
	dir, fill := testutil.MustFullDisk(t)
	app := MustStartApp(t, withClerk(), withDataDir(dir))
	c := app.NewClient(t)
	fill()
	for i := 0; ; i++ {
		r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), fmt.Sprintf("full%d@example.com", i), 1, true))
		if r.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if r.StatusCode != http.StatusAccepted || i == 200 {
			t.Fatalf("signup %d on a full disk: status %d", i, r.StatusCode)
		}
	}

	ctx := owBrowserAsOwner(t, app)
	for _, width := range []int{1280, phoneWidth} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), phoneHeight)); err != nil {
			t.Fatal(err)
		}
		owLoad(t, ctx, "open the console", chromedp.Navigate(app.URL+"/owner"))
		text := owEval[string](t, ctx, `(document.querySelector('[data-testid="write-failure-banner"]') || {}).innerText || ""`)
		if !strings.Contains(text, "The server cannot write: disk full since ") {
			t.Fatalf("at %d px the console shows no disk-full banner (%q)", width, text)
		}
		// It is the first thing on the page, above the navigation.
		if top := owEval[float64](t, ctx, `document.querySelector('[data-testid="write-failure-banner"]').getBoundingClientRect().top`); top > 100 {
			t.Errorf("at %d px the banner starts %.0f px down", width, top)
		}
		owWantFits(t, ctx, "/owner with the banner", width)
		owScreenshot(t, ctx, fmt.Sprintf("disk-full-banner-%d", width))
	}
}
