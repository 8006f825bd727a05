package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// A schema that refers outside itself is a 400 naming the reference as
// the client wrote it, through format and through tool parameters alike;
// no message shows the server's working directory or reads a local file.
func TestSchemaExternalRefNoPath(t *testing.T) {
	ts := startServer(t)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	refs := []string{`other.json`, `file:///etc/passwd`, `other.json#/a`}
	for _, ref := range refs {
		schema := `{"type":"object","properties":{"a":{"$ref":"` + ref + `"}}}`
		bodies := map[string]string{
			"/api/generate":        `{"model":"stories","prompt":"x","format":{"$ref":"` + ref + `"}}`,
			"/api/chat":            `{"model":"bigram","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":` + schema + `}}]}`,
			"/v1/chat/completions": `{"model":"bigram","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"$ref":"` + ref + `"}}}]}`,
		}
		for path, body := range bodies {
			resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 {
				t.Errorf("%s $ref %q: status %d: %s", path, ref, resp.StatusCode, msg)
			}
			if strings.Contains(string(msg), wd) || strings.Contains(string(msg), "/etc") && ref != `file:///etc/passwd` ||
				strings.Contains(string(msg), "root:") || !strings.Contains(string(msg), ref) {
				t.Errorf("%s $ref %q: message %s", path, ref, msg)
			}
			t.Logf("%s %s: %s", path, ref, msg)
		}
	}
}

// A create whose FROM, ADAPTER or DRAFT names a blob that is missing or
// not a usable GGUF is a 4xx naming the blob by digest, never by its path
// in the models directory.
func TestCreateErrorsNoBlobPath(t *testing.T) {
	dir := testModels(t, "stories")
	srv := New(Config{ModelsDir: dir, Sched: testSched(1, 256)})
	ts := serveForTest(t, srv)
	ctx := context.Background()
	junk := filepath.Join(t.TempDir(), "junk.gguf")
	if err := os.WriteFile(junk, []byte("GGUF but not really a model file"), 0o644); err != nil {
		t.Fatal(err)
	}
	digest, data := fileDigest(t, junk)
	if err := ts.Client.CreateBlob(ctx, digest, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	missing := "sha256:" + strings.Repeat("0", 64)
	real, _ := filepath.EvalSymlinks(dir)
	for _, tc := range []struct{ body, want string }{
		{`{"model":"a","from":"@` + digest + `"}`, digest},
		{`{"model":"a","modelfile":"FROM @` + digest + `"}`, digest},
		{`{"model":"a","modelfile":"FROM stories\nADAPTER @` + digest + `"}`, digest},
		{`{"model":"a","modelfile":"FROM stories\nDRAFT @` + digest + `"}`, digest},
		{`{"model":"a","modelfile":"FROM @` + missing + `"}`, missing},
		{`{"model":"a","modelfile":"FROM stories\nADAPTER @` + missing + `"}`, missing},
	} {
		resp, err := http.Post(ts.URL+"/api/create", "application/json", strings.NewReader(strings.TrimSuffix(tc.body, "}")+`,"stream":false}`))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("%s: status %d: %s", tc.body, resp.StatusCode, msg)
		}
		if strings.Contains(string(msg), dir) || strings.Contains(string(msg), real) || strings.Contains(string(msg), "sha256-") ||
			!strings.Contains(string(msg), tc.want) {
			t.Errorf("%s: message %s, want the digest and no path", tc.body, msg)
		}
		t.Logf("%s: %d %s", tc.body, resp.StatusCode, msg)
	}
}

// Without API keys configured, /readyz names the loaded models to anyone
// (TestProbesAndDrain checks that with keys it names them only to a key
// holder).
func TestReadyzNamesWithoutKeys(t *testing.T) {
	ts := startServer(t)
	if err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once", Options: greedyOpts(1)},
		func(ollamaapi.GenerateResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	code, _, b := do(t, "GET", ts.URL+"/readyz", "", "")
	if code != 200 || !strings.Contains(string(b), `"models":["stories:latest"]`) || !strings.Contains(string(b), `"loaded":1`) {
		t.Fatalf("/readyz: %d %s", code, b)
	}
}
