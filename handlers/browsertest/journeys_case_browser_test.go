package browsertest

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
			newAccessKit(app).Entry(t, app.Demo, "Liam@example.test")
			ctx := adbrowser.MustNew(t, mode.opts...)
			holdDevKey(t, ctx, app)
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
			newAccessKit(app).Entry(t, app.Demo, email)
			ctx := adbrowser.MustNew(t, mode.opts...)
			holdDevKey(t, ctx, app)
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
			date := store.FromMillis(eraseAfter).UTC().Format("2 Jan 2006")
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

func TestBrowser_CreatingAProgramExplainsCapsMakesTheAddressAndPublishingSaysWhatOpensSignup(t *testing.T) {
	jsModes(t, func(t *testing.T, js bool) {
		app := MustStartApp(t, withClerk())
		ctx := owBrowserMode(t, app, js)
		owLoad(t, ctx, "open the console", chromedp.Navigate(app.URL+"/owner"))
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#create-title`))); err != nil {
			t.Fatalf("open the create form: %v", err)
		}
		// The caps say what holds a place: declined entries too.
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="create-caps"]').textContent`); !strings.Contains(got, "declined entries too") {
			t.Errorf("the caps say %q: want that declined entries keep their places", got)
		}
		// The address name comes from the name: left empty, the server makes
		// it, with or without script.
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`[data-testid="create-program"] #name`), "Nimbus Beta!")); err != nil {
			t.Fatalf("type the name: %v", err)
		}
		slug := owEval[string](t, ctx, `document.querySelector('[data-testid="create-slug"]').value`)
		if slug != "" {
			t.Errorf("the address name reads %q before submitting, want it left empty", slug)
		}
		if got := owEval[string](t, ctx, `document.querySelector('#slug-help').textContent`); !strings.Contains(got, "Leave it empty to make it from the program name") {
			t.Errorf("the address hint says %q", got)
		}
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`[data-testid="create-program"] #purpose`), "Early access to Nimbus.")); err != nil {
			t.Fatalf("type the purpose: %v", err)
		}
		owScreenshot(t, ctx, "owner-create-program")
		url := owLoad(t, ctx, "create", chromedp.Click(chromedp.CSS(`[data-testid="create-program"] button[type="submit"]`)))
		p, err := programAt(t, app, "nimbus-beta")
		if err != nil {
			t.Fatalf("no program at nimbus-beta after creating (%s): %v", url, err)
		}
		if want := app.URL + "/owner/programs/" + p.ID + "/settings"; url != want {
			t.Fatalf("creating led to %s, want %s", url, want)
		}
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="flash"]').textContent`); !strings.Contains(got, "then switch on \u201cSignup open\u201d") {
			t.Errorf("after creating the page says %q", got)
		}

		// The notice form does not ask for the purpose again: it shows it.
		if got := owCountIn(t, ctx, `[data-testid="notice-form"] [name="purpose"]`); got != 0 {
			t.Errorf("the notice form still asks for the purpose (%d fields)", got)
		}
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="notice-purpose"]').textContent`); !strings.Contains(got, "Early access to Nimbus.") {
			t.Errorf("the notice form shows the purpose as %q", got)
		}
		for sel, text := range map[string]string{"#contactText": "By hand, once.", "#retentionText": "Until the program ends."} {
			if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`[data-testid="notice-form"] `+sel), text)); err != nil {
				t.Fatalf("type %s: %v", sel, err)
			}
		}
		owLoad(t, ctx, "publish", chromedp.Click(chromedp.CSS(`[data-testid="notice-form"] button[type="submit"]`)))
		got := owEval[string](t, ctx, `document.querySelector('[data-testid="flash"]').textContent`)
		if strings.Contains(got, "from now on") || !strings.Contains(got, "Signup is still closed") || !strings.Contains(got, "\u201cSignup open\u201d") {
			t.Errorf("publishing on a closed program says %q: want what is still needed to open", got)
		}
		owScreenshot(t, ctx, "owner-published-closed")
		if p, err = programAt(t, app, "nimbus-beta"); err != nil || p.CurrentNoticeVersion != 1 || p.Purpose != "Early access to Nimbus." {
			t.Fatalf("after publishing: %+v, %v", p, err)
		}

		// On an open program the same form says new signups see it.
		owLoad(t, ctx, "open the demo's settings", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/settings"))
		owLoad(t, ctx, "publish on the demo", chromedp.Click(chromedp.CSS(`[data-testid="notice-form"] button[type="submit"]`)))
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="flash"]').textContent`); !strings.Contains(got, "New signups see it from now on") {
			t.Errorf("publishing on an open program says %q", got)
		}
	})
}

func TestBrowser_AuditLogFilterThatFindsNoEntryShowsNoEvents(t *testing.T) {
	jsModes(t, func(t *testing.T, js bool) {
		app := MustStartApp(t, withClerk())
		k := newAccessKit(app)
		k.Entry(t, app.Demo, "Liam@example.test")
		k.Entry(t, app.Demo, "grace@example.test")
		ctx := owBrowserMode(t, app, js)
		owLoad(t, ctx, "open the audit log", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/events"))
		if n := owCountIn(t, ctx, `[data-testid="event"]`); n < 2 {
			t.Fatalf("the unfiltered log shows %d events, want the two signups at least", n)
		}
		// A prefix, and the address in another letter case: each is refused
		// with its reason and no events under it.
		for _, typed := range []string{"Liam", "liam@example.test"} {
			if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`[data-testid="filter-entry"]`), typed)); err != nil {
				t.Fatalf("type %q: %v", typed, err)
			}
			resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`[data-testid="event-filter"] [data-testid="filter-submit"]`)))
			if err != nil || resp == nil || resp.Status != 400 {
				t.Fatalf("filter by %q: %+v, %v; want the form again with 400", typed, resp, err)
			}
			if got := owEval[string](t, ctx, `document.querySelector('[data-testid="event-filter"] [data-testid="error-summary"]').textContent`); got == "" {
				t.Fatalf("filter by %q: no error shown", typed)
			}
			if n := owCountIn(t, ctx, `[data-testid="event"]`); n != 0 {
				t.Errorf("filter by %q shows the error and %d events of the unfiltered log, want none", typed, n)
			}
			if got := owEval[string](t, ctx, `document.querySelector('[data-testid="no-events"]').textContent`); !strings.Contains(got, "could not be applied") {
				t.Errorf("filter by %q: the results say %q", typed, got)
			}
			if got := owEval[string](t, ctx, `document.querySelector('[data-testid="filter-entry"]').value`); got != typed {
				t.Errorf("the field reads %q after the refusal, want %q", got, typed)
			}
		}
		owScreenshot(t, ctx, "owner-audit-filter-refused")
		// The address as typed at signup finds its events.
		if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`[data-testid="filter-entry"]`), "Liam@example.test")); err != nil {
			t.Fatal(err)
		}
		owLoad(t, ctx, "filter by the exact address", chromedp.Click(chromedp.CSS(`[data-testid="event-filter"] [data-testid="filter-submit"]`)))
		if n := owCountIn(t, ctx, `[data-testid="event"]`); n != 1 {
			t.Errorf("the exact address shows %d events, want its one signup", n)
		}
	})
}

func TestBrowser_DecliningAsksForTheReasonInTheConfirmationForOneEntryAndForMany(t *testing.T) {
	jsModes(t, func(t *testing.T, js bool) {
		app := MustStartApp(t, withClerk())
		w := owEntriesInOrder(t, app, store.StateWaiting, "w0@example.com", "w1@example.com", "one@example.com")
		ctx := owBrowserMode(t, app, js)
		queue := app.URL + "/owner/programs/" + app.Demo.ID + "/entries"
		owLoad(t, ctx, "open the queue", chromedp.Navigate(queue))
		// The queue's footer no longer asks for a reason to decline.
		if n := owCountIn(t, ctx, `[data-testid="bulk-decline"] select`); n != 0 {
			t.Fatalf("the footer's decline has %d reason fields, want none", n)
		}
		for _, e := range []string{"w0@example.com", "w1@example.com"} {
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`input[name="entryIds"][value="`+w[e]+`"]`))); err != nil {
				t.Fatalf("choose %s: %v", e, err)
			}
		}
		// The confirmation asks for it: in the dialog with script, on its
		// page without.
		where := `[data-testid="confirm"]`
		if js {
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="bulk-decline-submit"]`))); err != nil {
				t.Fatalf("decline: %v", err)
			}
			where = `dialog[open] [data-testid="confirm"]`
			owWaitFor(t, ctx, "the confirmation dialog", `!!document.querySelector('`+where+` [data-testid="confirm-reason"]')`)
		} else {
			owLoad(t, ctx, "decline", chromedp.Click(chromedp.CSS(`[data-testid="bulk-decline-submit"]`)))
		}
		if n := owCountIn(t, ctx, where+` select[name="declineReason"][required]`); n != 1 {
			t.Fatalf("the confirmation has %d required reason fields, want 1", n)
		}
		owScreenshot(t, ctx, "owner-bulk-decline-reason")
		// Sent without one (the browser's own check set aside), it is asked
		// again, with the message in the confirmation and nothing changed.
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('`+where+` [data-testid="confirm-reason"]').removeAttribute('required'), true`)); err != nil {
			t.Fatal(err)
		}
		resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(where+` [data-testid="confirm-submit"]`)))
		if err != nil || resp == nil || resp.Status != 400 {
			t.Fatalf("confirm without a reason: %+v, %v; want the confirmation again with 400", resp, err)
		}
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="confirm"] [data-testid="error-summary"]').textContent`); !strings.Contains(got, "Choose a reason for declining") {
			t.Fatalf("the confirmation says %q", got)
		}
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="confirm-entries"]').textContent`); !strings.Contains(got, "w0@example.com") || !strings.Contains(got, "w1@example.com") {
			t.Fatalf("the confirmation asked again names %q", got)
		}
		for _, e := range []string{"w0@example.com", "w1@example.com"} {
			if got := owEntryState(t, app, w[e]); got != store.StateWaiting {
				t.Fatalf("%s is %s after a confirmation without a reason", e, got)
			}
		}
		if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`[data-testid="confirm-reason"]`), "capacity")); err != nil {
			t.Fatal(err)
		}
		owLoad(t, ctx, "confirm with a reason", chromedp.Click(chromedp.CSS(`[data-testid="confirm-submit"]`)))
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="flash"]').textContent`); !strings.Contains(got, "Declined 2 entries") {
			t.Fatalf("flash %q", got)
		}

		// One entry: the same question in the same place.
		owLoad(t, ctx, "open one entry", chromedp.Navigate(queue+"/"+w["one@example.com"]))
		if js {
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="decline-start"]`))); err != nil {
				t.Fatal(err)
			}
			owWaitFor(t, ctx, "the confirmation dialog", `!!document.querySelector('dialog[open] [data-testid="confirm-reason"]')`)
		} else {
			owLoad(t, ctx, "decline one", chromedp.Click(chromedp.CSS(`[data-testid="decline-start"]`)))
		}
		if n := owCountIn(t, ctx, where+` select[data-testid="confirm-reason"][required]`); n != 1 {
			t.Fatalf("one entry's confirmation has %d required reason fields, want 1", n)
		}
	})
}

// programAt is the program at slug, as its owner reads it.
func programAt(tb testing.TB, app *testApp, slug string) (*store.Program, error) {
	tb.Helper()
	var id string
	if err := app.DB.View(tb.Context(), func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT id FROM programs WHERE public_slug = ?`, slug).Scan(&id)
	}); err != nil {
		return nil, err
	}
	return app.DB.ProgramByID(tb.Context(), ownerActorOf(app.OwnerID), id)
}
