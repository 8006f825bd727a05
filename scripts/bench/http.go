package main

import (
	"context"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
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
	dir    string
}

func startServer(modelPath string, parallel, nctx, threads, gpuLayers int) *benchServer {
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
	b := &benchServer{srv: srv, client: ollama.NewClient(u, http.DefaultClient), dir: dir}
	// Load the model before measuring.
	err = b.client.Generate(context.Background(), &ollama.GenerateRequest{Model: "bench", Options: map[string]any{"num_gpu": gpuLayers}}, func(ollama.GenerateResponse) error { return nil })
	if err != nil {
		log.Fatal(err)
	}
	return b
}

// decode runs streams concurrent streaming requests of n tokens each and
// returns generated tokens per second of wall time.
func (b *benchServer) decode(m *engine.Model, streams, n int) (float64, int) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	t0 := time.Now()
	for s := 0; s < streams; s++ {
		ctxTokens := []int{}
		for _, t := range streamPrompt(m, s) {
			ctxTokens = append(ctxTokens, int(t))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := b.client.Generate(context.Background(), &ollama.GenerateRequest{
				Model: "bench", Raw: true, Context: ctxTokens, Prompt: " ",
				Options: map[string]any{"temperature": 0, "num_predict": n},
			}, func(r ollama.GenerateResponse) error {
				if r.Done {
					mu.Lock()
					total += r.EvalCount
					mu.Unlock()
				}
				return nil
			})
			if err != nil {
				log.Fatal(err)
			}
		}()
	}
	wg.Wait()
	return float64(total) / time.Since(t0).Seconds(), total
}

func (b *benchServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b.srv.Shutdown(ctx)
	os.RemoveAll(b.dir)
}
