package testlint

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/packages"
)

// isRows reports whether t is *database/sql.Rows.
func isRows(t types.Type) bool {
	return types.TypeString(t, nil) == "*database/sql.Rows"
}

// rowsErrParams computes, for every function, which *sql.Rows parameters
// it checks with Err, directly or by handing them to a function that does.
func rowsErrParams(ix *index) map[string]map[int]bool {
	out := map[string]map[int]bool{}
	for changed := true; changed; {
		changed = false
		for k, fi := range ix.funcs {
			params := paramIndex(fi.info, fi.decl.Type)
			for obj, i := range params {
				if !isRows(obj.Type()) || out[k][i] {
					continue
				}
				if checksErr(ix, fi.info, fi.decl.Body, obj, out) {
					if out[k] == nil {
						out[k] = map[int]bool{}
					}
					out[k][i] = true
					changed = true
				}
			}
		}
	}
	return out
}

// checksErr reports whether body calls v.Err() or passes v to a function
// known to check it.
func checksErr(ix *index, info *types.Info, body ast.Node, v types.Object, checked map[string]map[int]bool) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found {
			return !found
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Err" && identObj(info, sel.X) == v {
			found = true
			return false
		}
		for j := range checked[ix.callee(info, call)] {
			if j < len(call.Args) && identObj(info, call.Args[j]) == v {
				found = true
				return false
			}
		}
		return true
	})
	return found
}

// RowsErrUnchecked reports each variable of non-test code that holds a
// *sql.Rows from a query and whose Err the function never consults.
func RowsErrUnchecked(pkgs []*packages.Package) []Finding {
	ix := newIndex(pkgs)
	checked := rowsErrParams(ix)
	var out []Finding
	for _, fi := range ix.funcs {
		if strings.HasSuffix(ix.fset.Position(fi.decl.Pos()).Filename, "_test.go") {
			continue
		}
		ast.Inspect(fi.decl.Body, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Rhs) != 1 {
				return true
			}
			if _, ok := ast.Unparen(as.Rhs[0]).(*ast.CallExpr); !ok {
				return true
			}
			for _, lhs := range as.Lhs {
				id, ok := lhs.(*ast.Ident)
				if !ok {
					continue
				}
				obj := fi.info.Defs[id]
				if obj == nil {
					obj = fi.info.Uses[id]
				}
				if obj == nil || !isRows(obj.Type()) {
					continue
				}
				if !checksErr(ix, fi.info, fi.decl.Body, obj, checked) {
					out = append(out, Finding{ix.fset.Position(id.Pos()),
						id.Name + ".Err() is never checked: an error part-way through the rows would pass as a short result"})
				}
			}
			return true
		})
	}
	return sortedFindings(out)
}
