package server

import (
	"context"
	"encoding/base64"
	"errors"
	"image/color"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// startImageURLServer serves the generated vision model ("vision") with
// image URLs allowed or not, and hosts (the test's image server, on
// loopback) reachable at any address.
func startImageURLServer(t *testing.T, allow bool, hosts ...string) *testServer {
	t.Helper()
	return serveConfig(t, Config{ModelsDir: testModels(t, "vision"), AllowImageURLs: allow, imageURLHosts: hosts, Sched: testSched(2, 256)})
}

// Image URLs (--allow-image-urls) with the official clients against a
// real server and the vision model: an image fetched by URL gives the
// same greedy answer as the same bytes sent inline, in every dialect; a
// URL that fails is a 400 naming the part; a loopback, private or
// link-local address is refused before any connection, whatever the
// dialect; without the flag every http(s) URL is the old 400 and nothing
// is fetched.
func TestImageURLs(t *testing.T) {
	red := solidPNG(t, 32, color.NRGBA{200, 30, 30, 255})
	blue := solidPNG(t, 48, color.NRGBA{20, 40, 220, 255})
	var hits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/red.png", func(w http.ResponseWriter, r *http.Request) { hits.Add(1); w.Write(red) })
	mux.HandleFunc("/blue.png", func(w http.ResponseWriter, r *http.Request) { hits.Add(1); w.Write(blue) })
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) { hits.Add(1); w.Write([]byte("<html>hello</html>")) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { hits.Add(1); http.NotFound(w, r) })
	img := httptest.NewServer(mux)
	t.Cleanup(img.Close)

	ts := startImageURLServer(t, true, img.Listener.Addr().String())
	ctx := context.Background()
	oa := oaClient(ts)
	chat := func(url string) (string, error) {
		comp, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: "vision", Temperature: openai.Float(0), MaxTokens: openai.Int(8),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("What colour?"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: url}),
			})},
		})
		if err != nil {
			return "", err
		}
		return comp.Choices[0].Message.Content, nil
	}
	an := anClient(ts)
	message := func(block anthropic.ContentBlockParamUnion) (string, error) {
		msg, err := an.Messages.New(ctx, anthropic.MessageNewParams{Model: "vision", MaxTokens: 8, Temperature: anthropic.Float(0),
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(block, anthropic.NewTextBlock("What colour?"))}})
		if err != nil {
			return "", err
		}
		if len(msg.Content) == 0 {
			return "", nil
		}
		return msg.Content[0].Text, nil
	}
	respond := func(url string) (string, error) {
		r, err := oa.Responses.New(ctx, responses.ResponseNewParams{Model: "vision", Store: openai.Bool(false), Temperature: openai.Float(0),
			MaxOutputTokens: openai.Int(16), Input: items(responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
				{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String(url)}},
				{OfInputText: &responses.ResponseInputTextParam{Text: "What colour?"}},
			}, responses.EasyInputMessageRoleUser))})
		if err != nil {
			return "", err
		}
		return r.OutputText(), nil
	}
	redURL := img.URL + "/red.png"

	// The same answer by URL as inline, each dialect.
	inline, err := chat(dataURL(red))
	if err != nil {
		t.Fatal(err)
	}
	byURL, err := chat(redURL)
	if err != nil {
		t.Fatalf("openai, image by URL: %v", err)
	}

	if byURL != inline || hits.Load() != 1 {
		t.Errorf("openai: by URL %q (%d fetches), inline %q", byURL, hits.Load(), inline)
	}
	// Another image by URL: its own answer (the answers depend on the
	// image, so the URL's bytes, not any image, reached the model).
	blueInline, err := chat(dataURL(blue))
	if err != nil {
		t.Fatal(err)
	}
	blueURL, err := chat(img.URL + "/blue.png")
	if err != nil || blueURL != blueInline || blueInline == inline {
		t.Errorf("openai, blue: by URL %q (%v), inline %q; red %q", blueURL, err, blueInline, inline)
	}
	anInline, err := message(anthropic.NewImageBlockBase64("image/png", base64.StdEncoding.EncodeToString(red)))
	if err != nil {
		t.Fatal(err)
	}
	anURL, err := message(anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: redURL}))
	if err != nil {
		t.Fatalf("anthropic, url source: %v", err)
	}
	if anURL != anInline || hits.Load() != 3 {
		t.Errorf("anthropic: url source %q (%d fetches), base64 %q", anURL, hits.Load(), anInline)
	}
	rsInline, err := respond(dataURL(red))
	if err != nil {
		t.Fatal(err)
	}
	rsURL, err := respond(redURL)
	if err != nil {
		t.Fatalf("responses, input_image by URL: %v", err)
	}
	if rsURL != rsInline || hits.Load() != 4 {
		t.Errorf("responses: by URL %q (%d fetches), inline %q", rsURL, hits.Load(), rsInline)
	}

	if inline == "" || anInline == "" || rsInline == "" {
		t.Errorf("empty answers: openai %q, anthropic %q, responses %q", inline, anInline, rsInline)
	}

	// A URL that fails is a 400 naming the part and the URL.
	_, err = chat(img.URL + "/missing.png")
	openaiStatus(t, "openai 404", err, http.StatusBadRequest, "messages[0].content[1].image_url.url",
		"fetching "+img.URL+`/missing.png: the server answered "404 Not Found"`)
	_, err = chat(img.URL + "/page")
	openaiStatus(t, "openai html", err, http.StatusBadRequest, "messages[0].content[1].image_url.url",
		"fetching "+img.URL+"/page: not a JPEG, PNG, GIF or WebP image (the data looks like text/html")
	_, err = message(anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: img.URL + "/missing.png"}))
	anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "messages[0].content[0].source.url: fetching "+img.URL+"/missing.png: the server answered")
	_, err = respond(img.URL + "/page")
	openaiStatus(t, "responses html", err, http.StatusBadRequest, "input[0].content[0].image_url", "fetching "+img.URL+"/page: not a JPEG")

	// Addresses that are not public, the server's own included, are
	// refused in every dialect; nothing reaches the image server.
	before := hits.Load()
	for _, c := range []struct{ url, why string }{
		{ts.URL + "/api/tags", "a loopback address"},
		{"http://localhost:" + img.URL[len("http://127.0.0.1:"):] + "/red.png", "a loopback address"},
		{"http://10.0.0.1/x.png", "a private address"},
		{"https://192.168.1.10/x.png", "a private address"},
		{"http://[::ffff:172.16.0.1]/x.png", "a private address"},
		{"http://169.254.169.254/latest/meta-data/", "a link-local address"},
	} {
		_, err := chat(c.url)
		openaiStatus(t, "openai "+c.url, err, http.StatusBadRequest, "messages[0].content[1].image_url.url", c.why)
		_, err = message(anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: c.url}))
		anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", c.why)
		_, err = respond(c.url)
		openaiStatus(t, "responses "+c.url, err, http.StatusBadRequest, "input[0].content[0].image_url", c.why)
	}
	if hits.Load() != before {
		t.Errorf("the image server got %d requests for refused URLs", hits.Load()-before)
	}

	// Worst values: a 200 KB URL is refused with a short message; an
	// Anthropic url source must be an http(s) URL.
	long := "http://10.0.0.1/" + strings.Repeat("%41", 70000)
	_, err = chat(long)
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusBadRequest || !strings.Contains(oe.Message, "a private address") || len(oe.Message) > 600 {
		t.Errorf("a 200 KB URL: %v", err)
	}
	for url, want := range map[string]string{
		dataURL(red):         "messages[0].content[0].source.url: expected an http(s) URL",
		"":                   "messages[0].content[0].source.url: Field required",
		"file:///etc/passwd": "messages[0].content[0].source.url: expected an http(s) URL",
		"http://":            "messages[0].content[0].source.url: fetching http://: not a valid http(s) URL",
	} {
		_, err = message(anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: url}))
		anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", want)
	}

	// Without --allow-image-urls: the old 400s, nothing fetched.
	off := startImageURLServer(t, false, img.Listener.Addr().String())
	before = hits.Load()
	oa, an = oaClient(off), anClient(off)
	_, err = chat(redURL)
	openaiStatus(t, "openai, flag off", err, http.StatusBadRequest, "messages[0].content[1].image_url.url", "image URLs are not fetched")
	_, err = message(anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: redURL}))
	anAPIError(t, err, http.StatusBadRequest, "invalid_request_error", `messages[0].content[0].source.type: "url" image sources are not fetched`)
	_, err = respond(redURL)
	openaiStatus(t, "responses, flag off", err, http.StatusBadRequest, "input[0].content[0].image_url", "image URLs are not fetched")
	if hits.Load() != before {
		t.Errorf("without the flag the image server got %d requests", hits.Load()-before)
	}
}
