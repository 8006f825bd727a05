package server

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tadpole-llm/tadpole/server/media"
)

// bombWebP is a lossless WebP of w×h pixels of one colour, 28 bytes
// whatever its size (every prefix code has one symbol: a pixel takes no
// bits). 5792×5792 is under the encoder's 33,554,432 pixels; decoded, it
// cost 3.5 s and 400 MB.
func bombWebP(w, h int) []byte {
	var bits uint64
	n := 0
	put := func(v uint64, width int) { bits |= v << n; n += width }
	put(uint64(w-1), 14)
	put(uint64(h-1), 14)
	put(0, 4) // no alpha, version 0
	put(0, 3) // no transform, colour cache or meta prefix codes
	for range 5 {
		put(0b0001, 4) // a simple code of one 1-bit symbol: 0
	}
	data := []byte{0x2f}
	for i := 0; i < (n+7)/8; i++ {
		data = append(data, byte(bits>>(8*i)))
	}
	le := func(v int) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
	chunk := append(append([]byte("VP8L"), le(len(data))...), data...)
	return append(append(append([]byte("RIFF"), le(4+len(chunk))...), "WEBP"...), chunk...)
}

// bombPNG is a PNG whose header declares w×h 16-bit RGBA pixels (8 bytes
// each to decode) followed by no image data.
func bombPNG(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, w), h)
	ihdr = append(ihdr, 16, 6, 0, 0, 0) // 16-bit RGBA
	binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

// The image-header shapes of the engine fuzzer (fuzzValues): base64 as
// Ollama's images take them, and a data URL.
var fuzzBombImages = []any{
	base64.StdEncoding.EncodeToString(bombWebP(5792, 5792)),
	base64.StdEncoding.EncodeToString(bombPNG(8192, 4097)),
	base64.StdEncoding.EncodeToString(bombPNG(8193, 1)),
	base64.StdEncoding.EncodeToString(bombPNG(0x7fffffff, 0x7fffffff)),
}
var fuzzBombDataURL = "data:image/webp;base64," + base64.StdEncoding.EncodeToString(bombWebP(5792, 5792))

// startBudgetServer serves the generated vision model with decodeMemory
// as --max-image-decode-memory.
func startBudgetServer(t *testing.T, decodeMemory int64) *testServer {
	t.Helper()
	return serveConfig(t, Config{ModelsDir: testModels(t, "vision"), MaxImageDecodeMemory: decodeMemory, Sched: testSched(4, 256)})
}

// postImages sends body as JSON and returns the status and the decoded answer.
func postImages(t *testing.T, url string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %d %q: %v", url, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, out
}

func openAIImageChat(img []byte, n int) map[string]any {
	return map[string]any{"model": "vision", "n": n, "max_tokens": 2, "temperature": 0,
		"messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:" + media.MIMEType(media.Sniff(img)) + ";base64," + base64.StdEncoding.EncodeToString(img)}},
			map[string]any{"type": "text", "text": "What is this?"}}}}}
}

// Images over a limit are refused from their header, in each dialect's
// shape, naming the limit and the value: no decoder ever runs (the
// process's decode count does not move), and the server keeps serving.
func TestImageBombsRefusedFromHeader(t *testing.T) {
	ts := startBudgetServer(t, 0)
	before := media.Decodes()
	for _, tc := range []struct {
		name string
		img  []byte
		want string
	}{
		{"28-byte WebP of 5792²", bombWebP(5792, 5792), "WebP image declares 5792×5792 pixels in 28 bytes"},
		{"PNG over the encoder's pixels", bombPNG(8192, 4097), "more than the limit of 33554432 pixels"},
		{"PNG over the encoder's side", bombPNG(8193, 1), "width and height must be at most 8192"},
		{"PNG of 5792² in 33 bytes", bombPNG(5792, 5792), "(a decompression bomb)"},
	} {
		status, body := postImages(t, ts.URL+"/api/generate", map[string]any{"model": "vision", "prompt": "x", "stream": false,
			"images": []string{base64.StdEncoding.EncodeToString(tc.img)}})
		if msg, _ := body["error"].(string); status != 400 || !strings.Contains(msg, tc.want) || !strings.Contains(msg, "images[0]") {
			t.Errorf("%s, Ollama: %d %v, want 400 naming images[0] and %q", tc.name, status, body, tc.want)
		}
		status, body = postImages(t, ts.URL+"/v1/chat/completions", openAIImageChat(tc.img, 128))
		e, _ := body["error"].(map[string]any)
		if msg, _ := e["message"].(string); status != 400 || !strings.Contains(msg, tc.want) || e["type"] != "invalid_request_error" {
			t.Errorf("%s, OpenAI n=128: %d %v, want 400 invalid_request_error with %q", tc.name, status, body, tc.want)
		}
	}
	if d := media.Decodes() - before; d != 0 {
		t.Errorf("%d images decoded before their refusal", d)
	}
	if status, body := postImages(t, ts.URL+"/api/generate", map[string]any{"model": "vision", "prompt": "x", "stream": false,
		"images":  []string{base64.StdEncoding.EncodeToString(solidPNG(t, 32, color.NRGBA{200, 30, 30, 255}))},
		"options": map[string]any{"num_predict": 2}}); status != 200 {
		t.Errorf("a small image after the bombs: %d %v", status, body)
	}
}

// OpenAI's n choices share their request's images: each is decoded once
// per request, not once per choice.
func TestImageChoicesDecodeOnce(t *testing.T) {
	ts := startBudgetServer(t, 0)
	img := solidPNG(t, 40, color.NRGBA{20, 40, 220, 255})
	for _, n := range []int{1, 6} {
		before := media.Decodes()
		status, body := postImages(t, ts.URL+"/v1/chat/completions", openAIImageChat(img, n))
		if ch, _ := body["choices"].([]any); status != 200 || len(ch) != n {
			t.Fatalf("n=%d: %d %v", n, status, body)
		}
		if d := media.Decodes() - before; d != 1 {
			t.Errorf("n=%d: the image decoded %d times, want once", n, d)
		}
	}
	if b := ts.srv.infer.MediaLimits.Budget; b.InUse() != 0 {
		t.Errorf("%d bytes of the decode budget still held after the requests", b.InUse())
	}
}

// Concurrent requests of big-but-legal images share the decode budget:
// what they hold together never passes it; a request that alone needs
// more than the budget is a 400 naming it.
func TestImageDecodeBudget(t *testing.T) {
	// A 512² 8-bit RGBA PNG takes 512²·(4+3+3) = 2.5 MiB (decoder, RGB,
	// mtmd's copy): a 6 MiB budget holds two at once.
	const side, limit = 512, 6 << 20
	ts := startBudgetServer(t, limit)
	budget := ts.srv.infer.MediaLimits.Budget
	img := noisePNG(t, side)
	cost := int64(side * side * (4 + 3 + 3))

	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], _ = postImages(t, ts.URL+"/api/generate", map[string]any{"model": "vision", "prompt": "x", "stream": false,
				"images": []string{base64.StdEncoding.EncodeToString(img)}, "options": map[string]any{"num_predict": 2}})
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != 200 {
			t.Errorf("request %d: %d", i, s)
		}
	}
	if p := budget.Peak(); p > limit || p < cost {
		t.Errorf("peak of the decode budget %d bytes: want %d (one image) to %d (the limit)", p, cost, limit)
	}
	if u := budget.InUse(); u != 0 {
		t.Errorf("%d bytes still held", u)
	}

	// Three images (7.5 MiB) can never fit: 400, in the dialect's shape.
	status, body := postImages(t, ts.URL+"/api/generate", map[string]any{"model": "vision", "prompt": "x", "stream": false,
		"images": []string{base64.StdEncoding.EncodeToString(img), base64.StdEncoding.EncodeToString(img), base64.StdEncoding.EncodeToString(img)}})
	want := fmt.Sprintf("need %d bytes of memory to decode, more than the server's whole budget of %d bytes (--max-image-decode-memory)", 3*cost, limit)
	if msg, _ := body["error"].(string); status != 400 || !strings.Contains(msg, want) {
		t.Errorf("3 images over the budget: %d %v, want 400 %q", status, body, want)
	}
}

// noisePNG is a side×side PNG with an alpha channel whose pixels differ,
// so that it compresses poorly (no pixels-per-byte refusal).
func noisePNG(t *testing.T, side int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, side, side))
	x := uint32(1)
	for i := range img.Pix {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img.Pix[i] = byte(x)
		if i%4 == 3 {
			img.Pix[i] |= 0x80
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
