package ollama

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// While a quantization runs, another create with quantize is refused at
// once with 503 and Retry-After (one at a time: each takes every core);
// once it ends, the next one runs.
func TestOneQuantizationAtATime(t *testing.T) {
	dir := t.TempDir()
	// A model whose rows fit Q8_0's 32-wide blocks.
	if err := testmodels.WriteRandomLlama(filepath.Join(dir, "base.gguf"), testmodels.Small, 0, 1); err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler
	(&Handler{Store: &models.Store{Dir: dir}}).Register(e)
	srv := httptest.NewServer(e)
	defer srv.Close()
	create := func() *http.Response {
		body := `{"model":"small","from":"base","quantize":"q8_0","stream":false}`
		resp, err := http.Post(srv.URL+"/api/create", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	quantizing.Lock() // as a running quantization holds it
	resp := create()
	var answer struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	quantizing.Unlock()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(answer.Error, "another quantization") {
		t.Fatalf("second quantization: %d %q Retry-After %q", resp.StatusCode, answer.Error, resp.Header.Get("Retry-After"))
	}

	resp = create()
	answer.Error = ""
	json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("quantization after the first ended: %d %q", resp.StatusCode, answer.Error)
	}
	if !quantizing.TryLock() {
		t.Fatal("the quantization lock was not released")
	}
	quantizing.Unlock()
}
