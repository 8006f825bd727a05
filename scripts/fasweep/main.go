// Command fasweep measures a decode's time with flash attention and with
// matrix products on one context made for flash attention (see
// engine/runner/attention.go, whose cost model it calibrates): go run
// ./scripts/fasweep MODEL.gguf [turn|state]. UNIFIED=1 uses one KV
// buffer for every sequence instead of a stream each (the runner's).
package main

import (
	"fmt"
	"math/rand"
	"os"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	m, err := engine.LoadModel(os.Args[1], engine.ModelParams{})
	must(err)
	ctx, err := m.NewContext(engine.ContextParams{NumCtx: 4 * 4352, NumBatch: 512, NumSeqMax: 4, Threads: 2, FlashAttn: engine.FlashAttentionOn, KVUnified: os.Getenv("UNIFIED") != ""})
	must(err)
	fmt.Println("switchable", ctx.FlashAttnSwitchable())
	b, _ := engine.NewBatch(512)
	rng := rand.New(rand.NewSource(1))
	tok := func() engine.Token { return engine.Token(100 + rng.Intn(40000)) }
	fill := func(seq, n int) {
		must(ctx.SetFlashAttn(true))
		for p := 0; p < n; {
			b.Clear()
			for ; p < n && b.Len() < 512; p++ {
				b.Add(tok(), p, seq, p == n-1)
			}
			must(ctx.Decode(b))
		}
	}
	measure := func(label string, seqs []int, base, t int) {
		var best [2]time.Duration
		for mode := 0; mode < 2; mode++ {
			must(ctx.SetFlashAttn(mode == 0))
			best[mode] = time.Hour
			for rep := 0; rep < 3; rep++ {
				b.Clear()
				for _, s := range seqs {
					for i := 0; i < t; i++ {
						b.Add(tok(), base+i, s, i == t-1)
					}
				}
				t0 := time.Now()
				must(ctx.Decode(b))
				d := time.Since(t0)
				for _, s := range seqs {
					ctx.SeqRemove(s, base, -1)
				}
				if d < best[mode] {
					best[mode] = d
				}
			}
		}
		fmt.Printf("%-28s seqs=%d T/seq=%4d  fa=%8.2fms  mm=%8.2fms  mm/fa=%.2f\n", label, len(seqs), t, best[0].Seconds()*1000, best[1].Seconds()*1000, best[1].Seconds()/best[0].Seconds())
	}
	if len(os.Args) > 2 && os.Args[2] == "grow" {
		fill(0, 4000)
		var keep []*engine.StateBuffer
		for rep := 0; rep < 16; rep++ {
			t0 := time.Now()
			sb, err := ctx.SeqStateBuffer(0, nil)
			must(err)
			keep = append(keep, sb)
			fmt.Printf("state buffer %d: %.1f ms\n", rep, time.Since(t0).Seconds()*1000)
		}
		return
	}
	if len(os.Args) > 2 && os.Args[2] == "turn" {
		fill(0, 4000)
		st0, _ := ctx.SeqState(0)
		for rep := 0; rep < 4; rep++ {
			t0 := time.Now()
			_, err := ctx.SeqState(0) // timed: a save
			must(err)
			t1 := time.Now()
			ctx.SeqRemove(0, -1, -1)
			must(ctx.SetSeqState(0, st0))
			t2 := time.Now()
			must(ctx.SetFlashAttn(false))
			t3 := time.Now()
			b.Clear()
			for i := 0; i < 16; i++ {
				b.Add(tok(), 4000+i, 0, i == 15)
			}
			must(ctx.Decode(b))
			t4 := time.Now()
			must(ctx.SetFlashAttn(true))
			t5 := time.Now()
			b.Clear()
			b.Add(tok(), 4016, 0, true)
			must(ctx.Decode(b))
			t6 := time.Now()
			ctx.SeqRemove(0, 4000, -1)
			ms := func(a, b time.Time) float64 { return b.Sub(a).Seconds() * 1000 }
			fmt.Printf("save %.1f restore %.1f switch-off %.1f prefill16 %.1f switch-on %.1f decode1 %.1f\n", ms(t0, t1), ms(t1, t2), ms(t2, t3), ms(t3, t4), ms(t4, t5), ms(t5, t6))
		}
		return
	}
	if len(os.Args) > 2 {
		fill(0, 4000)
		for rep := 0; rep < 3; rep++ {
			t0 := time.Now()
			st, err := ctx.SeqState(0)
			must(err)
			t1 := time.Now()
			ctx.SeqRemove(0, -1, -1)
			t2 := time.Now()
			must(ctx.SetSeqState(0, st))
			t3 := time.Now()
			fmt.Printf("state %d MB: get %.1fms remove %.1fms set %.1fms\n", len(st)>>20, t1.Sub(t0).Seconds()*1000, t2.Sub(t1).Seconds()*1000, t3.Sub(t2).Seconds()*1000)
		}
		return
	}
	for _, short := range []int{100, 1000, 2000} {
		fill(0, short)
		for _, t := range []int{1, 4, 16, 64, 256} {
			measure(fmt.Sprintf("seq0=%d alone", short), []int{0}, short, t)
		}
		ctx.SeqRemove(0, -1, -1)
	}
	for s := 0; s < 4; s++ {
		fill(s, 1000)
	}
	measure("4x1000 decode", []int{0, 1, 2, 3}, 1000, 1)
	measure("4x1000 spec", []int{0, 1, 2, 3}, 1000, 4)
	measure("4x1000 seq0 prefill", []int{0}, 1000, 16)
	measure("4x1000 seq0 prefill", []int{0}, 1000, 64)
	measure("4x1000 seq0 prefill", []int{0}, 1000, 256)
	for s := 0; s < 4; s++ {
		ctx.SeqRemove(s, -1, -1)
	}
	fill(0, 4000)
	for _, t := range []int{1, 4, 16, 64, 256} {
		measure("seq0=4000 alone", []int{0}, 4000, t)
	}
	for s := 1; s < 4; s++ {
		fill(s, 4000)
	}
	measure("4x4000 decode", []int{0, 1, 2, 3}, 4000, 1)
	measure("4x4000 spec", []int{0, 1, 2, 3}, 4000, 4)
	for _, t := range []int{1, 4, 16, 64, 256} {
		measure("4x4000 seq0", []int{0}, 4000, t)
	}
}
