// Package testlint checks admit's own source for mistakes that make a test
// tell less than the truth. Its checks run as ordinary tests (testlint_test.go)
// so that `go test ./...` and CI apply them.
//
// FailNowOffTestGoroutine finds t.Fatal, t.Fatalf, t.FailNow and the Skip
// family — and calls to helpers that may reach them with the same t — in code
// that runs on a goroutine other than the test's own: go statements,
// WaitGroup.Go and errgroup-style Go methods, time.AfterFunc callbacks and
// HTTP handler functions. The testing package documents that these must be
// called from the test goroutine; elsewhere they end only the goroutine
// they run on and the test may pass or hang.
//
// RowsErrUnchecked finds *sql.Rows results whose Err is never consulted, so a
// failure part-way through the rows would pass as a short result.
//
// InPagePoll finds chromedp's waits that keep time inside the page, which
// never time out in a page whose scripts are off.
//
// DocLinks finds citations of a document (a file of docs/ and a heading's
// anchor, in a comment, the Justfile, SQL or the docs) whose file or heading
// does not exist.
package testlint

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"sort"

	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/types/typeutil"
)

// Finding is one reported mistake.
type Finding struct {
	Pos     token.Position
	Message string
}

func (f Finding) String() string { return fmt.Sprintf("%s: %s", f.Pos, f.Message) }

// Load loads the packages that match patterns, with their tests, fully
// type-checked from source (dependencies from export data).
func Load(dir string, patterns ...string) ([]*packages.Package, error) {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
			packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports,
		Dir:   dir,
		Tests: true,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	var errs []error
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			errs = append(errs, e)
		}
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("load: %v", errs)
	}
	return pkgs, nil
}

// funcInfo is one declared function with the type information of the
// package variant it was first seen in.
type funcInfo struct {
	decl *ast.FuncDecl
	info *types.Info
}

// index holds every function declared in the loaded packages, keyed by
// where it is declared, so that a function seen in several package variants
// (a package with and without its test files) is one entry.
type index struct {
	fset  *token.FileSet
	funcs map[string]funcInfo
}

func newIndex(pkgs []*packages.Package) *index {
	ix := &index{funcs: map[string]funcInfo{}}
	for _, p := range pkgs {
		ix.fset = p.Fset
		for _, f := range p.Syntax {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				k := ix.key(fd.Name.Pos())
				if _, seen := ix.funcs[k]; !seen {
					ix.funcs[k] = funcInfo{fd, p.TypesInfo}
				}
			}
		}
	}
	return ix
}

func (ix *index) key(pos token.Pos) string { return ix.fset.Position(pos).String() }

// callee returns the key of the function a call statically calls, or "".
func (ix *index) callee(info *types.Info, call *ast.CallExpr) string {
	fn := typeutil.StaticCallee(info, call)
	if fn == nil {
		return ""
	}
	return ix.key(fn.Origin().Pos())
}

// sortedFindings orders findings by position and drops duplicates (a file
// can be loaded in more than one package variant).
func sortedFindings(fs []Finding) []Finding {
	seen := map[string]bool{}
	var out []Finding
	for _, f := range fs {
		if s := f.String(); !seen[s] {
			seen[s] = true
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Pos, out[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return out
}

// paramIndex maps a function's parameters to their positions.
func paramIndex(info *types.Info, ft *ast.FuncType) map[types.Object]int {
	m := map[types.Object]int{}
	i := 0
	for _, field := range ft.Params.List {
		if len(field.Names) == 0 {
			i++
			continue
		}
		for _, n := range field.Names {
			if obj := info.Defs[n]; obj != nil {
				m[obj] = i
			}
			i++
		}
	}
	return m
}

// identObj returns the object an expression names when it is a plain
// identifier, or nil.
func identObj(info *types.Info, e ast.Expr) types.Object {
	if id, ok := ast.Unparen(e).(*ast.Ident); ok {
		return info.Uses[id]
	}
	return nil
}
