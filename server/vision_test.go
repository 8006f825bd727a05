package server

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// startVisionServer serves the generated vision model ("vision": a random
// Tiny llama with an mlp projector, vision.mmproj.gguf, beside it) and
// the demo model, four slots.
func startVisionServer(t *testing.T) *testServer {
	t.Helper()
	return serveConfig(t, Config{ModelsDir: testModels(t, "vision", "stories"), Sched: testSched(4, 256)})
}

// solidPNG is a size×size PNG of one colour with a diagonal of another.
func solidPNG(t *testing.T, size int, c color.NRGBA) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for y := range size {
		for x := range size {
			img.SetNRGBA(x, y, c)
			if x == y {
				img.SetNRGBA(x, y, color.NRGBA{255 - c.R, 255 - c.G, 255 - c.B, 255})
			}
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// visionGenerate runs a non-streamed greedy /api/generate.
func visionGenerate(t *testing.T, ts *testServer, prompt string, keepAlive time.Duration, images ...[]byte) ollamaapi.GenerateResponse {
	t.Helper()
	imgs := b64Images(images...)
	stream := false
	var resp ollamaapi.GenerateResponse
	err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{
		Model: "vision", Prompt: prompt, Images: imgs, Stream: &stream, KeepAlive: &ollamaapi.Duration{Duration: keepAlive},
		Options: map[string]any{"temperature": 0, "num_predict": 12},
	}, func(r ollamaapi.GenerateResponse) error { resp = r; return nil })
	if err != nil {
		t.Fatalf("generate %q with %d image(s): %v", prompt, len(images), err)
	}
	return resp
}

// Images through mtmd, the runner's embedding spans and the prefix cache,
// with the official Ollama and OpenAI clients against a real server.
func TestVision(t *testing.T) {
	ts := startVisionServer(t)
	red := solidPNG(t, 32, color.NRGBA{200, 30, 30, 255})
	blue := solidPNG(t, 48, color.NRGBA{20, 40, 220, 255})

	// An image takes exactly the positions mtmd reports for it: the
	// evaluated prompt (keep_alive 0 unloads the model after each request,
	// so nothing is reused) is the text tokens that come back in the
	// context plus the image's positions, which do not (its placeholders
	// are no token ids).
	plain := visionGenerate(t, ts, "\nWhat is this?", 0)
	withRed := visionGenerate(t, ts, "What is this?", 0, red)
	twoRed := visionGenerate(t, ts, "What is this?", 0, red, red)
	for _, c := range []struct {
		r      ollamaapi.GenerateResponse
		images int
	}{{plain, 0}, {withRed, 1}, {twoRed, 2}} {
		text := len(c.r.Context) - c.r.EvalCount
		if d := c.r.PromptEvalCount - text; d != c.images*testmodels.VisionTokens {
			t.Errorf("%d image(s): prompt_eval_count %d, %d text tokens: %d positions for the images, want %d",
				c.images, c.r.PromptEvalCount, text, d, c.images*testmodels.VisionTokens)
		}
	}
	withBlue := visionGenerate(t, ts, "What is this?", 0, blue)
	if withRed.Response == plain.Response || withRed.Response == withBlue.Response {
		t.Errorf("answers do not depend on the image: none %q, red %q, blue %q", plain.Response, withRed.Response, withBlue.Response)
	}
	again := visionGenerate(t, ts, "What is this?", 0, red)
	if again.Response != withRed.Response {
		t.Errorf("same image, another answer: %q then %q", withRed.Response, again.Response)
	}

	// The same image alone and among 4 concurrent requests (2 images, 2
	// texts) gives the same greedy answer.
	var wg sync.WaitGroup
	answers := make([]string, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch i {
			case 0, 1:
				answers[i] = visionGenerate(t, ts, "What is this?", time.Minute, red).Response
			default:
				answers[i] = visionGenerate(t, ts, "\nWhat is this?", time.Minute).Response
			}
		}()
	}
	wg.Wait()
	for i, want := range []string{withRed.Response, withRed.Response, plain.Response, plain.Response} {
		if answers[i] != want {
			t.Errorf("concurrent request %d: %q, alone %q", i, answers[i], want)
		}
	}

	// The prefix cache reuses an image only for the same pixels.
	first := visionGenerate(t, ts, "Describe the picture.", time.Minute, blue)
	second := visionGenerate(t, ts, "Describe the picture.", time.Minute, blue)
	if second.PromptEvalCount >= first.PromptEvalCount || second.PromptEvalCount > 2 || second.Response != first.Response {
		t.Errorf("same image again: prompt_eval_count %d after %d (answers %q, %q), want the image reused from the cache",
			second.PromptEvalCount, first.PromptEvalCount, second.Response, first.Response)
	}
	other := visionGenerate(t, ts, "Describe the picture.", time.Minute, red)
	if other.PromptEvalCount < testmodels.VisionTokens {
		t.Errorf("another image after a cached one: prompt_eval_count %d, want at least its %d positions evaluated", other.PromptEvalCount, testmodels.VisionTokens)
	}

	// Chat: Ollama's images on a message and OpenAI's image_url part give
	// the same prompt, so the same greedy answer.
	stream := false
	var chat ollamaapi.ChatResponse
	err := ts.Client.Chat(context.Background(), &ollamaapi.ChatRequest{
		Model: "vision", Stream: &stream, Options: map[string]any{"temperature": 0, "num_predict": 8},
		Messages: []ollamaapi.Message{{Role: "user", Content: "What colour?", Images: b64Images(red)}},
	}, func(r ollamaapi.ChatResponse) error { chat = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	oc := openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("x"))
	comp, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "vision", Temperature: openai.Float(0), MaxTokens: openai.Int(8),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: dataURL(red)}),
			openai.TextContentPart("What colour?"),
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := comp.Choices[0].Message.Content; got != chat.Message.Content {
		t.Errorf("OpenAI image_url answer %q, Ollama images answer %q", got, chat.Message.Content)
	}

	// Bad media: a corrupt image names which one; more than --max-images
	// (8) is a 400; the server keeps serving.
	bad := []byte("\x89PNG\r\n\x1a\nnot really")
	_, err = generateErr(ts, "vision", "x", red, bad)
	ollamaStatus(t, "corrupt second image", err, 400, "images[1]")
	var many [][]byte
	for range 9 {
		many = append(many, red)
	}
	_, err = generateErr(ts, "vision", "x", many...)
	ollamaStatus(t, "9 images", err, 400, "too many images")
	if r := visionGenerate(t, ts, "What is this?", time.Minute, red); r.Response != withRed.Response {
		t.Errorf("after the refusals: %q, want %q", r.Response, withRed.Response)
	}
}

// generateErr runs a greedy /api/generate and returns its error.
func generateErr(ts *testServer, model, prompt string, images ...[]byte) (ollamaapi.GenerateResponse, error) {
	imgs := b64Images(images...)
	stream := false
	var resp ollamaapi.GenerateResponse
	err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{
		Model: model, Prompt: prompt, Images: imgs, Stream: &stream, Options: map[string]any{"temperature": 0, "num_predict": 4},
	}, func(r ollamaapi.GenerateResponse) error { resp = r; return nil })
	return resp, err
}

// A projector llama.cpp would refuse (a clip header without the keys
// mtmd needs) leaves its model serving text; an image request is told
// why it cannot be served.
func TestVisionBrokenProjector(t *testing.T) {
	dir := t.TempDir()
	if err := testmodels.WriteVision(filepath.Join(dir, "broken.gguf"), filepath.Join(t.TempDir(), "unused.gguf")); err != nil {
		t.Fatal(err)
	}
	writeTestProjector(t, filepath.Join(dir, "broken.mmproj.gguf"))
	ts := serveConfig(t, Config{ModelsDir: dir, Sched: testSched(2, 256)})
	if _, err := generateErr(ts, "broken", "What is this?"); err != nil {
		t.Fatalf("text to a model whose projector does not load: %v", err)
	}
	_, err := generateErr(ts, "broken", "What is this?", solidPNG(t, 32, color.NRGBA{1, 2, 3, 255}))
	ollamaStatus(t, "image to a model whose projector does not load", err, 500, "projector cannot be loaded")
}
