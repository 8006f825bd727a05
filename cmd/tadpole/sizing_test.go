package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// Issue 24: serve with neither --parallel nor --context-length (nor their
// variables: startDaemon drops TADPOLE_*) sizes the model from free
// memory; /api/ps shows the choice, the log names it, and a prompt longer
// than the chosen context with truncate:false is a 400 naming both sizes,
// not a silent cut.
func TestServeSizesFromMemory(t *testing.T) {
	models := t.TempDir()
	abs, _ := filepath.Abs(testmodels.Testdata("stories260K.gguf")) // trained on 2048 tokens
	if err := os.Symlink(abs, filepath.Join(models, "stories.gguf")); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "--models", models, "--data-dir", filepath.Join(t.TempDir(), "data"), "--threads", "1")
	c, err := client.New(d.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	no := false
	if err := c.Generate(ctx, &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once upon a time", Stream: &no,
		Options: map[string]any{"num_predict": 4, "temperature": 0}}, func(ollamaapi.GenerateResponse) error { return nil }); err != nil {
		t.Fatalf("generate: %v\n%s", err, d.log())
	}

	// /api/ps through the Ollama client (its fields intact), then
	// Tadpole's extras from the raw answer.
	ps, err := c.Ps(ctx)
	if err != nil || len(ps.Models) != 1 {
		t.Fatalf("ps: %+v %v", ps, err)
	}
	var raw struct {
		Models []struct {
			ContextLength int `json:"context_length"`
			Tadpole       struct {
				SlotsTotal int `json:"slots_total"`
				Sizing     struct {
					Mode            string `json:"mode"`
					Slots           int    `json:"slots"`
					ContextLength   int    `json:"context_length"`
					KVBytesPerToken uint64 `json:"kv_bytes_per_token"`
					FreeBytes       uint64 `json:"free_bytes"`
					Where           string `json:"where"`
					Reason          string `json:"reason"`
				} `json:"sizing"`
			} `json:"tadpole"`
		} `json:"models"`
	}
	if code := d.call(t, "GET", "/api/ps", "", "", &raw); code != 200 || len(raw.Models) != 1 {
		t.Fatalf("ps: %d %+v", code, raw)
	}
	m := raw.Models[0]
	z := m.Tadpole.Sizing
	t.Logf("ps: context %d, %d slots, sizing %+v", m.ContextLength, m.Tadpole.SlotsTotal, z)
	// The demo model is a few MB: any machine that runs the test holds
	// its whole trained context; the slots depend on the machine, 1..16,
	// and /api/ps shows the runner's real count.
	if z.Mode != "auto" || z.ContextLength != 2048 || m.ContextLength != 2048 || ps.Models[0].ContextLength != 2048 ||
		z.Slots < 1 || z.Slots > 16 || m.Tadpole.SlotsTotal != z.Slots || z.KVBytesPerToken == 0 || z.Where == "" || z.Reason == "" {
		t.Fatalf("ps: context %d, %d slots, sizing %+v", m.ContextLength, m.Tadpole.SlotsTotal, z)
	}
	if log := d.log(); !strings.Contains(log, "sizing from memory") || !strings.Contains(log, "auto_parallel=true") {
		t.Fatalf("no sizing log line:\n%s", log)
	}

	// A prompt past the 2048 tokens, truncate:false: a 400 at both doors.
	long := strings.Repeat("Once upon a time there was a little girl who loved the park. ", 300)
	tooLong := regexp.MustCompile(`prompt of (\d+) tokens does not fit the context of 2048 tokens`)
	check := func(door string, err error) {
		t.Helper()
		var se *client.StatusError
		if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: %v, want a 400", door, err)
		}
		sub := tooLong.FindStringSubmatch(se.Message)
		if sub == nil {
			t.Fatalf("%s: %q names no sizes", door, se.Message)
		}
		if n, _ := strconv.Atoi(sub[1]); n <= 2048 {
			t.Fatalf("%s: prompt of %d tokens", door, n)
		}
		t.Logf("%s: %s", door, se.Message)
	}
	check("/api/generate", c.Generate(ctx, &ollamaapi.GenerateRequest{Model: "stories", Prompt: long, Stream: &no, Truncate: &no,
		Options: map[string]any{"num_predict": 4}}, func(ollamaapi.GenerateResponse) error { return nil }))
	check("/api/chat", c.Chat(ctx, &ollamaapi.ChatRequest{Model: "stories", Messages: []ollamaapi.Message{{Role: "user", Content: long}},
		Stream: &no, Truncate: &no, Options: map[string]any{"num_predict": 4}}, func(ollamaapi.ChatResponse) error { return nil }))
	// Without truncate:false Ollama's behaviour stays: the prompt is cut
	// to the context and the answer comes.
	var got ollamaapi.GenerateResponse
	if err := c.Generate(ctx, &ollamaapi.GenerateRequest{Model: "stories", Prompt: long, Stream: &no,
		Options: map[string]any{"num_predict": 4}}, func(r ollamaapi.GenerateResponse) error { got = r; return nil }); err != nil || !got.Done || got.PromptEvalCount >= 2048 {
		b, _ := json.Marshal(got)
		t.Fatalf("truncated: %v %s", err, b)
	}
}
