package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// Images and audio through every dialect, with the official clients
// (Tadpole's own server/client for Ollama's API) against a real server:
// refused with a 400 naming the model for a text-only model, naming the
// image for one that does not decode, and over the limits; /api/show of a
// model with a projector.

// writeTestProjector writes a minimal clip GGUF with a vision encoder:
// enough for the store and /api/show (its metadata), not for loading.
func writeTestProjector(t *testing.T, path string) {
	t.Helper()
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: "clip"},
		{Key: "general.name", Value: "test projector"},
		{Key: "clip.has_vision_encoder", Value: true},
		{Key: "clip.has_audio_encoder", Value: false},
		{Key: "clip.projector_type", Value: "mlp"},
		{Key: "clip.vision.image_size", Value: uint32(28)},
	}
	tensors := []gguf.Tensor{{Name: "mm.0.weight", Dims: []uint64{4, 4}, Type: gguf.TensorType(0), Data: make([]byte, 64)}}
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		t.Fatal(err)
	}
}

// startMediaServer serves "stories" (text only) and "vis" (the generated
// vision model: a text model with its projector beside it,
// vis.mmproj.gguf), at most two images a request.
func startMediaServer(t *testing.T) *testServer {
	t.Helper()
	return serveConfig(t, Config{ModelsDir: testModels(t, "stories", "vis=vision"), MaxImages: 2, Sched: testSched(2, 256)})
}

// testPNG is a small valid PNG.
func testPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 4, 4))
	for i := range 16 {
		img.SetNRGBA(i%4, i/4, color.NRGBA{uint8(16 * i), 100, 200, 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// hugePNG is a PNG header claiming 100000×100000 pixels, with no data.
func hugePNG() []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], 100000)
	binary.BigEndian.PutUint32(ihdr[4:], 100000)
	ihdr[8], ihdr[9] = 8, 2
	binary.Write(&b, binary.BigEndian, uint32(13))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

func dataURL(b []byte) string { return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b) }

// ollamaStatus checks an Ollama client error's status and message.
func ollamaStatus(t *testing.T, what string, err error, status int, want string) {
	t.Helper()
	var se client.StatusError
	if !asStatus(err, &se) || se.StatusCode != status || !strings.Contains(se.Message, want) {
		t.Errorf("%s: %v, want %d containing %q", what, err, status, want)
	}
}

// openaiStatus checks an OpenAI client error's status, param and message.
func openaiStatus(t *testing.T, what string, err error, status int, param, want string) {
	t.Helper()
	var e *openai.Error
	if !errors.As(err, &e) || e.StatusCode != status || e.Param != param || !strings.Contains(e.Message, want) {
		t.Errorf("%s: %v, want %d param %q containing %q", what, err, status, param, want)
	}
}

func TestMediaShowProjector(t *testing.T) {
	ts := startMediaServer(t)
	ctx := context.Background()
	show, err := ts.Client.Show(ctx, &ollamaapi.ShowRequest{Model: "vis"})
	if err != nil {
		t.Fatal(err)
	}
	var caps []string
	for _, c := range show.Capabilities {
		caps = append(caps, string(c))
	}
	if !slices.Contains(caps, "vision") || !slices.Contains(caps, "completion") || slices.Contains(caps, "audio") {
		t.Errorf("capabilities %q", caps)
	}
	pi := show.ProjectorInfo
	if pi["general.architecture"] != "clip" || pi["clip.has_vision_encoder"] != true || pi["clip.projector_type"] != "mlp" || pi["clip.vision.image_size"] != float64(testmodels.VisionImageSize) {
		t.Errorf("projector_info %v", pi)
	}
	if strings.Count(show.Modelfile, "\nFROM ") != 2 || !strings.Contains(show.Modelfile, "vis.mmproj.gguf") {
		t.Errorf("modelfile:\n%s", show.Modelfile)
	}
	text, err := ts.Client.Show(ctx, &ollamaapi.ShowRequest{Model: "stories"})
	if err != nil {
		t.Fatal(err)
	}
	if text.ProjectorInfo != nil || slices.Contains(text.Capabilities, "vision") {
		t.Errorf("stories: capabilities %v, projector_info %v", text.Capabilities, text.ProjectorInfo)
	}
	// The projector file is no model of its own.
	list, err := ts.Client.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Models {
		names = append(names, m.Name)
	}
	if !slices.Equal(names, []string{"stories:latest", "vis:latest"}) {
		t.Errorf("tags %q", names)
	}
	oa := oaClient(ts)
	models, err := oa.Models.List(ctx)
	if err != nil || len(models.Data) != 2 {
		t.Errorf("/v1/models: %v %v", models, err)
	}
}

func TestMediaTextOnlyModel(t *testing.T) {
	ts := startMediaServer(t)
	ctx := context.Background()
	img := testPNG(t)
	want := `model "stories" does not support images`

	// Ollama: /api/generate and /api/chat.
	err := ts.Client.Generate(ctx, &ollamaapi.GenerateRequest{Model: "stories", Prompt: "What is this?", Images: b64Images(img), Stream: ptr(false)},
		func(ollamaapi.GenerateResponse) error { return nil })
	ollamaStatus(t, "generate", err, http.StatusBadRequest, want)
	err = ts.Client.Chat(ctx, &ollamaapi.ChatRequest{Model: "stories", Stream: ptr(false), Messages: []ollamaapi.Message{{Role: "user", Content: "What is this?", Images: b64Images(img)}}},
		func(ollamaapi.ChatResponse) error { return nil })
	ollamaStatus(t, "chat", err, http.StatusBadRequest, want)

	// OpenAI: an image_url part.
	oa := oaClient(ts)
	_, err = oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "stories", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is this?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: dataURL(img)}),
		}),
	}})
	openaiStatus(t, "openai", err, http.StatusBadRequest, "", want)

	// Anthropic: an image block.
	an := anClient(ts)
	_, err = an.Messages.New(ctx, anthropic.MessageNewParams{Model: "stories", MaxTokens: 5, Messages: []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewTextBlock("What is this?"), anthropic.NewImageBlockBase64("image/png", base64.StdEncoding.EncodeToString(img))),
	}})
	anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", want)

	// Responses: an input_image part.
	_, err = oa.Responses.New(ctx, responses.ResponseNewParams{Model: "stories", Store: openai.Bool(false), Input: items(
		responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
			{OfInputText: &responses.ResponseInputTextParam{Text: "What is this?"}},
			{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String(dataURL(img))}},
		}, responses.EasyInputMessageRoleUser))})
	openaiStatus(t, "responses", err, http.StatusBadRequest, "", want)

	// Audio to a model without an audio encoder.
	wav := []byte("RIFF\x28\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x80\x3e\x00\x00\x00\x7d\x00\x00\x02\x00\x10\x00data\x04\x00\x00\x00\x01\x00\x02\x00")
	_, err = oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "vis", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.InputAudioContentPart(openai.ChatCompletionContentPartInputAudioInputAudioParam{Data: base64.StdEncoding.EncodeToString(wav), Format: "wav"}),
		}),
	}})
	openaiStatus(t, "audio", err, http.StatusBadRequest, "", `model "vis" does not support audio: its projector has no audio encoder`)

	// Refused before loading: no model was loaded only to refuse.
	if loaded := ts.srv.sched.Loaded(); len(loaded) != 0 {
		t.Errorf("%d models loaded", len(loaded))
	}
}

func TestMediaBadImages(t *testing.T) {
	ts := startMediaServer(t)
	ctx := context.Background()
	img := testPNG(t)
	corrupt := append(append([]byte{}, img[:20]...), bytes.Repeat([]byte{7}, 40)...)
	gen := func(images ...[]byte) error {
		ims := b64Images(images...)
		return ts.Client.Generate(ctx, &ollamaapi.GenerateRequest{Model: "vis", Prompt: "What is this?", Images: ims, Stream: ptr(false)},
			func(ollamaapi.GenerateResponse) error { return nil })
	}
	// Which image failed, and why, by its field.
	ollamaStatus(t, "corrupt", gen(img, corrupt), http.StatusBadRequest, "images[1]: corrupt or truncated PNG image")
	ollamaStatus(t, "huge", gen(hugePNG()), http.StatusBadRequest, "images[0]: PNG image is 100000×100000 pixels: width and height must be at most 8192 (the vision encoder's limit)")
	ollamaStatus(t, "not an image", gen([]byte("hello, world")), http.StatusBadRequest, "images[0]: unsupported image format")
	ollamaStatus(t, "too many", gen(img, img, img), http.StatusBadRequest, "too many images: the request has 3 images and audio clips, at most 2 are allowed")
	err := ts.Client.Chat(ctx, &ollamaapi.ChatRequest{Model: "vis", Stream: ptr(false), Messages: []ollamaapi.Message{
		{Role: "user", Content: "a", Images: b64Images(img)},
		{Role: "assistant", Content: "b"},
		{Role: "user", Content: "c", Images: b64Images(corrupt)},
	}}, func(ollamaapi.ChatResponse) error { return nil })
	ollamaStatus(t, "chat corrupt", err, http.StatusBadRequest, "messages[2].images[0]: corrupt or truncated PNG image")

	// A data URL whose type is not its content's, in Ollama's images.
	resp := postJSON(t, ts.URL+"/api/generate", `{"model":"vis","prompt":"x","stream":false,"images":["data:image/jpeg;base64,`+base64.StdEncoding.EncodeToString(img)+`"]}`)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(raw)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "images[0]: the data URL says image/jpeg but the data is a PNG image") {
		t.Errorf("wrong type: %d %s", resp.StatusCode, body)
	}

	// OpenAI: the part named, an http URL refused, a corrupt image named.
	oa := oaClient(ts)
	chat := func(url string) error {
		_, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "vis", Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("What is this?"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: url}),
			}),
		}})
		return err
	}
	openaiStatus(t, "openai corrupt", chat(dataURL(corrupt)), http.StatusBadRequest, "messages[0].content[1]", "messages[0].content[1]: corrupt or truncated PNG image")
	openaiStatus(t, "openai http", chat("https://example.com/cat.png"), http.StatusBadRequest, "messages[0].content[1].image_url.url", "image URLs are not fetched")
	openaiStatus(t, "openai type", chat("data:image/gif;base64,"+base64.StdEncoding.EncodeToString(img)), http.StatusBadRequest,
		"messages[0].content[1].image_url.url", "the data URL says image/gif but the data is a PNG image")

	// Anthropic: a media_type that is not the data's.
	an := anClient(ts)
	_, err = an.Messages.New(ctx, anthropic.MessageNewParams{Model: "vis", MaxTokens: 5, Messages: []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewImageBlockBase64("image/webp", base64.StdEncoding.EncodeToString(img))),
	}})
	anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "messages[0].content[0].source: the data URL says image/webp but the data is a PNG image")
	_, err = an.Messages.New(ctx, anthropic.MessageNewParams{Model: "vis", MaxTokens: 5, Messages: []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewImageBlockBase64("image/png", base64.StdEncoding.EncodeToString(corrupt))),
	}})
	anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "messages[0].content[0]: corrupt or truncated PNG image")

	// Responses: a corrupt image is named by its message.
	_, err = oa.Responses.New(ctx, responses.ResponseNewParams{Model: "vis", Store: openai.Bool(false), Input: items(
		responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
			{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String(dataURL(corrupt))}},
		}, responses.EasyInputMessageRoleUser))})
	openaiStatus(t, "responses corrupt", err, http.StatusBadRequest, "input[0].content[0]", "input[0].content[0]: corrupt or truncated PNG image")
}

// /api/create with files (Ollama's way to create a vision model: the
// model and its projector uploaded as blobs) makes a projector layer,
// whatever the file names' order; a projector alone is refused.
func TestMediaCreateWithProjector(t *testing.T) {
	ts := startMediaServer(t)
	ctx := context.Background()
	dir := t.TempDir()
	modelPath, projPath := filepath.Join(dir, "model.gguf"), filepath.Join(dir, "mmproj.gguf")
	if err := testmodels.WriteBigram(modelPath); err != nil {
		t.Fatal(err)
	}
	writeTestProjector(t, projPath)
	upload := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		d := fmt.Sprintf("sha256:%x", sha256.Sum256(b))
		if err := ts.Client.CreateBlob(ctx, d, bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
		return d
	}
	md, pd := upload(modelPath), upload(projPath)
	// "a-mmproj.gguf" sorts before "model.gguf".
	err := ts.Client.Create(ctx, &ollamaapi.CreateRequest{Model: "uploaded", Files: map[string]string{"a-mmproj.gguf": pd, "model.gguf": md}},
		func(ollamaapi.ProgressResponse) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	show, err := ts.Client.Show(ctx, &ollamaapi.ShowRequest{Model: "uploaded"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(show.Capabilities, "vision") || show.ProjectorInfo["clip.projector_type"] != "mlp" || show.Details.Family != "llama" {
		t.Errorf("uploaded: capabilities %v, projector_info %v, details %+v", show.Capabilities, show.ProjectorInfo, show.Details)
	}
	if strings.Count(show.Modelfile, "\nFROM ") != 2 {
		t.Errorf("modelfile:\n%s", show.Modelfile)
	}
	err = ts.Client.Create(ctx, &ollamaapi.CreateRequest{Model: "projonly", Files: map[string]string{"mmproj.gguf": pd}},
		func(ollamaapi.ProgressResponse) error { return nil })
	ollamaStatus(t, "projector alone", err, http.StatusBadRequest, "the first FROM must be a language model")
}

// Anthropic's count_tokens counts an image as the positions the projector
// gives it (testmodels.VisionTokens), without encoding it, and a streamed
// answer's message_start reports the same prompt size.
func TestAnthropicCountsImages(t *testing.T) {
	ts := startMediaServer(t)
	ctx := context.Background()
	an := anClient(ts)
	img := base64.StdEncoding.EncodeToString(testPNG(t))
	text := anthropic.NewTextBlock(" What is this?")
	count := func(blocks ...anthropic.ContentBlockParamUnion) int64 {
		t.Helper()
		n, err := an.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "vis",
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(blocks...)}})
		if err != nil {
			t.Fatal(err)
		}
		return n.InputTokens
	}
	plain := count(text)
	one := count(anthropic.NewImageBlockBase64("image/png", img), text)
	two := count(anthropic.NewImageBlockBase64("image/png", img), anthropic.NewImageBlockBase64("image/png", img), text)
	// The first image also splits the text where it goes, which may
	// tokenize a token differently; the second adds exactly its positions.
	if d := one - plain; d < testmodels.VisionTokens-1 || d > testmodels.VisionTokens+1 || two-one != testmodels.VisionTokens {
		t.Errorf("count_tokens: %d without an image, %d with one, %d with two; want %d more per image", plain, one, two, testmodels.VisionTokens)
	}
	msg, _ := anStream(t, an, anthropic.MessageNewParams{Model: "vis", MaxTokens: 3, Messages: []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewImageBlockBase64("image/png", img), text)}})
	if msg.Usage.InputTokens != one {
		t.Errorf("message_start input_tokens %d, count_tokens %d", msg.Usage.InputTokens, one)
	}
	// An image count_tokens cannot take: the same 400 as a generation.
	_, err := an.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "stories",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewImageBlockBase64("image/png", img), text)}})
	anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", `model "stories" does not support images`)
}
