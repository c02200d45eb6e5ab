package commands

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/herdr-pi/herdr-pi/internal/testenv"
)

// Every relative link of the README and docs/ leads somewhere: the file
// exists, and a #fragment names a heading of that page as a Markdown
// renderer (GitHub's) makes its anchor. A heading reworded, a page
// renamed, leaves the reader at the top of a page or at none.
func TestDocsLinksResolve(t *testing.T) {
	root := testenv.ModuleRoot()
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"), filepath.Join(root, "BENCHMARKS.md"), filepath.Join(root, "RELIABILITY.md"))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	checked := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for _, m := range link.FindAllStringSubmatch(outsideFences(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, fragment, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = filepath.Join(filepath.Dir(page), file)
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %s leads nowhere: %v", rel, target, err)
				continue
			}
			if fragment == "" {
				continue
			}
			if anchors[dest] == nil {
				anchors[dest] = headingAnchors(t, dest)
			}
			if !anchors[dest][fragment] {
				t.Errorf("%s: link %s names no heading of %s", rel, target, filepath.Base(dest))
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no relative link at all: the scan looks in the wrong place")
	}
}

// outsideFences is the page without its fenced code blocks, where a "](…)"
// or a "#" line is code, not a link or a heading.
func outsideFences(page string) string {
	var out strings.Builder
	fenced := false
	for line := range strings.Lines(page) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out.WriteString(line)
		}
	}
	return out.String()
}

// headingAnchors are the anchors of a page's headings, as GitHub makes
// them: lower case, punctuation dropped, spaces turned to hyphens, and
// -1, -2… after a repeated one.
func headingAnchors(t *testing.T, page string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	linkText := regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	out, seen := map[string]bool{}, map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(outsideFences(string(b)), -1) {
		text := linkText.ReplaceAllString(strings.ReplaceAll(m[1], "`", ""), "$1")
		var slug strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				slug.WriteRune(r)
			}
		}
		a := slug.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a += "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		out[a] = true
	}
	return out
}
