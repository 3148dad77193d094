package testlint

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/packages"
)

// failNowMethods end the calling goroutine (runtime.Goexit).
var failNowMethods = map[string]bool{
	"Fatal": true, "Fatalf": true, "FailNow": true,
	"Skip": true, "Skipf": true, "SkipNow": true,
}

// isTesting reports whether t is *testing.T, *testing.B, *testing.F or
// testing.TB.
func isTesting(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg().Path() != "testing" {
		return false
	}
	switch n.Obj().Name() {
	case "T", "B", "F", "TB":
		return true
	}
	return false
}

// directFailNow returns the receiver of a call like t.Fatal(...) on a
// testing value, or nil.
func directFailNow(info *types.Info, call *ast.CallExpr) ast.Expr {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || !failNowMethods[sel.Sel.Name] {
		return nil
	}
	s := info.Selections[sel]
	if s == nil || !isTesting(s.Recv()) {
		return nil
	}
	return sel.X
}

// hasTestingParam reports whether a function literal takes its own test
// (a subtest body, which testing runs on a goroutine of its own).
func hasTestingParam(info *types.Info, ft *ast.FuncType) bool {
	for _, f := range ft.Params.List {
		if tv, ok := info.Types[f.Type]; ok && isTesting(tv.Type) {
			return true
		}
	}
	return false
}

// failNowParams computes, for every function, which of its parameters it
// may call a FailNow-family method on, directly or through other functions.
func failNowParams(ix *index) map[string]map[int]bool {
	out := map[string]map[int]bool{}
	for changed := true; changed; {
		changed = false
		for k, fi := range ix.funcs {
			params := paramIndex(fi.info, fi.decl.Type)
			mark := func(e ast.Expr) {
				obj := identObj(fi.info, e)
				i, ok := params[obj]
				if !ok || out[k][i] {
					return
				}
				if out[k] == nil {
					out[k] = map[int]bool{}
				}
				out[k][i] = true
				changed = true
			}
			ast.Inspect(fi.decl.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					return false // reported where it is, not passed up
				case *ast.FuncLit:
					return !runsElsewhere(fi.info, n)
				case *ast.CallExpr:
					if x := directFailNow(fi.info, n); x != nil {
						mark(x)
					}
					for j := range out[ix.callee(fi.info, n)] {
						if j < len(n.Args) {
							mark(n.Args[j])
						}
					}
				}
				return true
			})
		}
	}
	return out
}

// runsElsewhere reports whether a function literal is an HTTP handler,
// whose body runs on the server's goroutines.
func runsElsewhere(info *types.Info, lit *ast.FuncLit) bool {
	tv, ok := info.Types[lit]
	if !ok {
		return false
	}
	sig, ok := tv.Type.(*types.Signature)
	if !ok || sig.Params().Len() != 2 {
		return false
	}
	return types.TypeString(sig.Params().At(0).Type(), nil) == "net/http.ResponseWriter" &&
		types.TypeString(sig.Params().At(1).Type(), nil) == "*net/http.Request"
}

// goroutineBodies returns the function literals of fi that run on another
// goroutine, and the calls that a go statement makes directly.
func goroutineBodies(info *types.Info, body *ast.BlockStmt) (lits []*ast.FuncLit, calls []*ast.CallExpr) {
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			if lit, ok := n.Call.Fun.(*ast.FuncLit); ok {
				lits = append(lits, lit)
			} else {
				calls = append(calls, n.Call)
			}
		case *ast.FuncLit:
			if runsElsewhere(info, n) {
				lits = append(lits, n)
			}
		case *ast.CallExpr:
			if isGoMethod(info, n) || isAfterFunc(info, n) {
				for _, a := range n.Args {
					if lit, ok := a.(*ast.FuncLit); ok {
						lits = append(lits, lit)
					}
				}
			}
		}
		return true
	})
	return lits, calls
}

// isGoMethod matches sync.WaitGroup.Go and errgroup-style Go(func() error).
func isGoMethod(info *types.Info, call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Go" {
		return false
	}
	return info.Selections[sel] != nil
}

func isAfterFunc(info *types.Info, call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "AfterFunc" {
		return false
	}
	obj := info.Uses[sel.Sel]
	return obj != nil && obj.Pkg() != nil && obj.Pkg().Path() == "time"
}

// FailNowOffTestGoroutine reports FailNow-family calls, direct or through a
// helper given the test, in code that runs off the test's goroutine.
func FailNowOffTestGoroutine(pkgs []*packages.Package) []Finding {
	ix := newIndex(pkgs)
	fails := failNowParams(ix)
	var out []Finding
	check := func(info *types.Info, call *ast.CallExpr) {
		if x := directFailNow(info, call); x != nil {
			name := call.Fun.(*ast.SelectorExpr).Sel.Name
			out = append(out, Finding{ix.fset.Position(call.Pos()),
				name + " called off the test goroutine; record the error and report it from the test"})
			return
		}
		for j := range fails[ix.callee(info, call)] {
			if j < len(call.Args) {
				if tv, ok := info.Types[call.Args[j]]; ok && isTesting(tv.Type) {
					out = append(out, Finding{ix.fset.Position(call.Pos()),
						"helper given the test may call FailNow off the test goroutine; return an error instead"})
					return
				}
			}
		}
	}
	for _, fi := range ix.funcs {
		lits, calls := goroutineBodies(fi.info, fi.decl.Body)
		for _, c := range calls {
			check(fi.info, c)
		}
		for _, lit := range lits {
			ast.Inspect(lit.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncLit:
					// A subtest body runs on its own test goroutine.
					return !hasTestingParam(fi.info, n.Type)
				case *ast.GoStmt:
					return false // checked as a goroutine of its own
				case *ast.CallExpr:
					check(fi.info, n)
				}
				return true
			})
		}
	}
	return sortedFindings(out)
}
