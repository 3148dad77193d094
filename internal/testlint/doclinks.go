package testlint

import (
	"bufio"
	"fmt"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// docRefRE matches a reference to a Markdown file, with its anchor if it has
// one: docs/PERFORMANCE.md#overload, erasure.md, ../README.md#configuration.
// It does not start inside a longer path or a URL.
var docRefRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])((?:\.\./)*(?:[A-Za-z0-9_-]+/)*[A-Za-z0-9_-]+\.md)(?:#([A-Za-z0-9_-]+))?`)

// codeSpanRE matches a Markdown code span, which quotes a name or a command
// rather than cites a document.
var codeSpanRE = regexp.MustCompile("`[^`]*`")

// inPageRE matches a Markdown link to a heading of the same file.
var inPageRE = regexp.MustCompile(`\]\(#([A-Za-z0-9_-]+)\)`)

// docSourceExts are the files whose text may cite a document.
var docSourceExts = map[string]bool{".go": true, ".templ": true, ".sql": true, ".md": true, ".yml": true, ".yaml": true}

// DocLinks finds every reference to a Markdown file in the repository at
// root — in code comments, SQL, the Justfile and the docs themselves — whose
// file does not exist or whose #anchor names no heading of that file, and
// every in-page link (#anchor) in a Markdown file that names none of its own
// headings. A reference is resolved from the citing file's folder, then from
// root, then from root/docs. Anchors are GitHub's: the heading's text in
// lower case, punctuation dropped, spaces as hyphens, a repeated heading
// numbered. In Markdown, code spans are not citations. Folders named
// testdata, spec or starting with a dot are skipped.
func DocLinks(root string) ([]Finding, error) {
	anchors := map[string]map[string]bool{} // cleaned path → anchors
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		a, err := headingAnchors(path)
		if err != nil {
			return nil, err
		}
		anchors[path] = a
		return a, nil
	}
	var findings []Finding
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "spec" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !docSourceExts[filepath.Ext(path)] && d.Name() != "Justfile" {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		isMarkdown := filepath.Ext(path) == ".md"
		for i, line := range strings.Split(string(text), "\n") {
			pos := token.Position{Filename: path, Line: i + 1}
			if isMarkdown {
				line = codeSpanRE.ReplaceAllString(line, "")
			}
			for _, m := range docRefRE.FindAllStringSubmatch(line, -1) {
				target := resolveDoc(root, filepath.Dir(path), m[1])
				if target == "" {
					findings = append(findings, Finding{pos, fmt.Sprintf("%s: no such file", m[1])})
					continue
				}
				if m[2] == "" {
					continue
				}
				a, err := anchorsOf(target)
				if err != nil {
					return err
				}
				if !a[m[2]] {
					findings = append(findings, Finding{pos, fmt.Sprintf("%s#%s: no heading with that anchor", m[1], m[2])})
				}
			}
			if !isMarkdown {
				continue
			}
			for _, m := range inPageRE.FindAllStringSubmatch(line, -1) {
				a, err := anchorsOf(filepath.Clean(path))
				if err != nil {
					return err
				}
				if !a[m[1]] {
					findings = append(findings, Finding{pos, fmt.Sprintf("#%s: no heading with that anchor", m[1])})
				}
			}
		}
		return nil
	})
	return findings, err
}

// resolveDoc returns the file ref names, from dir, root or root/docs, or ""
// if there is none.
func resolveDoc(root, dir, ref string) string {
	for _, base := range []string{dir, root, filepath.Join(root, "docs")} {
		p := filepath.Clean(filepath.Join(base, ref))
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// headingAnchors returns the anchors of the Markdown file's headings,
// outside fenced code blocks.
func headingAnchors(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if len(line)-len(text) > 6 || !strings.HasPrefix(text, " ") {
			continue
		}
		a := HeadingAnchor(text)
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out, sc.Err()
}

// mdLinkRE matches an inline Markdown link, whose text is what a heading
// shows.
var mdLinkRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// HeadingAnchor is the anchor GitHub gives a heading with this text: lower
// case, letters, digits, hyphens and underscores kept, spaces as hyphens,
// everything else dropped.
func HeadingAnchor(text string) string {
	text = mdLinkRE.ReplaceAllString(strings.TrimSpace(strings.TrimRight(text, "# ")), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
