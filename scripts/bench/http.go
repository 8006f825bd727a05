package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	ollama "github.com/ollama/ollama/api"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/server"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// benchServer is a real Tadpole server on a loopback port serving the
// bench model as "bench".
type benchServer struct {
	srv    *server.Server
	client *ollama.Client
	url    string
	dir    string
	// temperature and noStream choose how the HTTP column asks: sampled
	// at a temperature (seeded) or greedy, streamed as SSE or one answer.
	temperature float64
	noStream    bool
}

func startServer(modelPath string, parallel, nctx, threads int) *benchServer {
	dir, err := os.MkdirTemp("", "tadpole-bench")
	if err != nil {
		log.Fatal(err)
	}
	abs, _ := filepath.Abs(modelPath)
	if err := os.Symlink(abs, filepath.Join(dir, "bench.gguf")); err != nil {
		log.Fatal(err)
	}
	srv := server.New(server.Config{ModelsDir: dir, Sched: sched.Config{
		Parallel: parallel, NumCtx: nctx, Threads: threads, KeepAlive: -1, FlashAttn: engine.FlashAttentionOn,
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)
	u, _ := url.Parse("http://" + ln.Addr().String())
	b := &benchServer{srv: srv, client: ollama.NewClient(u, http.DefaultClient), url: u.String(), dir: dir}
	// Load the model before measuring, through the same endpoint and
	// options (the instance key) the measurement uses.
	resp, err := http.Post(b.url+"/v1/completions", "application/json", strings.NewReader(`{"model":"bench","prompt":"a","max_tokens":1}`))
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		log.Fatalf("warm-up: %s", resp.Status)
	}
	return b
}

// decode runs streams concurrent streaming requests of n tokens each
// through OpenAI's /v1/completions (token-array prompts, greedy, the
// end-of-generation tokens banned with logit_bias like the raw loop) and
// returns generated tokens per second of wall time.
func (b *benchServer) decode(m *engine.Model, streams, n int) (float64, int) {
	bias := map[string]float64{}
	for t := range benchSampling.LogitBias {
		bias[fmt.Sprint(t)] = -100
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	t0 := time.Now()
	for s := 0; s < streams; s++ {
		body, _ := json.Marshal(map[string]any{
			"model": "bench", "prompt": streamPrompt(m, s), "max_tokens": n, "temperature": b.temperature, "seed": 42 + s,
			"logit_bias": bias, "stream": !b.noStream, "stream_options": map[string]any{"include_usage": true},
		})
		if b.noStream {
			body, _ = json.Marshal(map[string]any{
				"model": "bench", "prompt": streamPrompt(m, s), "max_tokens": n, "temperature": b.temperature, "seed": 42 + s,
				"logit_bias": bias,
			})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(b.url+"/v1/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				log.Fatal(err)
			}
			defer resp.Body.Close()
			if b.noStream {
				var answer struct {
					Usage struct {
						CompletionTokens int `json:"completion_tokens"`
					} `json:"usage"`
				}
				if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
					log.Fatal(err)
				}
				mu.Lock()
				total += answer.Usage.CompletionTokens
				mu.Unlock()
				return
			}
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				var chunk struct {
					Usage *struct {
						CompletionTokens int `json:"completion_tokens"`
					} `json:"usage"`
				}
				line, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok || line == "[DONE]" {
					continue
				}
				if json.Unmarshal([]byte(line), &chunk) == nil && chunk.Usage != nil {
					mu.Lock()
					total += chunk.Usage.CompletionTokens
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return float64(total) / time.Since(t0).Seconds(), total
}

func (b *benchServer) close() {
	if b.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b.srv.Shutdown(ctx)
	os.RemoveAll(b.dir)
}
