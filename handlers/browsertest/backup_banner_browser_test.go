package browsertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"admit/handlers"
	"admit/internal/browser"

	"github.com/chromedp/chromedp"
)

// A backup found not restorable (a failed restore drill, or a replica the
// replica check found lost) shows on the console as an alert, readable
// without scrolling sideways on a desktop and on a phone, with scripts on
// and off.
func TestBrowser_BackupNotRestorableShowsOnTheConsole(t *testing.T) {
	lost := time.Date(2026, 12, 6, 4, 30, 0, 0, time.UTC)
	app := MustStartApp(t, withClerk(), withServerOptions(func(o *handlers.Options) {
		o.BackupStatus = func() (handlers.BackupStatus, error) {
			return handlers.BackupStatus{Replica: "file:///var/backups/admit", LastSync: lost.Add(time.Minute), VerifiedAt: lost.Add(-time.Hour), NotRestorableSince: lost}, nil
		}
	}))
	for _, js := range []bool{true, false} {
		var opts []browser.Option
		if !js {
			opts = append(opts, browser.WithJavaScriptDisabled())
		}
		ctx := owBrowserAsOwner(t, app, opts...)
		for _, width := range []int{1280, phoneWidth} {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), phoneHeight)); err != nil {
				t.Fatal(err)
			}
			owLoad(t, ctx, "open the console", chromedp.Navigate(app.URL+"/owner"))
			text := owEval[string](t, ctx, `(document.querySelector('[data-testid="backup-drill"][role="alert"]') || {}).innerText || ""`)
			for _, want := range []string{"Backup NOT restorable since 6 Dec 2026, 04:30 UTC", "no longer holds the backup", "fresh full snapshot"} {
				if !strings.Contains(text, want) {
					t.Errorf("js=%t, %d px: the backup alert %q lacks %q", js, width, text, want)
				}
			}
			owWantFits(t, ctx, "/owner with the backup alert", width)
			owScreenshot(t, ctx, fmt.Sprintf("backup-not-restorable-%d-js%t", width, js))
		}
	}
}
