package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

var benchCmd = &command{
	name: "bench", args: "MODEL", short: "measure a server's throughput with concurrent streaming requests",
	long: "Loads the model, then sends --requests streaming generate requests,\n" +
		"--concurrency at a time, and prints the aggregate decode rate (all\n" +
		"tokens generated over the wall time), the mean per-stream rate and the\n" +
		"time to the first token. Example:\n" +
		"  tadpole bench llama3.2 -c 8 -n 32 --num-predict 256",
	minArgs: 1, maxArgs: 1, complete: "model",
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		concurrency := fs.IntP("concurrency", "c", 4, "requests streaming at once")
		requests := fs.IntP("requests", "n", 0, "requests in all (default: --concurrency)")
		numPredict := fs.Int("num-predict", 128, "tokens to generate per request")
		prompt := fs.String("prompt", "Once upon a time", "the prompt of every request")
		params := fs.StringArrayP("parameter", "p", nil, "set a model parameter, NAME=VALUE (repeatable)")
		return func(ctx context.Context, args []string) error {
			if *concurrency < 1 {
				return fmt.Errorf("--concurrency must be at least 1")
			}
			if *requests <= 0 {
				*requests = *concurrency
			}
			opts := map[string]any{"num_predict": *numPredict}
			for _, p := range *params {
				name, value, ok := strings.Cut(p, "=")
				if !ok {
					return fmt.Errorf("--parameter %q: want NAME=VALUE", p)
				}
				if err := setParameter(opts, name, []string{value}); err != nil {
					return fmt.Errorf("--parameter: %w", err)
				}
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			b := &bench{c: c, model: args[0], prompt: *prompt, opts: opts}
			start := time.Now()
			if err := c.Generate(ctx, &ollamaapi.GenerateRequest{Model: b.model, Options: opts}, func(ollamaapi.GenerateResponse) error { return nil }); err != nil {
				return err
			}
			fmt.Printf("model %s loaded in %v\n", b.model, time.Since(start).Round(time.Millisecond))
			res := b.run(ctx, *requests, *concurrency)
			return res.write(os.Stdout, *requests, *concurrency)
		}
	},
}

// bench sends the same streaming request many times.
type bench struct {
	c      *client.Client
	model  string
	prompt string
	opts   map[string]any
}

// benchResult adds up the requests of a run.
type benchResult struct {
	wall                 time.Duration
	ok, failed           int
	firstErr             error
	tokens, promptTokens int
	evalTime, promptTime time.Duration
	ttftSum, ttftMax     time.Duration
}

func (b *bench) run(ctx context.Context, requests, concurrency int) *benchResult {
	var mu sync.Mutex
	res := &benchResult{}
	jobs := make(chan struct{}, requests)
	for range requests {
		jobs <- struct{}{}
	}
	close(jobs)
	start := time.Now()
	var wg sync.WaitGroup
	for range min(concurrency, requests) {
		wg.Go(func() {
			for range jobs {
				m, ttft, err := b.one(ctx)
				mu.Lock()
				if err != nil {
					res.failed++
					if res.firstErr == nil {
						res.firstErr = err
					}
				} else {
					res.ok++
					res.tokens += m.EvalCount
					res.evalTime += m.EvalDuration
					res.promptTokens += m.PromptEvalCount
					res.promptTime += m.PromptEvalDuration
					res.ttftSum += ttft
					res.ttftMax = max(res.ttftMax, ttft)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.wall = time.Since(start)
	return res
}

// one sends one request and returns its metrics and time to first token.
func (b *bench) one(ctx context.Context) (ollamaapi.Metrics, time.Duration, error) {
	start := time.Now()
	var ttft time.Duration
	var last ollamaapi.GenerateResponse
	err := b.c.Generate(ctx, &ollamaapi.GenerateRequest{Model: b.model, Prompt: b.prompt, Options: b.opts}, func(r ollamaapi.GenerateResponse) error {
		if ttft == 0 && r.Response != "" {
			ttft = time.Since(start)
		}
		last = r
		return nil
	})
	return last.Metrics, ttft, err
}

func (r *benchResult) write(w io.Writer, requests, concurrency int) error {
	fmt.Fprintf(w, "requests:            %d (%d at a time), %d failed\n", requests, concurrency, r.failed)
	if r.ok == 0 {
		return fmt.Errorf("every request failed: %w", r.firstErr)
	}
	fmt.Fprintf(w, "wall time:           %v\n", r.wall.Round(time.Millisecond))
	fmt.Fprintf(w, "tokens generated:    %d (%.1f per request)\n", r.tokens, float64(r.tokens)/float64(r.ok))
	fmt.Fprintf(w, "aggregate rate:      %s\n", rate(r.tokens, r.wall))
	fmt.Fprintf(w, "mean stream rate:    %s\n", rate(r.tokens, r.evalTime))
	fmt.Fprintf(w, "prompt eval rate:    %s\n", rate(r.promptTokens, r.promptTime))
	fmt.Fprintf(w, "time to first token: %v mean, %v max\n",
		(r.ttftSum / time.Duration(r.ok)).Round(time.Millisecond), r.ttftMax.Round(time.Millisecond))
	if r.firstErr != nil {
		fmt.Fprintf(w, "first error:         %v\n", r.firstErr)
	}
	return nil
}
