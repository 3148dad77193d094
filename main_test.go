package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBinary_ShipsNoTestOnlyPackage keeps the test harness, the fakes and the test provider
// out of the binary: the packages the admit command imports, directly or
// not, include none of them.
func TestBinary_ShipsNoTestOnlyPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 || !strings.Contains(string(out), "admit/internal/identity") {
		t.Fatalf("go list -deps listed %d packages, not admit's", len(deps))
	}
	for _, d := range deps {
		for _, banned := range []string{"admit/internal/apptest", "admit/internal/clerkfake", "admit/internal/oidcprovider", "github.com/zitadel/oidc"} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("the binary imports the test-only package %s", d)
			}
		}
	}
}

// TestArchitecture_PackageDiagramIsTheBinarysImports checks the package
// diagram of docs/ARCHITECTURE.md ("Packages") against go list: it names
// exactly the packages the admit binary is built from, and each of its
// edges — a package under another in the tree, or the next one after an
// arrow — is an import.
func TestArchitecture_PackageDiagramIsTheBinarysImports(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	nodes, edges := parsePackageDiagram(t, string(doc))

	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string]map[string]bool{}
	for line := range strings.Lines(string(out)) {
		path, deps, _ := strings.Cut(strings.TrimSpace(line), ":")
		if path != "admit" && !strings.HasPrefix(path, "admit/") {
			continue
		}
		imports[path] = map[string]bool{}
		for _, d := range strings.Fields(deps) {
			imports[path][d] = true
		}
	}
	if len(imports) < 10 {
		t.Fatalf("go list found %d of admit's packages in the binary", len(imports))
	}
	for p := range imports {
		if !nodes[p] {
			t.Errorf("the binary is built from %s, which the diagram does not name", p)
		}
	}
	for p := range nodes {
		if imports[p] == nil {
			t.Errorf("the diagram names %s, which the binary is not built from", p)
		}
	}
	for _, e := range edges {
		if imports[e[0]] != nil && !imports[e[0]][e[1]] {
			t.Errorf("the diagram has %s importing %s; it does not", e[0], e[1])
		}
	}
	if len(edges) < len(nodes)-1 {
		t.Fatalf("%d edges for %d packages: the diagram was not read", len(edges), len(nodes))
	}
}

// diagramPackage is a package name in the diagram: main or a path of
// lower-case words.
var diagramPackage = regexp.MustCompile(`^(main|[a-z]+(/[a-z]+)*)$`)

// parsePackageDiagram reads the first code block after "## Packages": its
// packages (as import paths) and its edges. A line's first package is
// imported by the package that starts the nearest line above whose name
// begins at or left of the line's connector (├ or └); each arrow (──►)
// makes the package after it imported by the one before it, or, when it
// starts the line, by that same parent; packages after a comma share the
// line's parent.
func parsePackageDiagram(t *testing.T, doc string) (map[string]bool, [][2]string) {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n## Packages\n")
	if !ok {
		t.Fatal("no Packages section")
	}
	_, rest, _ = strings.Cut(rest, "```\n")
	block, _, _ := strings.Cut(rest, "```")
	path := func(name string) string {
		if name == "main" {
			return "admit"
		}
		return "admit/" + name
	}
	nodes := map[string]bool{}
	var edges [][2]string
	type start struct {
		col  int
		name string
	}
	var starts []start
	comment := regexp.MustCompile(`\([^)]*\)`)
	for line := range strings.Lines(block) {
		runes := []rune(comment.ReplaceAllString(strings.TrimRight(line, "\n"), ""))
		connector := -1
		for i, r := range runes {
			if r == '├' || r == '└' {
				connector = i
				break
			}
		}
		// Split the line into names and arrows, each with its column.
		var toks []start
		for i := 0; i < len(runes); {
			r := runes[i]
			switch {
			case r == '►':
				toks = append(toks, start{i, "►"})
				i++
			case r >= 'a' && r <= 'z':
				j := i
				for j < len(runes) && (runes[j] >= 'a' && runes[j] <= 'z' || runes[j] == '/' || runes[j] == '.') {
					j++
				}
				word := strings.TrimSuffix(string(runes[i:j]), ".go")
				if diagramPackage.MatchString(word) && !strings.Contains(string(runes[i:j]), ".") {
					toks = append(toks, start{i, word})
				}
				i = j
			default:
				i++
			}
		}
		if len(toks) == 0 {
			continue
		}
		parent := ""
		if connector >= 0 {
			for k := len(starts) - 1; k >= 0; k-- {
				if starts[k].col <= connector {
					parent = starts[k].name
					break
				}
			}
			if parent == "" {
				t.Fatalf("no parent for %q", string(runes))
			}
		}
		prev := parent
		first := ""
		for k, tk := range toks {
			if tk.name == "►" {
				continue
			}
			nodes[path(tk.name)] = true
			if first == "" {
				first = tk.name
			}
			from := parent
			if k > 0 && toks[k-1].name == "►" && prev != "" {
				from = prev
			}
			if from != "" {
				edges = append(edges, [2]string{path(from), path(tk.name)})
			}
			prev = tk.name
		}
		if toks[0].name != "►" {
			starts = append(starts, start{toks[0].col, first})
		} else {
			// An arrow at the start continues from the parent; the line
			// starts nothing of its own.
			starts = append(starts, start{len(runes), first})
		}
	}
	return nodes, edges
}

// TestDocs_PerformanceStaysAReference keeps docs/PERFORMANCE.md a
// reference — how to run each benchmark, the current figures against their
// targets, the decisions the code relies on — within 20 KB; what was
// measured and not kept lives in git history.
func TestDocs_PerformanceStaysAReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("docs", "PERFORMANCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 20_000 {
		t.Errorf("docs/PERFORMANCE.md is %d bytes, over 20,000", len(b))
	}
	for _, section := range []string{"\n## Running the benchmarks\n", "\n## Current figures\n", "\n## Decisions the code relies on\n"} {
		if !strings.Contains(string(b), section) {
			t.Errorf("docs/PERFORMANCE.md has no section %q", strings.TrimSpace(section))
		}
	}
}

// TestArchitecture_RuleTablesPointAtCodeThatExists holds the tables of
// docs/ARCHITECTURE.md ("Invariants and where each is enforced") to the
// code: every file a rule names exists, and every name given after a file,
// in the same clause, is a word of that file. The OpenID Connect table
// keeps a row for each of the sign-in's checks.
func TestArchitecture_RuleTablesPointAtCodeThatExists(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Invariants and where each is enforced\n")
	if !ok {
		t.Fatal("no Invariants section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	code := regexp.MustCompile("`([^`]+)`")
	path := regexp.MustCompile(`^[a-z0-9_]+(/[a-z0-9_]+)*\.(go|sql)$`)
	name := regexp.MustCompile(`^\(?\*?[A-Za-z_][A-Za-z0-9_]*\)?(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	files, names := map[string]bool{}, 0
	for line := range strings.Lines(section) {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| rule ") {
			continue
		}
		cells := strings.Split(strings.TrimSpace(line), " | ")
		where := cells[len(cells)-1]
		for _, clause := range strings.Split(where, ";") {
			file := ""
			for _, m := range code.FindAllStringSubmatch(clause, -1) {
				span := m[1]
				switch {
				case path.MatchString(span):
					b, err := os.ReadFile(filepath.FromSlash(span))
					if err != nil {
						t.Errorf("the rule table names %s: %v", span, err)
						file = ""
						continue
					}
					file, files[span] = string(b), true
				case file != "" && name.MatchString(span):
					parts := strings.Split(span, ".")
					word := strings.Trim(parts[len(parts)-1], "()*")
					if !regexp.MustCompile(`\b` + regexp.QuoteMeta(word) + `\b`).MatchString(file) {
						t.Errorf("the rule table names %s in a file that has no %q:\n%s", span, word, clause)
					}
					names++
				}
			}
		}
	}
	if len(files) < 30 || names < 100 {
		t.Fatalf("read %d files and %d names from the rule tables: the tables were not read", len(files), names)
	}
	_, oidc, ok := strings.Cut(section, "\n### What OpenID Connect sign-in promises\n")
	if !ok {
		t.Fatal("no OpenID Connect rule table")
	}
	for _, check := range []string{"`state`", "`nonce`", "PKCE", "issuer", "subject"} {
		if !strings.Contains(oidc, check) {
			t.Errorf("the OpenID Connect rule table has no row for %s", check)
		}
	}
}
