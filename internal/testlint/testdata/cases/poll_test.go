package cases

import (
	"context"
	"time"

	"github.com/chromedp/chromedp"
)

func pollInPage(ctx context.Context) error {
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`true`, chromedp.WithPollingTimeout(time.Second))) // want "chromedp.Poll waits on the page's own timers"
	if err != nil {
		return err
	}
	_, err = chromedp.Run(ctx, chromedp.PollFunction[bool](`() => true`, nil)) // want "chromedp.PollFunction waits on the page's own timers"
	if err != nil {
		return err
	}
	// Evaluating once is not a poll.
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`true`))
	return err
}
