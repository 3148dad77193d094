package handlers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestHandlers_SeeOnlyTheIdentityInterface keeps the HTTP layer independent
// of which identity provider runs (docs/ARCHITECTURE.md#identity): the
// handlers' code names the Identity interface and the types it speaks in,
// never an implementation, its constructor or its configuration. main picks
// and builds the implementation.
func TestHandlers_SeeOnlyTheIdentityInterface(t *testing.T) {
	allowed := map[string]bool{"Identity": true, "Principal": true, "Mode": true, "ModeClerk": true, "ModeDev": true,
		"FormSignIn": true, "RedirectSignIn": true, "SignInError": true, "ModeOIDC": true, "ErrSignedOut": true, "ErrIdentityUnavailable": true, "SessionTTL": true,
		// What a provider reports of a person's addresses, verified or not.
		"Address": true, "AddressLister": true,
		// The privacy page states how often a session is re-checked, as it states SessionTTL.
		"OIDCRecheckEvery": true}
	implementation := map[string]bool{"ClerkIdentity": true, "DevIdentity": true, "NewClerkIdentity": true,
		"NewDevIdentity": true, "ClerkConfig": true, "DevUserID": true,
		"OIDCIdentity": true, "NewOIDCIdentity": true, "OIDCConfig": true, "OIDCUserID": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	uses := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		local := ""
		for _, imp := range f.Imports {
			if imp.Path.Value == `"admit/internal/identity"` {
				local = "identity"
				if imp.Name != nil {
					local = imp.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if pkg, ok := x.X.(*ast.Ident); ok && local != "" && pkg.Name == local {
					uses++
					if !allowed[x.Sel.Name] {
						t.Errorf("%s: handlers use identity.%s; only the interface and its types are allowed", fset.Position(x.Pos()), x.Sel.Name)
					}
				}
			case *ast.Ident:
				if implementation[x.Name] {
					t.Errorf("%s: handlers name the identity implementation %s", fset.Position(x.Pos()), x.Name)
				}
			}
			return true
		})
	}
	if uses == 0 {
		t.Fatal("no handler file uses package identity: the check no longer looks at the right thing")
	}
}
