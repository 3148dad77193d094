package testlint

import (
	"go/ast"
	"strings"

	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/types/typeutil"
)

// inPagePolls are chromedp's waits whose clock runs inside the page.
var inPagePolls = map[string]bool{"Poll": true, "PollFunction": true}

// InPagePoll reports calls of chromedp.Poll and chromedp.PollFunction. Their
// polling and their timeout run on the page's own timers or animation
// frames, which a page with scripts off never runs and a tab that is not
// being painted runs late, so a condition false at first can wait out the
// test's whole deadline. browser.WaitFor polls from Go instead; its own
// package, whose tests show the difference, is not checked.
func InPagePoll(pkgs []*packages.Package) []Finding {
	var out []Finding
	for _, p := range pkgs {
		if strings.TrimSuffix(p.PkgPath, "_test") == "admit/internal/browser" {
			continue
		}
		for _, f := range p.Syntax {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				fn := typeutil.Callee(p.TypesInfo, call)
				if fn == nil || fn.Pkg() == nil || fn.Pkg().Path() != "github.com/chromedp/chromedp" || !inPagePolls[fn.Name()] {
					return true
				}
				out = append(out, Finding{p.Fset.Position(call.Pos()),
					"chromedp." + fn.Name() + " waits on the page's own timers, which never run with scripts off: use browser.WaitFor"})
				return true
			})
		}
	}
	return sortedFindings(out)
}
