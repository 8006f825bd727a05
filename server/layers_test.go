package server

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// dialects are the packages that translate one API's wire format to and
// from infer's requests and streams.
var dialects = []string{"ollama", "openai", "anura", "responses", "anthropic"}

// translators are what dialects share of the translation (not dialects
// themselves, which may import them): they keep the same distance from
// the engine.
var translators = []string{"ollamagen"}

// TestDialectsAreThin pins the request path's layering as server/doc.go
// and the dialects' package docs state it (issues 21 and 36): a dialect
// touches neither the engine (engine, its runner and its other
// packages), nor the scheduler (server/sched): it goes through
// server/infer; nor does it import another dialect (shared translation
// lives in infer, dialect or ollamagen). engine/grammar is allowed: it
// is a pure translation of response formats into GBNF, the dialects'
// own validation of them, and links nothing of llama.cpp.
func TestDialectsAreThin(t *testing.T) {
	const mod = "github.com/tadpole-llm/tadpole/"
	banned := func(pkg, path string) string {
		switch {
		case path == mod+"engine/grammar":
			return ""
		case path == mod+"engine/runner":
			return "reads infer.Stream, not the runner"
		case path == mod+"engine" || strings.HasPrefix(path, mod+"engine/"):
			return "reaches the engine only through server/infer"
		case path == mod+"server/sched":
			return "reaches the scheduler only through server/infer"
		case path != mod+"server/"+pkg && slices.Contains(dialects, strings.TrimPrefix(path, mod+"server/")):
			return "imports no other dialect"
		}
		return ""
	}
	for _, d := range append(slices.Clone(dialects), translators...) {
		files, err := filepath.Glob(filepath.Join(d, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("package %s: no Go files (%v)", d, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if why := banned(d, path); why != "" {
					t.Errorf("%s imports %s: a dialect %s", f, path, why)
				}
			}
		}
	}
}
