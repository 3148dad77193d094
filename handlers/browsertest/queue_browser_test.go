package browsertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"admit/internal/browser"
)

// The owner's queue, its confirmations and the code page in a real
// browser, with JavaScript (htmx and owner.js) and without.

// jsModes runs f once with JavaScript and once without, each in its own
// app and browser.
func jsModes(t *testing.T, f func(t *testing.T, js bool)) {
	for _, js := range []bool{true, false} {
		name := "javascript"
		if !js {
			name = "no-javascript"
		}
		t.Run(name, func(t *testing.T) { f(t, js) })
	}
}

// owBrowserMode starts Chromium for the owner, with JavaScript or without.
func owBrowserMode(tb testing.TB, app *testApp, js bool) context.Context {
	tb.Helper()
	if js {
		return owBrowserAsOwner(tb, app)
	}
	return owBrowserAsOwner(tb, app, browser.WithJavaScriptDisabled())
}

// owEntriesInOrder inserts the addresses in this order, an hour apart, and
// returns their IDs by address.
func owEntriesInOrder(tb testing.TB, app *testApp, state string, emails ...string) map[string]string {
	tb.Helper()
	ids := map[string]string{}
	for _, email := range emails {
		app.Clock.Set(app.Clock.Now().Add(time.Hour))
		ids[email] = mustInsertEntry(tb, app.DB, app.Demo, email, state)
	}
	return ids
}

// owRows is the IDs of the queue rows shown, in order.
func owRows(tb testing.TB, ctx context.Context) string {
	tb.Helper()
	return owEval[string](tb, ctx, `Array.from(document.querySelectorAll('[data-testid="queue-row"]')).map(function (r) { return r.dataset.entryId; }).join(",")`)
}

// owWantRows waits until the queue shows exactly these entries, in order.
func owWantRows(tb testing.TB, ctx context.Context, what string, ids ...string) {
	tb.Helper()
	want := strings.Join(ids, ",")
	if err := browser.WaitFor(ctx, `Array.from(document.querySelectorAll('[data-testid="queue-row"]')).map(function (r) { return r.dataset.entryId; }).join(",") === `+jsQuote(want),
		browserWait); err != nil {
		tb.Fatalf("%s: rows %q, want %q", what, owRows(tb, ctx), want)
	}
}

// owSearch types q into the queue's search and submits it: an htmx swap
// with JavaScript, a page load without.
func owSearch(tb testing.TB, ctx context.Context, js bool, q string) {
	tb.Helper()
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`[data-testid="filter-q"]`), q)); err != nil {
		tb.Fatalf("type %q: %v", q, err)
	}
	click := chromedp.Click(chromedp.CSS(`[data-testid="filter-submit"]`))
	if js {
		if err := chromedp.Do(ctx, click); err != nil {
			tb.Fatalf("search %q: %v", q, err)
		}
		return
	}
	owLoad(tb, ctx, "search "+q, click)
}

func TestBrowser_QueueSearchFindsAnEntryByFullAddressAndByLocalPartPrefix(t *testing.T) {
	t.Parallel()
	jsModes(t, func(t *testing.T, js bool) {
		app := MustStartApp(t, withClerk())
		ids := owEntriesInOrder(t, app, "waiting", "ada.lovelace@example.com", "Ada.Byron@example.org", "grace@example.com", "adam@example.net")
		ctx := owBrowserMode(t, app, js)
		owLoad(t, ctx, "open the queue", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries"))
		owWantRows(t, ctx, "the whole queue", ids["ada.lovelace@example.com"], ids["Ada.Byron@example.org"], ids["grace@example.com"], ids["adam@example.net"])

		// A whole address, the domain typed in capitals: signup's normal form.
		owSearch(t, ctx, js, "ada.lovelace@EXAMPLE.COM")
		owWantRows(t, ctx, "search by address", ids["ada.lovelace@example.com"])
		if got := owEval[string](t, ctx, `location.search`); !strings.Contains(got, "q=") || strings.Contains(got, "from=") ||
			strings.Contains(got, "to=") || strings.Contains(got, "limit=") {
			t.Fatalf("the search's address is %q: want the search and no empty filter", got)
		}
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="filter-q"]').value`); got != "ada.lovelace@EXAMPLE.COM" {
			t.Fatalf("the search field shows %q", got)
		}

		// The start of a local part, in another letter case: every match,
		// in address order, and nothing else.
		owSearch(t, ctx, js, "ADA")
		owWantRows(t, ctx, "search by prefix", ids["Ada.Byron@example.org"], ids["ada.lovelace@example.com"], ids["adam@example.net"])
		owSearch(t, ctx, js, "ada.b")
		owWantRows(t, ctx, "a longer prefix", ids["Ada.Byron@example.org"])
		owSearch(t, ctx, js, "nobody")
		owWaitFor(t, ctx, "the empty result", `!!document.querySelector('[data-testid="queue-empty"]')`)
		owScreenshot(t, ctx, "owner-queue-search")
	})
}

func TestBrowser_QueueChooseAllAndBulkDeclineChangeExactlyTheChosenWaitingEntries(t *testing.T) {
	t.Parallel()
	jsModes(t, func(t *testing.T, js bool) {
		app := MustStartApp(t, withClerk())
		w := owEntriesInOrder(t, app, "waiting", "w0@example.com", "w1@example.com", "w2@example.com", "w3@example.com")
		sel := owEntriesInOrder(t, app, "selected", "picked@example.com")["picked@example.com"]
		ctx := owBrowserMode(t, app, js)
		// The waiting tab, three a page: w3 is on the next page.
		owLoad(t, ctx, "open the queue", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries?state=waiting&limit=3"))
		owWantRows(t, ctx, "the first page", w["w0@example.com"], w["w1@example.com"], w["w2@example.com"])

		if js {
			if got := owEval[bool](t, ctx, `document.querySelector('[data-testid="choose-all"]').hidden`); !got {
				t.Fatal("with JavaScript the no-script 'All' link is still shown")
			}
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="select-all"]`))); err != nil {
				t.Fatalf("choose all: %v", err)
			}
		} else {
			owLoad(t, ctx, "choose all", chromedp.Click(chromedp.CSS(`[data-testid="choose-all"]`)))
		}
		if got := owEval[int](t, ctx, `document.querySelectorAll('input[name="entryIds"]:checked').length`); got != 3 {
			t.Fatalf("chosen after 'all': %d, want the page's 3", got)
		}
		// Decline asks first, naming the three entries, and asks for the
		// reason there; nothing changes yet.
		if js {
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="bulk-decline-submit"]`))); err != nil {
				t.Fatalf("decline: %v", err)
			}
			owWaitFor(t, ctx, "the confirmation dialog", `!!document.querySelector('dialog[open] [data-testid="confirm-entries"]')`)
		} else {
			owLoad(t, ctx, "decline", chromedp.Click(chromedp.CSS(`[data-testid="bulk-decline-submit"]`)))
		}
		listed := owEval[string](t, ctx, `document.querySelector('[data-testid="confirm-entries"]').textContent`)
		for _, e := range []string{"w0@example.com", "w1@example.com", "w2@example.com"} {
			if !strings.Contains(listed, e) {
				t.Fatalf("the confirmation does not name %s: %q", e, listed)
			}
		}
		if strings.Contains(listed, "w3@example.com") {
			t.Fatal("the confirmation names an entry on another page")
		}
		if got := owEntryState(t, app, w["w0@example.com"]); got != "waiting" {
			t.Fatalf("before confirming, w0 is %s", got)
		}
		owScreenshot(t, ctx, "owner-bulk-decline-confirm")
		if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`[data-testid="confirm-form"] [data-testid="confirm-reason"]`), "capacity")); err != nil {
			t.Fatalf("reason: %v", err)
		}
		owLoad(t, ctx, "confirm", chromedp.Click(chromedp.CSS(`[data-testid="confirm-submit"]`)))
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="flash"]').textContent`); !strings.Contains(got, "Declined 3 entries") {
			t.Fatalf("flash %q", got)
		}
		for _, e := range []string{"w0@example.com", "w1@example.com", "w2@example.com"} {
			if got := owEntryState(t, app, w[e]); got != "declined" {
				t.Fatalf("%s is %s, want declined", e, got)
			}
		}
		if got := owEntryState(t, app, w["w3@example.com"]); got != "waiting" {
			t.Fatalf("the entry on the next page is %s, want waiting", got)
		}
		if got := owEntryState(t, app, sel); got != "selected" {
			t.Fatalf("the selected entry is %s, want selected", got)
		}
		if n := owCount(t, app, `SELECT count(*) FROM audit_events WHERE event_type = 'declined'
			AND json_extract(details, '$.reason') = 'capacity'`); n != 3 {
			t.Fatalf("declined events=%d, want 3", n)
		}
	})
}

// dangerousAction is one action that asks first, on an entry's page (or,
// for retiring, the program's page).
type dangerousAction struct {
	kind   string // the data-testid prefix and the confirmation's kind
	entry  string // "" for the program page
	email  string // whom (or which program) the confirmation names
	reason string // chosen in the confirmation, "" when none is asked
	done   func(t *testing.T) bool
}

func TestBrowser_DangerousActionsNeedTheirConfirmationAndDoNothingWhenCancelled(t *testing.T) {
	t.Parallel()
	jsModes(t, func(t *testing.T, js bool) {
		app := MustStartApp(t, withClerk())
		pid := app.Demo.ID
		ids := owEntriesInOrder(t, app, "waiting", "decline-me@example.com", "withdraw-me@example.com")
		invited := mustInsertEntry(t, app.DB, app.Demo, "revoke-code@example.com", "selected")
		inv := owIssue(t, app, pid, invited).Invitation.ID
		granted := mustInsertEntry(t, app.DB, app.Demo, "revoke-access@example.com", "selected")
		_, grant := owGrant(t, app, pid, granted, "revoke-access@example.com", "user_revoke_access")
		actions := []dangerousAction{
			{"decline", ids["decline-me@example.com"], "decline-me@example.com", "not_eligible", func(t *testing.T) bool {
				return owEntryState(t, app, ids["decline-me@example.com"]) == "declined"
			}},
			{"withdraw", ids["withdraw-me@example.com"], "withdraw-me@example.com", "applicant_request", func(t *testing.T) bool {
				return owEntryState(t, app, ids["withdraw-me@example.com"]) == "withdrawn"
			}},
			{"revoke-invitation", invited, "revoke-code@example.com", "", func(t *testing.T) bool {
				return owCount(t, app, `SELECT count(*) FROM invitations WHERE id = ? AND state = 'revoked'`, inv) == 1
			}},
			{"revoke-grant", granted, "revoke-access@example.com", "", func(t *testing.T) bool {
				return owCount(t, app, `SELECT count(*) FROM grants WHERE id = ? AND active = 0`, grant) == 1
			}},
			{"retire", "", app.Demo.Name, "", func(t *testing.T) bool {
				return mustOwnerProgram(t, app, pid).RetiredAt != nil
			}},
		}
		ctx := owBrowserMode(t, app, js)
		for i, a := range actions {
			entry := app.URL + "/owner/programs/" + pid + "/entries/" + a.entry
			if a.entry == "" {
				entry = app.URL + "/owner/programs/" + pid + "/settings"
			}
			start := chromedp.Click(chromedp.CSS(`[data-testid="` + a.kind + `-start"]`))
			owLoad(t, ctx, "open "+a.email, chromedp.Navigate(entry))
			audit := owAuditCount(t, app)

			// Ask, then cancel: nothing changes.
			const open = `!!document.querySelector('dialog[open] [data-testid="confirm"]')`
			if js {
				// Counts the dialog's close events, which the browser
				// delivers some time after it closes the dialog.
				owEval[bool](t, ctx, `window.__confirmCloses = 0, document.addEventListener("close", function (e) {
					if (e.target.id === "confirm-dialog") window.__confirmCloses++;
				}, true), true`)
				if err := chromedp.Do(ctx, start); err != nil {
					t.Fatalf("%s: %v", a.kind, err)
				}
				owWaitFor(t, ctx, a.kind+" dialog", open)
				if !owEval[bool](t, ctx, `!!document.activeElement.closest('dialog[open]')`) {
					t.Fatalf("%s: focus is on %s, not in the dialog", a.kind, owEval[string](t, ctx, `document.activeElement.outerHTML.slice(0, 80)`))
				}
				label := owEval[string](t, ctx, `(function () {
					var d = document.querySelector('dialog[open]');
					var l = document.getElementById(d.getAttribute('aria-labelledby'));
					return l && d.contains(l) ? l.textContent : "";
				})()`)
				if !strings.Contains(label, a.email) {
					t.Fatalf("%s: the dialog is labelled %q, without the person", a.kind, label)
				}
				if i == 0 {
					owScreenshot(t, ctx, "owner-confirm-dialog")
				}
				// Escape for two of them, the Cancel button for the others.
				var cancel chromedp.Action[chromedp.Void] = chromedp.KeyEvent(kb.Escape)
				if i%2 == 1 {
					cancel = chromedp.Click(chromedp.CSS(`dialog[open] [data-testid="confirm-cancel"]`))
				}
				if err := chromedp.Do(ctx, cancel); err != nil {
					t.Fatalf("%s: cancel: %v", a.kind, err)
				}
				owWaitFor(t, ctx, a.kind+" dialog closed", `!document.querySelector('dialog[open]')`)
				if got := owEval[string](t, ctx, `document.activeElement.dataset.testid || document.activeElement.tagName`); got != a.kind+"-start" {
					t.Fatalf("%s: after cancelling, focus is on %q, want the button that opened it", a.kind, got)
				}

				// The owner changes their mind and presses the button again
				// at once: Enter after Escape (focus is back on the
				// button), the mouse after Cancel. It opens the dialog
				// every time.
				again := start
				if i%2 == 0 {
					again = chromedp.KeyEvent(kb.Enter)
				}
				if err := chromedp.Do(ctx, again); err != nil {
					t.Fatalf("%s: press again: %v", a.kind, err)
				}
				owWaitFor(t, ctx, a.kind+" dialog after cancelling", `!!document.querySelector('dialog[open]')`)
				owWantDialogOpen(t, ctx, a.kind+" pressed again after cancelling")
				// The first dialog's close event may come only now, after
				// the second opened: it must leave the open dialog alone.
				owWaitFor(t, ctx, a.kind+" first dialog's close event", `window.__confirmCloses >= 1`)
				owWantDialogOpen(t, ctx, a.kind+" after the first dialog's close event")
				// So must one that comes later still: sent here on purpose,
				// so the order the browser only sometimes produces is
				// tested every time.
				owEval[bool](t, ctx, `document.getElementById("confirm-dialog").dispatchEvent(new Event("close")), true`)
				owWantDialogOpen(t, ctx, a.kind+" after a late close event")
			} else {
				owLoad(t, ctx, a.kind+" confirmation", start)
				if got := owEval[string](t, ctx, `document.querySelector('#confirm-title').textContent`); !strings.Contains(got, a.email) {
					t.Fatalf("%s: the confirmation page's title %q does not name the person", a.kind, got)
				}
				if i == 0 {
					owScreenshot(t, ctx, "owner-confirm-page")
				}
				owLoad(t, ctx, a.kind+" cancel", chromedp.Click(chromedp.CSS(`[data-testid="confirm-cancel"]`)))
				if got := owEval[string](t, ctx, `location.href`); got != entry {
					t.Fatalf("%s: cancel led to %s", a.kind, got)
				}
			}
			if a.done(t) || owAuditCount(t, app) != audit {
				t.Fatalf("%s: cancelling the confirmation changed something", a.kind)
			}

			// Ask again (with JavaScript, the dialog is open again
			// already) and confirm.
			if !js {
				owLoad(t, ctx, a.kind+" confirmation", start)
			}
			if a.reason != "" {
				if got := owEval[string](t, ctx, `document.querySelector('#confirm-reason').value`); got != "" {
					t.Fatalf("%s: reason %q is chosen beforehand", a.kind, got)
				}
				if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#confirm-reason`), a.reason)); err != nil {
					t.Fatalf("%s: reason: %v", a.kind, err)
				}
			}
			if a.kind == "retire" {
				// Retiring also asks for the program's address to be typed.
				if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#confirm-text`), app.Demo.Slug)); err != nil {
					t.Fatalf("type the address: %v", err)
				}
			}
			owLoad(t, ctx, a.kind+" confirm", chromedp.Click(chromedp.CSS(`[data-testid="confirm-submit"]`)))
			if !a.done(t) {
				t.Fatalf("%s: confirming did not do it", a.kind)
			}
		}
	})
}

// owWantDialogOpen fails unless the confirmation dialog is open, holds the
// confirmation and has the keyboard focus.
func owWantDialogOpen(tb testing.TB, ctx context.Context, what string) {
	tb.Helper()
	got := owEval[string](tb, ctx, `(function () {
		var d = document.getElementById("confirm-dialog");
		if (!d || !d.open) return "the dialog is closed";
		if (!d.querySelector('[data-testid="confirm"]')) return "the open dialog is empty";
		if (!d.contains(document.activeElement)) return "focus is on " + document.activeElement.outerHTML.slice(0, 80);
		return "";
	})()`)
	if got != "" {
		tb.Fatalf("%s: %s", what, got)
	}
}

func TestBrowser_QueueFocusIsInTheTableAfterAnHTMXPageChangeOrAction(t *testing.T) {
	t.Parallel()
	app := MustStartApp(t, withClerk())
	w := owEntriesInOrder(t, app, "waiting", "f0@example.com", "f1@example.com", "f2@example.com", "f3@example.com", "f4@example.com")
	ctx := owBrowserAsOwner(t, app)
	owLoad(t, ctx, "open the queue", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries?limit=2"))
	owEval[bool](t, ctx, `window.__queueMarker = true`)
	focusInTable := `document.activeElement !== document.body && !!document.activeElement.closest('#queue-block table')`

	steps := []struct {
		what, click string
		rows        []string
	}{
		{"next page", `[data-testid="queue-next"]`, []string{w["f2@example.com"], w["f3@example.com"]}},
		{"next page again", `[data-testid="queue-next"]`, []string{w["f4@example.com"]}},
		{"previous page", `[data-testid="queue-prev"]`, []string{w["f2@example.com"], w["f3@example.com"]}},
		{"first page", `[data-testid="queue-first"]`, []string{w["f0@example.com"], w["f1@example.com"]}},
		{"waiting tab", `[data-testid="tab-waiting"]`, []string{w["f0@example.com"], w["f1@example.com"]}},
	}
	for _, st := range steps {
		if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(st.click)), chromedp.KeyEvent(kb.Enter)); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		owWaitFor(t, ctx, st.what+" with focus in the table", focusInTable+` && Array.from(document.querySelectorAll('[data-testid="queue-row"]')).map(function (r) { return r.dataset.entryId; }).join(",") === `+jsQuote(strings.Join(st.rows, ",")))
	}
	if !owEval[bool](t, ctx, `window.__queueMarker === true`) {
		t.Fatal("paging reloaded the page instead of swapping the queue")
	}

	// An action swaps the queue too, and focus comes back to it.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`input[name="entryIds"][value="`+w["f0@example.com"]+`"]`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid="bulk-reason"]`), "meets_policy"),
		chromedp.Focus(chromedp.CSS(`[data-testid="bulk-submit"]`)), chromedp.KeyEvent(kb.Enter),
	); err != nil {
		t.Fatalf("select: %v", err)
	}
	owWaitFor(t, ctx, "the selection with focus in the table", focusInTable+` && !!document.querySelector('[data-testid="flash"]')`)
	if got := owEntryState(t, app, w["f0@example.com"]); got != "selected" {
		t.Fatalf("f0 is %s", got)
	}
	owScreenshot(t, ctx, "owner-queue-focus")
}

func TestBrowser_CodePageSurvivesBackWithoutResubmittingAndNeverShowsTheCodeTwice(t *testing.T) {
	t.Parallel()
	jsModes(t, func(t *testing.T, js bool) {
		app := MustStartApp(t, withClerk())
		e := mustInsertEntry(t, app.DB, app.Demo, "code@example.com", "selected")
		ctx := owBrowserMode(t, app, js)
		entry := app.URL + "/owner/programs/" + app.Demo.ID + "/entries/" + e
		owLoad(t, ctx, "open the entry", chromedp.Navigate(entry))
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="seats-left"]').textContent`); !strings.Contains(got, "seats left") {
			t.Fatalf("no seats shown before Issue: %q", got)
		}
		codeURL := owLoad(t, ctx, "issue", chromedp.Click(chromedp.CSS(`[data-testid="issue-submit"]`)))
		code := strings.TrimSpace(owEval[string](t, ctx, `document.querySelector('[data-testid="invitation-code"]').textContent`))
		if len(code) != 43 {
			t.Fatalf("code %q is not 43 characters", code)
		}
		if strings.Contains(codeURL, code) || !strings.Contains(codeURL, "/invitations/") {
			t.Fatalf("the code page's address is %q", codeURL)
		}
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="redeem-url"]').textContent`); got != app.URL+"/redeem" {
			t.Fatalf("redeem URL %q", got)
		}
		if msg := owEval[string](t, ctx, `document.querySelector('[data-testid="invitation-message"]').value`); !strings.Contains(msg, code) ||
			!strings.Contains(msg, app.URL+"/redeem") || !strings.Contains(msg, "code@example.com") {
			t.Fatalf("the message lacks the code, the URL or the address: %q", msg)
		}
		if js {
			if owEval[bool](t, ctx, `document.querySelector('[data-testid="copy-message"]').hidden`) {
				t.Fatal("with JavaScript the copy button is hidden")
			}
		} else if !owEval[bool](t, ctx, `document.querySelector('[data-testid="copy-message"]').hidden`) {
			t.Fatal("without JavaScript a copy button that cannot work is shown")
		}
		owScreenshot(t, ctx, "owner-code-page")

		// Away and Back: the page loads again by GET, with no prompt to
		// resubmit, and says the code was shown.
		owLoad(t, ctx, "back to the entry", chromedp.Click(chromedp.CSS(`[data-testid="back-to-entry"]`)))
		owBack(t, ctx, codeURL)
		wantShown := func(what string) {
			t.Helper()
			body := owEval[string](t, ctx, `document.body.innerHTML`)
			if strings.Contains(body, code) || !strings.Contains(body, `data-testid="issue-replay"`) || !strings.Contains(body, `data-testid="revoke-reissue"`) {
				t.Fatalf("%s: the page shows the code again (%v), or no notice (%v) and no way to reissue (%v)", what,
					strings.Contains(body, code), strings.Contains(body, `data-testid="issue-replay"`), strings.Contains(body, `data-testid="revoke-reissue"`))
			}
		}
		wantShown("after Back")
		owLoad(t, ctx, "reload", chromedp.Reload())
		wantShown("after reload")
		// Back once more is the entry page before the form was sent,
		// loaded again without a prompt.
		owBack(t, ctx, entry)
		if !owEval[bool](t, ctx, `!!document.querySelector('[data-testid="entry-block"]')`) {
			t.Fatal("Back before the code page does not show the entry")
		}
		hist, err := chromedp.Call(ctx, page.GetNavigationHistory, cdp.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hist.Entries {
			if strings.Contains(h.URL, code) {
				t.Fatalf("a history entry holds the code: %s", h.URL)
			}
		}
		if n := owCount(t, app, `SELECT count(*) FROM invitations WHERE entry_id = ?`, e); n != 1 {
			t.Fatalf("invitations=%d, want 1: a form was sent again", n)
		}
		if strings.Contains(app.Logs.String(), code) {
			t.Fatal("a log line holds the code")
		}
	})
}

// goBack goes one step back in the tab's history, as the Back button does.
// It asks the browser, not the page: a script's history.back() navigates
// away while its own evaluation is being answered, which DevTools may
// report as an error ("Inspected target navigated or closed").
func goBack(tb testing.TB, ctx context.Context) {
	tb.Helper()
	hist, err := chromedp.Call(ctx, page.GetNavigationHistory, cdp.Empty{})
	if err != nil || hist.CurrentIndex < 1 {
		tb.Fatalf("history: %+v %v", hist, err)
	}
	if _, err := chromedp.Call(ctx, page.NavigateToHistoryEntry,
		page.NavigateToHistoryEntryParams{EntryID: hist.Entries[hist.CurrentIndex-1].ID}); err != nil {
		tb.Fatalf("Back: %v", err)
	}
}

// owBack goes one step back in the tab's history and waits until the page
// at want has loaded; a browser that had to resend a form would stop at its
// "confirm form resubmission" error page instead.
func owBack(tb testing.TB, ctx context.Context, want string) {
	tb.Helper()
	goBack(tb, ctx)
	cond := `location.href === ` + jsQuote(want) + ` && document.readyState === "complete" && !!document.querySelector("main")`
	if err := browser.WaitFor(ctx, cond, browserWait); err != nil {
		tb.Fatalf("after Back the page is %s, want %s: %v", owEval[string](tb, ctx, `location.href + " " + document.title`), want, err)
	}
}
