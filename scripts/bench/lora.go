package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// loraBench measures LoRA adapters (issue 38) on the model: the memory of
// the base with 0, 1 and 4 adapters loaded (their tensors, and what C's
// malloc holds), and decode throughput at streams streams with no
// adapter, all on one adapter, and split over 4 adapters (a llama.cpp
// context applies one set per decode, so split sets take turns).
func loraBench(m *engine.Model, path string, rank, streams, n, nctx, threads int, sp engine.SamplerParams) {
	f, err := gguf.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "tadpole-lora-bench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var paths []string
	for i := range 4 {
		kvs, tensors, err := testmodels.RandomAdapter(f, rank, int64(i+1), "attn_q.weight", "attn_v.weight")
		if err != nil {
			log.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("lora%d.gguf", i))
		if err := gguf.WriteFile(p, kvs, tensors); err != nil {
			log.Fatal(err)
		}
		paths = append(paths, p)
	}
	r, err := runner.New(m, runner.Config{Parallel: streams, NumCtx: nctx, Threads: threads, FlashAttn: benchFlash})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	heap := func() int64 { u, _, _ := engine.NativeHeap(); return u }
	fmt.Printf("LoRA adapters: rank %d on attn_q and attn_v of every block (random F16)\n\n", rank)
	fmt.Println("| adapters loaded | adapter tensors MiB | C malloc in use MiB |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| 0 | 0 | %.1f |\n", float64(heap())/(1<<20))
	var sets []runner.AdapterSet
	for i, p := range paths {
		a, err := r.LoadAdapter(context.Background(), p)
		if err != nil {
			log.Fatal(err)
		}
		s, err := runner.NewAdapterSet([]*engine.Adapter{a.Adapter}, []float32{1})
		if err != nil {
			log.Fatal(err)
		}
		sets = append(sets, s)
		if i == 0 || i == 3 {
			fmt.Printf("| %d | %.1f | %.1f |\n", i+1, float64(r.AdapterBytes())/(1<<20), float64(heap())/(1<<20))
		}
	}
	fmt.Println()
	// lastSplit: each stream's time to its last token in the last split
	// run, to show that no set starves.
	var lastSplit []time.Duration
	run := func(setOf func(s int) runner.AdapterSet) float64 {
		var wg sync.WaitGroup
		var mu sync.Mutex
		total := 0
		t0 := time.Now()
		took := make([]time.Duration, streams)
		for s := range streams {
			p := sp
			p.Seed += int64(s)
			st, err := r.Generate(context.Background(), runner.Request{Prompt: streamPrompt(m, s), NumPredict: n, Sampling: p, Adapters: setOf(s)})
			if err != nil {
				log.Fatal(err)
			}
			wg.Go(func() {
				evs, err := st.Collect(context.Background())
				if err != nil {
					log.Fatal(err)
				}
				for _, ev := range evs {
					if ev.Done {
						mu.Lock()
						total += ev.Stats.EvalCount
						took[s] = time.Since(t0)
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		lastSplit = took
		return float64(total) / time.Since(t0).Seconds()
	}
	none := func(int) runner.AdapterSet { return runner.AdapterSet{} }
	one := func(int) runner.AdapterSet { return sets[0] }
	split := func(s int) runner.AdapterSet { return sets[s%4] }
	run(none) // warm-up
	var base, all1, all4 float64
	for range 2 { // best of 2, interleaved
		base, all1, all4 = max(base, run(none)), max(all1, run(one)), max(all4, run(split))
	}
	fmt.Printf("| %d streams, %d tokens each | tok/s | vs no adapter |\n|---|---|---|\n", streams, n)
	fmt.Printf("| no adapter | %.1f | 1.000 |\n", base)
	fmt.Printf("| all on one adapter | %.1f | %.3f |\n", all1, all1/base)
	fmt.Printf("| split over 4 adapters (turns) | %.1f | %.3f |\n\n", all4, all4/base)
	run(split)
	lo, hi := lastSplit[0], lastSplit[0]
	for _, d := range lastSplit {
		lo, hi = min(lo, d), max(hi, d)
	}
	fmt.Printf("split over 4 adapters: each stream's time to its last token %.2f..%.2f s (slowest/fastest %.2f)\n\n",
		lo.Seconds(), hi.Seconds(), hi.Seconds()/lo.Seconds())
}
