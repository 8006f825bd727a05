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
	"github.com/tadpole-llm/tadpole/models/quantize"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// quantizeServer serves the Ollama routes over a store holding "base",
// a model whose rows fit Q8_0's 32-wide blocks, and returns the URL.
func quantizeServer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := testmodels.WriteRandomLlama(filepath.Join(dir, "base.gguf"), testmodels.Small, 0, 1); err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler
	(&Handler{Store: &models.Store{Dir: dir}}).Register(e)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv.URL
}

// While a quantization runs, another create with quantize is refused at
// once with 503 and Retry-After (one at a time: each takes every core);
// once it ends, the next one runs.
func TestOneQuantizationAtATime(t *testing.T) {
	url := quantizeServer(t)
	create := func() *http.Response {
		body := `{"model":"small","from":"base","quantize":"q8_0","stream":false}`
		resp, err := http.Post(url+"/api/create", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	done, err := quantize.Begin() // as a running quantization holds its place
	if err != nil {
		t.Fatal(err)
	}
	resp := create()
	var answer struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	done()
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
	done, err = quantize.Begin()
	if err != nil {
		t.Fatal("the quantization's place was not given back")
	}
	done()
}

// An unknown quantization type is a 400 naming the types on offer,
// before a streamed create sends its 200.
func TestQuantizeTypeRefused(t *testing.T) {
	url := quantizeServer(t)
	for _, stream := range []string{"true", "false"} {
		body := `{"model":"small","from":"base","quantize":"q9_9","stream":` + stream + `}`
		resp, err := http.Post(url+"/api/create", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var answer struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(answer.Error, `unsupported quantization "q9_9"`) || !strings.Contains(answer.Error, "Q4_K_M") {
			t.Errorf("stream %s: %d %q", stream, resp.StatusCode, answer.Error)
		}
	}
}
