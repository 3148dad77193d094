package browsertest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"admit/internal/browser"
	"admit/store"
)

// TestBrowser_DeliveryFormWithoutJavaScript records a send on the entry
// page of a phone-sized browser with JavaScript off: the channel is a
// labelled choice, a refused reference shows its message right beside the
// field with everything kept, and the corrected form records the send.
func TestBrowser_DeliveryFormWithoutJavaScript(t *testing.T) {
	t.Parallel()
	app := MustStartApp(t, withClerk())
	entry := dlSelectedEntry(t, app, "dl-browser@example.com")
	owIssue(t, app, app.Demo.ID, entry)
	ctx := owBrowserAsOwner(t, app, browser.WithJavaScriptDisabled())
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(phoneW, phoneH, chromedp.EmulatePortrait,
		chromedp.EmulateMobile, chromedp.EmulateScale(2))); err != nil {
		t.Fatalf("phone viewport: %v", err)
	}
	owLoad(t, ctx, "open the entry", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries/"+entry))
	if got := owEval[string](t, ctx, `typeof window.htmx`); got != "undefined" {
		t.Fatalf("typeof htmx=%q: JavaScript is not off", got)
	}
	labels := owEval[[]string](t, ctx, `[...document.querySelectorAll('#channel option:not([disabled])')].map(o => o.textContent)`)
	if got, want := strings.Join(labels, "|"), "Email|Text message (SMS)|Chat or messaging app|In person|Other"; got != want {
		t.Fatalf("channel choices %q, want %q", got, want)
	}
	owWantFits(t, ctx, "the entry page", phoneW)

	// A reference holding an address is refused beside its field.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#channel`), store.ChannelChat),
		chromedp.SendKeys(chromedp.CSS(`#reference`), "dl-browser@example.com"),
	); err != nil {
		t.Fatalf("fill the form: %v", err)
	}
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`[data-testid="delivery-form"] button[type="submit"]`)))
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	if resp == nil || resp.Status != 400 {
		t.Fatalf("refused form answered %+v, want 400", resp)
	}
	if got := owEval[string](t, ctx, `document.querySelector('#reference').nextElementSibling.dataset.testid`); got != "reference-error" {
		t.Fatalf("the element after the reference field is %q, want its error", got)
	}
	if got := owEval[string](t, ctx, `document.querySelector('[data-testid="reference-error"]').textContent`); !strings.Contains(got, "@") {
		t.Fatalf("reference error %q", got)
	}
	if got := owEval[string](t, ctx, `document.querySelector('#reference').value`); got != "dl-browser@example.com" {
		t.Fatalf("reference field holds %q after the refusal", got)
	}
	if got := owEval[string](t, ctx, `document.querySelector('#channel').value`); got != store.ChannelChat {
		t.Fatalf("channel field holds %q after the refusal", got)
	}
	if got := owEval[bool](t, ctx, `document.querySelector('#reference').getAttribute('aria-invalid') === 'true'`); !got {
		t.Fatal("the reference field is not marked invalid")
	}
	owWantFits(t, ctx, "the refused form", phoneW)
	owScreenshot(t, ctx, "owner-delivery-refused")

	// Corrected, the same form records the send. (The page is fresh from
	// the server, so the field's value follows its attribute.)
	if err := chromedp.Do(ctx, chromedp.SetAttributeValue(chromedp.CSS(`#reference`), "value", "batch 3")); err != nil {
		t.Fatalf("correct the reference: %v", err)
	}
	owLoad(t, ctx, "submit the corrected form", chromedp.Click(chromedp.CSS(`[data-testid="delivery-form"] button[type="submit"]`)))
	if got := owEval[string](t, ctx, `document.querySelector('[data-testid="invitation"]').textContent`); !strings.Contains(got, "via Chat or messaging app") || !strings.Contains(got, "batch 3") {
		t.Fatalf("invitation row %q does not show the recorded send", got)
	}
}
