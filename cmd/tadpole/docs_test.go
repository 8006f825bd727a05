package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository's root, seen from this package.
const repoRoot = "../.."

// docFiles are the user and maintainer docs: README.md and docs/**.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(repoRoot, "README.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("docs/: %v", err)
	}
	if len(files) < 2 {
		t.Fatalf("no pages under docs/")
	}
	return files
}

func readDocs(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, f := range docFiles(t) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(src)
		b.WriteByte('\n')
	}
	return b.String()
}

var (
	helpFlag = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)`)
	helpEnv  = regexp.MustCompile(`\((TADPOLE_[A-Z0-9_]+)\)`)
	srcEnv   = regexp.MustCompile(`"(TADPOLE_[A-Z0-9_]+)"`)
	tableRow = regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\| `(TADPOLE_[A-Z0-9_]+)` \\|")
)

// TestDocsCoverServeFlags: every flag `tadpole serve --help` lists has
// its row in the flag table of docs/running.md, with the environment
// variable the help names; and every TADPOLE_ variable the server's and
// the CLI's code reads is documented in README.md or docs/.
func TestDocsCoverServeFlags(t *testing.T) {
	docs := readDocs(t)
	table, err := os.ReadFile(filepath.Join(repoRoot, "docs", "running.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // flag -> its row's variable
	for _, m := range tableRow.FindAllStringSubmatch(string(table), -1) {
		rows[m[1]] = m[2]
	}
	r := runBin(t, binEnv(), "", "serve", "--help")
	var missing []string
	envs := map[string]bool{}
	flags := 0
	for _, line := range strings.Split(r.stdout+r.stderr, "\n") {
		m := helpFlag.FindStringSubmatch(line)
		if m == nil || m[1] == "help" {
			continue
		}
		flags++
		env := ""
		if e := helpEnv.FindAllStringSubmatch(line, -1); len(e) > 0 {
			env = e[len(e)-1][1]
			envs[env] = true
		}
		row, ok := rows[m[1]]
		switch {
		case !ok:
			missing = append(missing, "--"+m[1]+" (no row in docs/running.md's flag table)")
		case env != "" && row != env:
			missing = append(missing, fmt.Sprintf("--%s (its row names %s, the help %s)", m[1], row, env))
		}
	}
	if r.code != 0 || flags < 40 {
		t.Fatalf("tadpole serve --help: %d flags found: %s", flags, r)
	}
	err = filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "third_party", "bin", "build":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range srcEnv.FindAllStringSubmatch(string(src), -1) {
			envs[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) < 40 {
		t.Fatalf("only %d TADPOLE_ variables found", len(envs))
	}
	for e := range envs {
		if !strings.Contains(docs, "`"+e) {
			missing = append(missing, e+" (not in README.md or docs/ as `"+e+"`)")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("undocumented:\n%s", strings.Join(missing, "\n"))
	}
}

var (
	mdFence  = regexp.MustCompile("(?m)^\\s*(```|~~~)")
	mdCode   = regexp.MustCompile("`+[^`]*`+")
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHead   = regexp.MustCompile(`^#{1,6} (.*)$`)
	urlShape = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)
)

// prose returns a page's lines, those of fenced code blocks blanked.
func prose(src string) []string {
	out := strings.Split(src, "\n")
	in := false
	for i, l := range out {
		fence := mdFence.MatchString(l)
		if fence {
			in = !in
		}
		if in || fence {
			out[i] = ""
		}
	}
	return out
}

// anchor is GitHub's anchor for a heading: lower case, letters, digits,
// '-' and '_' kept, spaces to '-', everything else dropped.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are a page's heading anchors, repeated ones numbered as
// GitHub numbers them.
func anchors(src string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range prose(src) {
		m := mdHead.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := anchor(m[1])
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestDocsLinks: every relative link in README.md and docs/ names a file
// that exists, and a link to a heading of a page names one it has.
func TestDocsLinks(t *testing.T) {
	pages := map[string]string{}
	for _, f := range docFiles(t) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages[filepath.Clean(f)] = string(src)
	}
	heads := map[string]map[string]bool{}
	checked := 0
	for f, src := range pages {
		for i, l := range prose(src) {
			l = mdCode.ReplaceAllString(l, "")
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if urlShape.MatchString(target) || strings.HasPrefix(target, "<") {
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				dest := f
				if path != "" {
					dest = filepath.Clean(filepath.Join(filepath.Dir(f), path))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s: line %d: link %q: %v", f, i+1, target, err)
						continue
					}
				}
				checked++
				if frag == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				dsrc, ok := pages[dest]
				if !ok {
					b, err := os.ReadFile(dest)
					if err != nil {
						t.Errorf("%s: link %q: %v", f, target, err)
						continue
					}
					dsrc = string(b)
				}
				if heads[dest] == nil {
					heads[dest] = anchors(dsrc)
				}
				if !heads[dest][frag] {
					t.Errorf("%s: line %d: link %q: %s has no heading with anchor #%s", f, i+1, target, dest, frag)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d relative links checked; the docs should link their pages", checked)
	}
}
