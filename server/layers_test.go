package server

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// dialects are the packages that translate one API's wire format to and
// from infer's requests and streams.
var dialects = []string{"ollama", "openai", "anura", "responses", "anthropic"}

// TestDialectsAreThin pins the request path's layering (issue 21): a
// dialect imports neither the runner (it reads infer's Stream) nor
// another dialect (shared translation lives in infer, dialect or
// ollamarun).
func TestDialectsAreThin(t *testing.T) {
	const mod = "github.com/tadpole-llm/tadpole/"
	banned := map[string]string{mod + "engine/runner": "reads infer.Stream, not the runner"}
	for _, d := range dialects {
		banned[mod+"server/"+d] = "is another dialect"
	}
	for _, d := range dialects {
		files, err := filepath.Glob(filepath.Join(d, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("dialect %s: no Go files (%v)", d, err)
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
				if why, ok := banned[path]; ok && path != mod+"server/"+d {
					t.Errorf("%s imports %s: a dialect %s", f, path, why)
				}
			}
		}
	}
}
