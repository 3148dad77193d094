package browsertest

import (
	"os"
	"testing"

	"admit/internal/browser"
)

// TestMain stops the Chromium that the browser tests share once they end.
func TestMain(m *testing.M) { os.Exit(browser.RunTests(m)) }
