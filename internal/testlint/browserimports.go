package testlint

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
)

// browserPackages are the imports that make a test drive Chromium.
var browserPackages = []string{"admit/internal/browser", "github.com/chromedp/"}

// BrowserImports finds the test files of dir that import a package that
// drives Chromium: the browser and accessibility tests live in a package of
// their own (handlers/browsertest), so that a package's other tests run
// without them.
func BrowserImports(dir string) ([]Finding, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	var out []Finding
	fs := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fs, file, nil, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, b := range browserPackages {
				if path == b || (strings.HasSuffix(b, "/") && strings.HasPrefix(path, b)) {
					out = append(out, Finding{Pos: fs.Position(imp.Pos()),
						Message: "test file drives a browser (imports " + path + "): it belongs in handlers/browsertest"})
				}
			}
		}
	}
	return out, nil
}
