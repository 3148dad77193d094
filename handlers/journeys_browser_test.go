package handlers

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	adbrowser "admit/internal/browser"
	"admit/store"
)

// Journeys where a person used to get a wrong or confusing answer, walked
// in a real browser with JavaScript on and off.

func TestBrowser_AnAddressTypedWithCapitalsIsExplainedToTheApplicant(t *testing.T) {
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			app := MustStartApp(t)
			// On the list as typed at signup, with a capital; the sign-in
			// provider has it in lower case.
			newAccessKit(app).entry(t, app.Demo, "Liam@example.test")
			ctx := adbrowser.MustNew(t, mode.opts...)
			onPhone(t, ctx)

			// The signup form asks for the address exactly as the sign-in
			// account has it.
			mustNavigate(t, ctx, "open the signup form", chromedp.Navigate(app.URL+"/waitlist/demo"))
			if got := mustText(t, ctx, `#email-help`); !strings.Contains(got, "exactly as your sign-in account has it") ||
				!strings.Contains(got, "capitals") {
				t.Errorf("the address hint says %q: want to type it exactly as the sign-in account has it", got)
			}
			mustFitWidth(t, ctx, "/waitlist/demo", phoneWidth)

			// Signed in as liam@, /me finds nothing and says why that can be.
			mustNavigate(t, ctx, "open /me signed out", chromedp.Navigate(app.URL+"/me"))
			signInThroughForm(t, ctx, "liam@example.test")
			if n := mustCount(t, ctx, `[data-testid="no-entries"]`); n != 1 {
				t.Fatalf("no-entries paragraphs=%d, want 1", n)
			}
			got := mustText(t, ctx, `[data-testid="exact-match-help"]`)
			for _, want := range []string{"matched exactly", "capital letters before the @"} {
				if !strings.Contains(got, want) {
					t.Errorf("/me with no entries says %q: want %q", got, want)
				}
			}
			mustFitWidth(t, ctx, "/me", phoneWidth)
			mustScreenshot(t, ctx, "me-exact-match-"+strings.ReplaceAll(mode.name, " ", "-"))
		})
	}
}

func TestBrowser_OwnerFindsAndSeesEntriesThatDifferOnlyInCase(t *testing.T) {
	jsModes(t, func(t *testing.T, js bool) {
		app := MustStartApp(t, withClerk())
		ids := owEntriesInOrder(t, app, store.StateWaiting, "Liam@example.test", "grace@example.test", "liam@example.test")
		ctx := owBrowserMode(t, app, js)
		owLoad(t, ctx, "open the queue", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries"))

		// A whole address finds both entries, whichever case is typed.
		owSearch(t, ctx, js, "liam@example.test")
		owWantRows(t, ctx, "search for liam@", ids["Liam@example.test"], ids["liam@example.test"])
		owSearch(t, ctx, js, "LIAM@example.test")
		owWantRows(t, ctx, "search for LIAM@", ids["Liam@example.test"], ids["liam@example.test"])

		// Each entry's page links to the other.
		entryPage := "/owner/programs/" + app.Demo.ID + "/entries/"
		owLoad(t, ctx, "open Liam@", chromedp.Navigate(app.URL+entryPage+ids["Liam@example.test"]))
		if got := owEval[string](t, ctx, `Array.from(document.querySelectorAll('[data-testid="case-twin-link"]')).map(a => a.getAttribute('href') + ' ' + a.textContent).join('|')`); got != entryPage+ids["liam@example.test"]+" liam@example.test" {
			t.Fatalf("Liam@'s page links to %q, want only liam@example.test", got)
		}
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="case-twins"]').textContent`); !strings.Contains(got, "exactly as typed") {
			t.Errorf("the case note says %q", got)
		}
		owScreenshot(t, ctx, "owner-entry-case-twins")
		owLoad(t, ctx, "follow the link", chromedp.Click(chromedp.CSS(`[data-testid="case-twin-link"]`)))
		if got := owEval[string](t, ctx, `document.querySelector('#entry-title').textContent`); got != "liam@example.test" {
			t.Fatalf("the link led to %q", got)
		}
		if got := owCountIn(t, ctx, `[data-testid="case-twin-link"][href="`+entryPage+ids["Liam@example.test"]+`"]`); got != 1 {
			t.Errorf("liam@'s page links back %d times, want 1", got)
		}
		// An entry with no such twin shows no note.
		owLoad(t, ctx, "open grace@", chromedp.Navigate(app.URL+entryPage+ids["grace@example.test"]))
		if got := owCountIn(t, ctx, `[data-testid="case-twins"]`); got != 0 {
			t.Errorf("grace@'s page shows %d case notes", got)
		}
	})
}

func TestBrowser_MeSaysWhenAWithdrawnEntryCanJoinAgain(t *testing.T) {
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			app := MustStartApp(t)
			const email = "leaving@example.test"
			newAccessKit(app).entry(t, app.Demo, email)
			ctx := adbrowser.MustNew(t, mode.opts...)
			onPhone(t, ctx)

			mustNavigate(t, ctx, "open /me signed out", chromedp.Navigate(app.URL+"/me"))
			signInThroughForm(t, ctx, email)
			mustNavigate(t, ctx, "click Withdraw", chromedp.Click(chromedp.CSS(`[data-slug="demo"] [data-testid="withdraw-link"]`)))
			mustNavigate(t, ctx, "confirm", chromedp.Click(chromedp.CSS(`[data-testid="withdraw-form"] button`)))

			// The date is the entry's own erase_after.
			var eraseAfter int64
			if err := app.DB.View(t.Context(), func(tx *store.Tx) error {
				return tx.QueryRow(`SELECT erase_after FROM entries WHERE program_id = ? AND email_key = ?`, app.Demo.ID, email).Scan(&eraseAfter)
			}); err != nil {
				t.Fatal(err)
			}
			date := store.FromMillis(eraseAfter).UTC().Format("2 January 2006")
			got := mustText(t, ctx, `[data-slug="demo"] [data-testid="entry-next"]`)
			for _, want := range []string{"cannot join it again until the address is erased on " + date, "says the request was received"} {
				if !strings.Contains(got, want) {
					t.Errorf("the withdrawn card says %q: want %q", got, want)
				}
			}
			mustFitWidth(t, ctx, "/me withdrawn", phoneWidth)
			mustScreenshot(t, ctx, "me-withdrawn-"+strings.ReplaceAll(mode.name, " ", "-"))
		})
	}
}
