package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
)

// imageConfig is -images and its companions.
type imageConfig struct {
	size        int   // pixels per side of the generated PNGs
	requests    int   // image requests per stream count
	streams     []int // concurrent image streams
	tokens      int   // tokens generated per image request
	textStreams int   // text streams measured alone and under image load
	loaders     int   // clients sending image requests back to back meanwhile
	reps        int   // alternations of text alone / text under load
	window      time.Duration
}

// projectorFor is the projector -images serves with the model: -mmproj,
// else NAME.mmproj.gguf beside NAME.gguf ("" when there is none).
func projectorFor(model, flagValue string) string {
	if flagValue != "" {
		if _, err := os.Stat(flagValue); err != nil {
			fatal("-mmproj: %v", err)
		}
		return flagValue
	}
	p := strings.TrimSuffix(model, filepath.Ext(model)) + ".mmproj.gguf"
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
		return p
	}
	return ""
}

// imageSeq numbers the generated images: every request of the run gets
// pixels no other request had, so the prefix cache never skips an
// encode.
var imageSeq atomic.Int64

// benchPNG is a size×size PNG unique to i: a gradient whose colours
// depend on i, a diagonal band at an offset depending on i, and i's bits
// written into the first row.
func benchPNG(size int, i int64) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	r0, g0, b0 := uint8(i*37), uint8(i*91+40), uint8(i*53+90)
	off := int(i*7) % size
	for y := range size {
		for x := range size {
			c := color.NRGBA{r0 + uint8(x*255/size), g0 + uint8(y*255/size), b0 + uint8((x+y)*127/size), 255}
			if (x+off)%size == y || (x+off+1)%size == y {
				c = color.NRGBA{255 - c.R, 255 - c.G, 255 - c.B, 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	for bit := 0; bit < 63 && bit < size; bit++ {
		v := uint8(0)
		if i>>bit&1 == 1 {
			v = 255
		}
		img.SetNRGBA(bit, 0, color.NRGBA{v, v, v, 255})
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&b, img); err != nil {
		fatal("png: %v", err)
	}
	return b.Bytes()
}

// imageBody is a streamed greedy OpenAI chat request with one new image
// (a data URL) and a question, end-of-generation banned so that it
// generates exactly tokens tokens; without the image (withImage false),
// the same request with a numbered question instead, for the control.
func imageBody(size, tokens int, bias map[string]float64, withImage bool) []byte {
	i := imageSeq.Add(1)
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(benchPNG(size, i))
	body := map[string]any{
		"model": "bench",
		"messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}},
			map[string]any{"type": "text", "text": "What is in this picture?"},
		}}},

		"max_tokens": tokens, "temperature": 0, "seed": 42, "logit_bias": bias,
		"stream": true, "stream_options": map[string]any{"include_usage": true},
	}
	if !withImage {
		body["messages"] = []any{map[string]any{"role": "user", "content": fmt.Sprintf("What is in this picture? %d", i)}}
	}
	b, _ := json.Marshal(body)
	return b
}

// chat sends one streamed /v1/chat/completions request and reads it to
// the end: the time to the first non-empty content delta (the whole time
// if none), the total time and the completion tokens of the usage chunk.
func (s *httpServer) chat(body []byte) (result, error) {
	t0 := time.Now()
	resp, err := benchClient.Post(s.url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		return result{}, fmt.Errorf("%s: %s", resp.Status, msg)
	}
	var r result
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			return result{}, fmt.Errorf("bad SSE event %q: %v", line, err)
		}
		if r.ttft == 0 && len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			r.ttft = time.Since(t0)
		}
		if chunk.Usage != nil {
			r.tokens = chunk.Usage.CompletionTokens
		}
	}
	r.total = time.Since(t0)
	if r.ttft == 0 {
		r.ttft = r.total
	}
	return r, sc.Err()
}

// imageRun sends requests image requests from streams clients, each
// taking the next request when its last one ends. It returns requests
// per second of wall time and the median time to the first token.
func (s *httpServer) imageRun(c imageConfig, streams int, bias map[string]float64) (float64, time.Duration, time.Duration, int) {
	bodies := make(chan []byte, c.requests)
	for range c.requests {
		bodies <- imageBody(c.size, c.tokens, bias, true) // encoded before the clock starts
	}
	close(bodies)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ttfts []time.Duration
	failed := 0
	t0 := time.Now()
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range bodies {
				r, err := s.chat(b)
				mu.Lock()
				if err != nil {
					failed++
					fmt.Fprintf(os.Stderr, "%s: image request: %v\n", s.name, err)
				} else {
					ttfts = append(ttfts, r.ttft)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	if len(ttfts) == 0 {
		fatal("%s: every image request failed", s.name)
	}
	sort.Slice(ttfts, func(i, j int) bool { return ttfts[i] < ttfts[j] })
	return float64(len(ttfts)) / wall.Seconds(), ttfts[len(ttfts)/2], ttfts[len(ttfts)-1], failed
}

// imageLoad starts c.loaders clients sending image requests back to back
// (bodies made beforehand, so the clients spend no CPU on PNGs while the
// text is measured) and returns once each has completed one, so that the
// load is steady. completed counts the requests done so far; stop ends
// the clients after their requests in flight.
func (s *httpServer) imageLoad(c imageConfig, bias map[string]float64, withImage bool) (completed func() int64, stop func()) {
	bodies := make(chan []byte, 64)
	for range cap(bodies) {
		bodies <- imageBody(c.size, c.tokens, bias, withImage)
	}
	done := make(chan struct{})
	var wg, first sync.WaitGroup
	var n atomic.Int64
	for range c.loaders {
		wg.Add(1)
		first.Add(1)
		go func() {
			defer wg.Done()
			once := sync.OnceFunc(first.Done)
			defer once()
			fails := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				var b []byte
				select {
				case b = <-bodies:
				default:
					b = imageBody(c.size, c.tokens, bias, withImage)
				}
				if _, err := s.chat(b); err != nil {
					fmt.Fprintf(os.Stderr, "%s: image load: %v\n", s.name, err)
					if fails++; fails == 5 {
						fatal("%s: 5 image requests in a row failed", s.name)
					}
					time.Sleep(100 * time.Millisecond)
					continue
				}
				fails = 0
				n.Add(1)
				once()
			}
		}()
	}
	first.Wait()
	return n.Load, func() { close(done); wg.Wait() }
}

// imageTable measures images on Tadpole: requests per second and the
// median time to the first token at each image stream count, then text
// alone and text while c.loaders clients send image requests back to
// back (alternating, the median of c.reps each), and their ratio.
func imageTable(s *httpServer, m *engine.Model, c imageConfig, n int, projector string) {
	bias := map[string]float64{}
	for t := range benchSampling.LogitBias {
		bias[fmt.Sprint(t)] = -100
	}
	fmt.Printf("\nImages on %s (projector %s): OpenAI /v1/chat/completions, streamed, greedy, one new %d×%d PNG per request (a data URL; never the same pixels twice, so every request decodes and encodes its image), %d tokens per request\n\n",
		s.name, filepath.Base(projector), c.size, c.size, c.tokens)
	fmt.Println("| image streams | requests | image requests/s | median time to first token (s) | slowest (s) |")
	fmt.Println("|---|---|---|---|---|")
	var notes []string
	if _, err := s.chat(imageBody(c.size, c.tokens, bias, true)); err != nil { // warm-up, not counted
		fatal("%s: image request: %v", s.name, err)
	}
	for _, st := range c.streams {
		before := s.phases()
		rps, ttft, worst, failed := s.imageRun(c, st, bias)
		if b := breakdown(before, s.phases()); b != "" {
			notes = append(notes, fmt.Sprintf("%s, %d image stream(s): %s", s.name, st, b))
		}
		reqs := fmt.Sprint(c.requests)
		if failed > 0 {
			reqs += fmt.Sprintf(" (%d failed)", failed)
		}
		row := fmt.Sprintf("| %d | %s | %.2f | %.3f | %.3f |", st, reqs, rps, ttft.Seconds(), worst.Seconds())
		fmt.Println(row)
	}

	var alone, loaded, control []float64
	images, chats := 0, 0
	var loadedWall, controlWall time.Duration
	beside := func(withImage bool) (float64, int, time.Duration) {
		completed, stop := s.imageLoad(c, bias, withImage)
		defer stop()
		before := completed()
		rate, wall := s.textWindow(c, m, n, bias)
		return rate, int(completed() - before), wall
	}
	for range c.reps {
		a, _ := s.textWindow(c, m, n, bias)
		l, k, wall := beside(true)
		images, loadedWall = images+k, loadedWall+wall
		t, k, wall := beside(false)
		chats, controlWall = chats+k, controlWall+wall
		alone, loaded, control = append(alone, a), append(loaded, l), append(control, t)
	}
	a, l, t := median(alone), median(loaded), median(control)
	verdict := "ok"
	if l < 0.8*a {
		verdict = "**below 0.80**"
	}
	fmt.Printf("\nText beside images: %d text stream(s), greedy, streamed /v1/completions of %d tokens back to back for %s; tok/s alone, while %d clients send the image requests back to back, and (the control) while they send the same chat requests without the image (median of %d, alternating)\n\n",
		c.textStreams, n, c.window, c.loaders, c.reps)
	fmt.Println("| text alone tok/s | beside image requests tok/s | beside/alone | image requests done meanwhile | control: beside text-only chats tok/s | control/alone | chats done meanwhile |")
	fmt.Println("|---|---|---|---|---|---|---|")
	fmt.Printf("| %.1f | %.1f | **%.3f** (%s; want ≥ 0.80) | %d in %.2f s | %.1f | %.3f | %d in %.2f s |\n",
		a, l, l/a, verdict, images, loadedWall.Seconds(), t, t/a, chats, controlWall.Seconds())
	if len(notes) > 0 {
		fmt.Println("\nWhere Tadpole's time went in the image cases (as above):")
		for _, n := range notes {
			fmt.Println("  " + n)
		}
	}
}

// textWindow runs c.textStreams clients sending text requests of n
// tokens back to back (the HTTP table's prompts, end-of-generation
// banned) for c.window, and returns the tokens generated per second of
// wall time, from the first request to the end of the last.
func (s *httpServer) textWindow(c imageConfig, m *engine.Model, n int, bias map[string]float64) (float64, time.Duration) {
	var wg sync.WaitGroup
	var total atomic.Int64
	t0 := time.Now()
	deadline := t0.Add(c.window)
	for i := range c.textStreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				r, err := s.complete(map[string]any{
					"prompt": streamPrompt(m, i), "max_tokens": n, "temperature": 0, "seed": 42 + i,
					"logit_bias": bias, "stream": true, "stream_options": map[string]any{"include_usage": true},
				})
				if err != nil {
					fatal("%s: text request: %v", s.name, err)
				}
				total.Add(int64(r.tokens))
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	return float64(total.Load()) / wall.Seconds(), wall
}
