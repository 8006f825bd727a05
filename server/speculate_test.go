package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// A draft model named for a model (--draft) is loaded beside it and the
// answers are those without it; a draft model of another vocabulary makes
// the load fail with a message naming both files, and the server goes on
// serving.
func TestServerDraftModel(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{"stories.gguf": "stories260K.gguf", "storydraft.gguf": "stories260K.gguf", "random.gguf": "llama-2-tiny-random.gguf"} {
		if err := linkFile(testmodels.Testdata(src), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	start := func(drafts map[string]string, draftMax int) *testServer {
		return serveForTest(t, New(Config{ModelsDir: dir, Drafts: drafts, Sched: sched.Config{Parallel: 2, NumCtx: 256, KeepAlive: time.Minute,
			FlashAttn: engine.FlashAttentionOn, Threads: 1, DraftMax: draftMax}}))
	}
	gen := func(ts *testServer, model string, temp float64) (string, error) {
		var out strings.Builder
		err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: model, Prompt: "Once upon a time", Stream: ptr(false),
			Options: map[string]any{"temperature": temp, "seed": 5, "num_predict": 40}}, func(r ollamaapi.GenerateResponse) error {
			out.WriteString(r.Response)
			return nil
		})
		return out.String(), err
	}
	plain := start(nil, -1)
	drafted := start(map[string]string{"stories:latest": "storydraft:latest", "random:latest": "stories:latest"}, 0)
	for _, temp := range []float64{0, 0.8} {
		want, err := gen(plain, "stories", temp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := gen(drafted, "stories", temp)
		if err != nil || got != want {
			t.Errorf("temperature %g: with the draft model %q (%v), without %q", temp, got, err, want)
		}
	}
	_, err := gen(drafted, "random", 0)
	if err == nil || !strings.Contains(err.Error(), "draft model") || !strings.Contains(err.Error(), "stories.gguf") || !strings.Contains(err.Error(), "random.gguf") {
		t.Errorf("a draft model of another vocabulary: %v", err)
	}
	if _, err := gen(drafted, "stories", 0); err != nil {
		t.Errorf("after a refused draft model: %v", err)
	}
}

// A Modelfile's DRAFT is the model's draft model without --draft (as
// /api/ps shows), answers stay those without it, and draft_num_predict
// narrows drafting per request: 0 turns it off, the worst values are a
// 400 naming the option and its range.
func TestServerModelfileDraft(t *testing.T) {
	testkit.Full(t, "serves the real engine")
	dir, src := t.TempDir(), t.TempDir()
	heavy, draft := filepath.Join(src, "heavy.gguf"), filepath.Join(src, "bigram.gguf")
	if err := testmodels.WriteBigramHeavy(heavy, 2); err != nil {
		t.Fatal(err)
	}
	if err := testmodels.WriteBigram(draft); err != nil {
		t.Fatal(err)
	}
	st := &models.Store{Dir: dir}
	for name, text := range map[string]string{"heavy": "FROM " + heavy + "\n", "drafted": "FROM " + heavy + "\nDRAFT " + draft + "\n"} {
		mf, err := models.ParseModelfile(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Create(name, mf, nil); err != nil {
			t.Fatal(err)
		}
	}
	ts := serveConfig(t, Config{ModelsDir: dir, Sched: testSched(2, 256)})
	gen := func(model string, opts map[string]any) (string, error) {
		var out strings.Builder
		o := map[string]any{"temperature": 0, "num_predict": 24}
		for k, v := range opts {
			o[k] = v
		}
		err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: model, Prompt: "ping", Raw: true, Stream: ptr(false), Options: o},
			func(r ollamaapi.GenerateResponse) error {
				out.WriteString(r.Response)
				return nil
			})
		return out.String(), err
	}
	want, err := gen("heavy", nil)
	if err != nil || want == "" {
		t.Fatalf("without a draft: %q, %v", want, err)
	}
	for _, opts := range []map[string]any{nil, {"draft_num_predict": 0}, {"draft_num_predict": 1}, {"draft_num_predict": 64}} {
		if got, err := gen("drafted", opts); err != nil || got != want {
			t.Errorf("DRAFT, options %v: %q (%v), want %q", opts, got, err, want)
		}
	}
	body := getBody(t, ts.URL+"/api/ps")
	if !strings.Contains(body, `"drafted:latest"`) || !strings.Contains(body, `"draft_model"`) {
		t.Errorf("/api/ps does not show the Modelfile's draft model: %s", body)
	}
	// Over the API a DRAFT names an uploaded blob, never a server path.
	for _, v := range []string{draft, "/etc/passwd", "heavy"} {
		resp, err := http.Post(ts.URL+"/api/create", "application/json", strings.NewReader(fmt.Sprintf(`{"model":"x","modelfile":%q}`, "FROM heavy\nDRAFT "+v+"\n")))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "give the digest of a blob") {
			t.Errorf("/api/create with DRAFT %s: %d %s", v, resp.StatusCode, b)
		}
	}
	for _, v := range []any{65, -2, 1 << 40, "many"} {
		_, err := gen("drafted", map[string]any{"draft_num_predict": v})
		if err == nil || !strings.Contains(err.Error(), "draft_num_predict") {
			t.Errorf("draft_num_predict %v: %v, want a 400 naming it", v, err)
		}
	}
}
