package server

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// FuzzOllamaDecoders sends arbitrary bodies to every Ollama endpoint that
// decodes JSON: whatever the input, the answer is a status code and a
// body, never a panic or a hung request. The models directory holds the
// demo model, so well-formed requests run for real (with tiny limits).
func FuzzOllamaDecoders(f *testing.F) {
	for _, seed := range []string{
		`{"model":"stories","prompt":"Once","options":{"num_predict":2,"temperature":0}}`,
		`{"model":"stories","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":2}}`,
		`{"model":"stories","input":["a","b"]}`,
		`{"model":"stories","prompt":"x","options":{"num_predict":"2"}}`,
		`{"model":"stories","prompt":"x","keep_alive":"-1m","options":{"stop":["a"],"num_predict":1}}`,
		`{"model":"../x","prompt":"x"}`,
		`{"model":"stories","prompt":"x","context":[1,2,99999],"options":{"num_predict":1}}`,
		`{"model":"stories","prompt":"","context":[-5]}`,
		`{`, `null`, `[]`, `"str"`, ``,
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	if err := linkFile(testmodels.Testdata("stories260K.gguf"), dir+"/stories.gguf"); err != nil {
		f.Fatal(err)
	}
	srv := New(Config{ModelsDir: dir, Sched: testSched(2, 64)})
	f.Cleanup(func() { srv.Shutdown(f.Context()) })
	h := srv.Handler()
	paths := []string{"/api/generate", "/api/chat", "/api/embed", "/api/embeddings"}
	f.Fuzz(func(t *testing.T, body string) {
		for _, p := range paths {
			// A request may legitimately generate without end (num_predict
			// -1 on a model that never says EOS): cut it off like a client
			// that gives up.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			req := httptest.NewRequestWithContext(ctx, http.MethodPost, p, bytes.NewBufferString(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code == 0 || rec.Body.Len() == 0 {
				t.Fatalf("%s %q: status %d, empty body", p, body, rec.Code)
			}
		}
	})
}
