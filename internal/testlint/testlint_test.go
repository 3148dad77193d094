package testlint_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"admit/internal/testlint"
)

// moduleRoot is the directory of admit's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

var wantRE = regexp.MustCompile(`// want "([^"]+)"`)

// wants reads the `// want "..."` comments of the files in dir.
func wants(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for line := 1; sc.Scan(); line++ {
			if m := wantRE.FindStringSubmatch(sc.Text()); m != nil {
				out[filepath.Base(f)+":"+strconv.Itoa(line)] = m[1]
			}
		}
		fh.Close()
	}
	return out
}

// matchWants compares findings with the want comments: every want is found
// with its message, and nothing else is.
func matchWants(t *testing.T, findings []testlint.Finding, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, f := range findings {
		got[filepath.Base(f.Pos.Filename)+":"+strconv.Itoa(f.Pos.Line)] = f.Message
	}
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		msg, ok := got[k]
		if !ok {
			t.Errorf("%s: not reported, want %q", k, want[k])
			continue
		}
		if !strings.Contains(msg, want[k]) {
			t.Errorf("%s: reported %q, want %q", k, msg, want[k])
		}
	}
	for k, msg := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: reported %q, want nothing", k, msg)
		}
	}
}

// TestCheckers_ReportExactlyTheMarkedLines runs the checks on code with
// known mistakes and known allowed forms.
func TestCheckers_ReportExactlyTheMarkedLines(t *testing.T) {
	dir := filepath.Join("testdata", "cases")
	pkgs, err := testlint.Load(dir, ".")
	if err != nil {
		t.Fatal(err)
	}
	findings := append(testlint.FailNowOffTestGoroutine(pkgs), testlint.RowsErrUnchecked(pkgs)...)
	findings = append(findings, testlint.InPagePoll(pkgs)...)
	matchWants(t, findings, wants(t, dir))
}

// TestAdmit_Checks runs the checks on all of admit (one load serves them all):
// no test ends a goroutine other than its own with t.Fatal and friends,
// directly or through a helper, no query's rows are read without Err, and
// no browser test waits on a page's own timers.
func TestAdmit_Checks(t *testing.T) {
	if testing.Short() {
		t.Skip("loads and type-checks the whole module")
	}
	pkgs, err := testlint.Load(moduleRoot(t), "./...")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("NoFailNowOffTheTestGoroutine", func(t *testing.T) {
		for _, f := range testlint.FailNowOffTestGoroutine(pkgs) {
			t.Error(f)
		}
	})
	t.Run("EveryRowsErrIsChecked", func(t *testing.T) {
		for _, f := range testlint.RowsErrUnchecked(pkgs) {
			t.Error(f)
		}
	})
	t.Run("NoWaitOnThePagesOwnTimers", func(t *testing.T) {
		for _, f := range testlint.InPagePoll(pkgs) {
			t.Error(f)
		}
	})
}

// TestDocLinks_ReportsMissingFilesAndAnchors runs the check on a small tree
// with known good and broken references; want.txt lists exactly the broken
// ones.
func TestDocLinks_ReportsMissingFilesAndAnchors(t *testing.T) {
	dir := filepath.Join("testdata", "doclinks")
	findings, err := testlint.DocLinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range findings {
		rel, err := filepath.Rel(dir, f.Pos.Filename)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rel+":"+strconv.Itoa(f.Pos.Line)+": "+f.Message)
	}
	sort.Strings(got)
	want, err := os.ReadFile(filepath.Join(dir, "want.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := strings.Join(got, "\n"), strings.TrimSpace(string(want)); g != w {
		t.Errorf("findings:\n%s\nwant (want.txt):\n%s", g, w)
	}
}

// TestAdmit_DocLinksResolve holds every citation of a document in admit's
// code comments, SQL, Justfile and docs (a document's path with a heading's
// anchor) to a file that exists and a heading that has that anchor, so a
// renamed section or a moved document cannot leave a comment pointing
// nowhere.
func TestAdmit_DocLinksResolve(t *testing.T) {
	root, err := filepath.Abs(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	findings, err := testlint.DocLinks(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Error(f)
	}
}

// TestBrowserImports_HandlersHasNoBrowserTest keeps the browser and
// accessibility tests out of the handlers package, whose own tests then run
// without Chromium; the check itself reports the marked imports.
func TestBrowserImports_HandlersHasNoBrowserTest(t *testing.T) {
	dir := filepath.Join("testdata", "browserimports")
	findings, err := testlint.BrowserImports(dir)
	if err != nil {
		t.Fatal(err)
	}
	matchWants(t, findings, wants(t, dir))

	findings, err = testlint.BrowserImports(filepath.Join(moduleRoot(t), "handlers"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Errorf("%s: %s", f.Pos, f.Message)
	}
	if n, _ := filepath.Glob(filepath.Join(moduleRoot(t), "handlers", "*_test.go")); len(n) < 20 {
		t.Fatalf("found %d test files in handlers: not admit's handlers package", len(n))
	}
}

// TestHandlers_FilesAndFunctionsStaySmall keeps the code readable: no
// source file of the handlers package over 350 lines, and no function
// anywhere in the module over 80 (generated templ output aside; tests
// aside).
func TestHandlers_FilesAndFunctionsStaySmall(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	checked, inHandlers := 0, 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "_templ.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		checked++
		if filepath.Dir(rel) == "handlers" {
			inHandlers++
			if n := fset.File(file.Pos()).LineCount(); n > 350 {
				t.Errorf("%s has %d lines, over 350", rel, n)
			}
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > 80 {
				t.Errorf("%s: %s has %d lines, over 80", rel, fd.Name.Name, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if inHandlers < 30 || checked < 150 {
		t.Fatalf("checked %d files, %d in handlers: not admit's module", checked, inHandlers)
	}
}
