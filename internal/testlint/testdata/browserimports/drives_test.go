package browserimports

import (
	"testing"

	"admit/internal/browser"       // want "drives a browser"
	"github.com/chromedp/chromedp" // want "drives a browser"
)

func TestDrives(t *testing.T) { _, _ = browser.MustNew, chromedp.Run }
