package server

import (
	"go/ast"
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
// the engine. ollamagen takes the generation path as dialects do;
// openaisampling and rerankapi are wire vocabulary only.
var translators = []string{"ollamagen", "openaisampling", "rerankapi"}

// keyless are the dialects whose package docs say they know nothing of
// API keys: authentication is middleware in front of their routes.
var keyless = []string{"openai", "anthropic"}

// TestDialectsAreThin pins the request path's layering as server/doc.go
// and the dialects' package docs state it (issues 21 and 36): a dialect
// touches neither the engine (engine, its runner and its other
// packages), nor the scheduler (server/sched): it goes through
// server/infer; nor does it import another dialect (shared translation
// lives in infer, dialect or the translators). engine/grammar is
// allowed: it is a pure translation of response formats into GBNF, the
// dialects' own validation of them, and links nothing of llama.cpp.
// Each dialect (and ollamagen) takes the generation path as a small
// interface of its own, Inference, which *infer.Service satisfies:
// *infer.Service is named only in that assertion, so the package's own
// tests run on infertest's fake, which its code does not import. The
// keyless dialects do not import server/auth, and server/dialect, the
// kit every dialect uses, imports none of them. No dialect calls
// Acquire or Release: infer's Generate, Embed, Rerank and WithVocab hold
// an instance for the call, so the ordering rule lives there once. infer
// imports neither the kit nor a dialect (its errors become answers in
// dialect.FromInfer).
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
		case path == mod+"server/infer/infertest":
			return "takes the fake generation path in its tests only"
		case path == mod+"server/auth" && slices.Contains(keyless, pkg):
			return "knows nothing of API keys"
		case path != mod+"server/"+pkg && slices.Contains(dialects, strings.TrimPrefix(path, mod+"server/")):
			return "imports no other dialect"
		}
		return ""
	}
	for _, d := range append(slices.Clone(dialects), translators...) {
		asserted := false
		for _, af := range parseDir(t, d) {
			for _, imp := range af.file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if why := banned(d, path); why != "" {
					t.Errorf("%s imports %s: a dialect %s", af.name, path, why)
				}
			}
			for _, decl := range af.file.Decls {
				if isInferenceAssertion(decl) {
					asserted = true
					continue
				}
				ast.Inspect(decl, func(n ast.Node) bool {
					if isSelector(n, "infer", "Service") {
						t.Errorf("%s names infer.Service: a dialect takes its own Inference interface", af.fset.Position(n.Pos()))
					}
					if call, ok := n.(*ast.CallExpr); ok {
						if sel, ok := call.Fun.(*ast.SelectorExpr); ok && slices.Contains([]string{"Acquire", "AcquireFor", "Release"}, sel.Sel.Name) {
							t.Errorf("%s calls %s: a dialect holds no instance itself (infer's Generate, Embed, Rerank and WithVocab acquire and release)", af.fset.Position(n.Pos()), sel.Sel.Name)
						}
					}
					return true
				})
			}
		}
		if !asserted && (slices.Contains(dialects, d) || d == "ollamagen") {
			t.Errorf("package %s has no `var _ Inference = (*infer.Service)(nil)`", d)
		}
	}
	for _, af := range parseDir(t, "infer") {
		for _, imp := range af.file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if p := strings.TrimPrefix(path, mod+"server/"); p == "dialect" || slices.Contains(dialects, p) || slices.Contains(translators, p) {
				t.Errorf("%s imports %s: infer speaks no API (dialect.FromInfer maps its errors)", af.name, path)
			}
		}
	}
	for _, af := range parseDir(t, "dialect") {
		for _, imp := range af.file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if p := strings.TrimPrefix(path, mod+"server/"); slices.Contains(dialects, p) || slices.Contains(translators, p) {
				t.Errorf("%s imports %s: the dialect kit imports no dialect", af.name, path)
			}
		}
	}
}

type parsedFile struct {
	name string
	fset *token.FileSet
	file *ast.File
}

// parseDir parses the package's Go files, tests left out.
func parseDir(t *testing.T, dir string) []parsedFile {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("package %s: no Go files (%v)", dir, err)
	}
	var out []parsedFile
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		af, err := parser.ParseFile(fset, f, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parsedFile{f, fset, af})
	}
	return out
}

// isInferenceAssertion reports `var _ Inference = (*infer.Service)(nil)`.
func isInferenceAssertion(decl ast.Decl) bool {
	g, ok := decl.(*ast.GenDecl)
	if !ok || g.Tok != token.VAR || len(g.Specs) != 1 {
		return false
	}
	s := g.Specs[0].(*ast.ValueSpec)
	if len(s.Names) != 1 || s.Names[0].Name != "_" || len(s.Values) != 1 {
		return false
	}
	if id, ok := s.Type.(*ast.Ident); !ok || id.Name != "Inference" {
		return false
	}
	call, ok := s.Values[0].(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return false
	}
	paren, ok := call.Fun.(*ast.ParenExpr)
	if !ok {
		return false
	}
	star, ok := paren.X.(*ast.StarExpr)
	return ok && isSelector(star.X, "infer", "Service")
}

func isSelector(n ast.Node, pkg, name string) bool {
	sel, ok := n.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg && sel.Sel.Name == name
}
