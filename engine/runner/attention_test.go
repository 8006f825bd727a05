package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/engine"
)

// The cost model picks the faster way in each case measured for it
// (attention.go's table: scripts/fasweep, ms flash / matrix products)
// where they differ by more than 10%; either is right in a closer one.
func TestAttentionCostModel(t *testing.T) {
	type seq struct{ cached, tokens int }
	for _, tc := range []struct {
		seqs      []seq
		flash, mm float64
	}{
		{[]seq{{4000, 16}}, 198, 122},
		{[]seq{{4000, 4}}, 73, 64},
		{[]seq{{4000, 1}}, 33, 45},
		{[]seq{{4000, 1}, {4000, 1}, {4000, 1}, {4000, 1}}, 104, 151},
		{[]seq{{100, 16}}, 37, 39},
		{[]seq{{100, 256}}, 475, 451},
		{[]seq{{2000, 64}}, 393, 242},
		{[]seq{{1000, 1}}, 17, 19},
	} {
		var c attnCost
		for i, s := range tc.seqs {
			c.add(i, s.cached, s.tokens)
		}
		if r := tc.flash / tc.mm; r > 0.9 && r < 1.1 {
			continue
		}
		if got, want := c.flashCheaper(), tc.flash <= tc.mm; got != want {
			t.Errorf("%v: flash cheaper %v, measured %v (%g / %g ms)", tc.seqs, got, want, tc.flash, tc.mm)
		}
	}
}

// A runner whose context can switch does so for a new message after a
// long cached prefix, and answers; one made without flash attention, or
// with a quantized V cache, never switches.
func TestAttentionSwitching(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	prefix := tokenize(t, m, strings.Repeat("Once upon a time there was a little dog named Max. ", 30))
	for _, tc := range []struct {
		cfg       Config
		switching bool
	}{
		{Config{NumCtx: 1024, FlashAttn: engine.FlashAttentionOn}, true},
		{Config{NumCtx: 1024, FlashAttn: engine.FlashAttentionOff}, false},
		{Config{NumCtx: 1024, FlashAttn: engine.FlashAttentionOn, KVType: "q8_0"}, false},
	} {
		r := newRunner(t, m, tc.cfg)
		run(t, r, Request{Prompt: prefix, NumPredict: 4, Sampling: engine.SamplerParams{}})
		msg := append(append([]engine.Token(nil), prefix...), tokenize(t, m, " He liked to run and jump in the big green park.")[1:]...)
		res := run(t, r, Request{Prompt: msg, NumPredict: 8})
		var switches int
		if err := r.Do(context.Background(), func() { switches = r.attnSwitches }); err != nil {
			t.Fatal(err)
		}
		if name := fmt.Sprint(tc.cfg.FlashAttn, tc.cfg.KVType); (switches > 0) != tc.switching || res.text == "" {
			t.Errorf("%s: %d switches, answer %q", name, switches, res.text)
		}
	}
}
