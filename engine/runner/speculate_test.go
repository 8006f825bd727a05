package runner

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/engine"
)

// lookupDraft proposes what followed the latest earlier occurrence of
// the history's suffix, longest suffix first, and never a token outside
// the vocabulary.
func TestLookupDraft(t *testing.T) {
	toks := func(xs ...int) []engine.Token {
		out := make([]engine.Token, len(xs))
		for i, x := range xs {
			out[i] = engine.Token(x)
		}
		return out
	}
	for _, c := range []struct {
		prompt, gen []engine.Token
		k           int
		want        []engine.Token
	}{
		{toks(1, 2, 3, 4, 5, 6), toks(2, 3), 3, toks(4, 5, 6)},
		{toks(1, 2, 3, 9, 2, 3, 7, 8), toks(2, 3), 2, toks(7, 8)},       // the latest occurrence
		{toks(9, 2, 3, 1, 4, 8, 2, 3, 7), toks(9, 2, 3), 2, toks(1, 4)}, // the longer suffix wins
		{toks(1, 2, 3, 4), toks(7, 8), 4, nil},                          // nothing recurs
		{toks(1, 2, 3, -5, 6), toks(2, 3), 4, nil},                      // a placeholder ends it
		{toks(1, 2, 3, 4, 900), toks(2, 3), 4, toks(4)},                 // out of the vocabulary
		{toks(1, 2, 3, 4, 5), toks(2, 3), 0, nil},                       // k 0
		{nil, toks(1), 4, nil},                                          // too short
	} {
		got := lookupDraft(nil, c.prompt, c.gen, c.k, 512)
		if len(got) != len(c.want) || (len(got) > 0 && !slices.Equal(got, c.want)) {
			t.Errorf("prompt %v generated %v k %d: %v, want %v", c.prompt, c.gen, c.k, got, c.want)
		}
	}
}

// Drafting by prompt lookup changes nothing of the output, greedy or
// sampled at a temperature (seeded), alone or beside other requests, and
// on a prompt that repeats what the model writes it accepts drafts.
//
// Flash attention is off: llama.cpp v0.5.0's CPU flash-attention kernel is
// not batch-invariant (it tiles many query rows and splits one row over
// 512+ cells across threads), so a verified draft's logits, or a
// sequence's beside others, differ in the last bits from one decoded
// alone, and a sampled answer can part at a near-tie. Without it the
// kernels give a sequence the same logits in any batch, and the test
// checks the speculation itself token for token.
func TestSpeculationSameOutput(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	mk := func(draft int) *Runner {
		r, err := New(m, Config{Parallel: 4, NumCtx: 1024, Threads: 1, DraftMax: draft, FlashAttn: engine.FlashAttentionOff})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		return r
	}
	off, on := mk(-1), mk(0)
	first := run(t, off, Request{Prompt: tokenize(t, m, "Once upon a time"), NumPredict: 96}).text
	// The model's own words, then the start again: it tends to repeat.
	repeat := tokenize(t, m, "Once upon a time"+first+"\nOnce upon a time"+first+"\nOnce upon a time")
	for _, sampling := range []engine.SamplerParams{{Temperature: 0}, {Temperature: 0.8, Seed: 7, TopK: 40, TopP: 0.9, RepeatLastN: 64, RepeatPenalty: 1.1}} {
		req := Request{Prompt: repeat, NumPredict: 96, Sampling: sampling}
		want := run(t, off, req)
		got := run(t, on, req)
		if got.text != want.text {
			t.Errorf("temperature %g: with drafts %q, without %q", sampling.Temperature, got.text, want.text)
		}
		if got.last.Stats.EvalCount != want.last.Stats.EvalCount {
			t.Errorf("temperature %g: %d tokens with drafts, %d without", sampling.Temperature, got.last.Stats.EvalCount, want.last.Stats.EvalCount)
		}
		st := got.last.Stats
		t.Logf("temperature %g: %d drafted, %d accepted", sampling.Temperature, st.DraftTokens, st.DraftAccepted)
		if sampling.Temperature == 0 && (st.DraftTokens == 0 || st.DraftAccepted == 0) {
			t.Errorf("greedy on a repeating prompt: %d drafted, %d accepted; want drafts accepted", st.DraftTokens, st.DraftAccepted)
		}
		// Beside three other requests, drafting or not.
		ctx := context.Background()
		var others []<-chan Event
		for i := range 3 {
			evs, err := generate(on, ctx, Request{Prompt: tokenize(t, m, strings.Repeat("The dog ran. ", i+1)), NumPredict: 64, Sampling: sampling})
			if err != nil {
				t.Fatal(err)
			}
			others = append(others, evs)
		}
		if busy := run(t, on, req); busy.text != want.text {
			t.Errorf("temperature %g, beside 3 requests: with drafts %q, without %q", sampling.Temperature, busy.text, want.text)
		}
		for _, evs := range others {
			collect(t, evs)
		}
	}
	// Stop strings and a token limit end a drafted run where they would
	// end a plain one.
	for _, req := range []Request{
		{Prompt: repeat, NumPredict: 5},
		{Prompt: repeat, NumPredict: 200, Stop: []string{strings.Fields(first)[3]}},
	} {
		if got, want := run(t, on, req), run(t, off, req); got.text != want.text || got.last.DoneReason != want.last.DoneReason {
			t.Errorf("limit %d stop %q: with drafts %q (%s), without %q (%s)", req.NumPredict, req.Stop, got.text, got.last.DoneReason, want.text, want.last.DoneReason)
		}
	}
}

// The step-cost fit recovers a + b·n from steps of mixed sizes, and its
// threshold grows with the streams in the batch; before any variety it
// assumes a memory-bound step; draft lengths follow α^i > θ.
func TestStepCost(t *testing.T) {
	var c stepCost
	if th := c.threshold(1, 0); th < 0.02 || th > 0.05 {
		t.Errorf("prior θ(1) = %.3f, want 1/33", th)
	}
	for i := range 200 {
		n := 1 + i%9
		c.observe(n, 0.010+0.001*float64(n))
	}
	for _, x := range []struct {
		n    int
		want float64
	}{{1, 0.001 / 0.011}, {8, 0.008 / 0.018}, {0, 0.001 / 0.011}} {
		if got := c.threshold(x.n, 0); got < x.want-1e-6 || got > x.want+1e-6 {
			t.Errorf("θ(%d) = %.6f, want %.6f", x.n, got, x.want)
		}
	}
	// A draft model's decode adds to a draft token's cost.
	if with, without := c.threshold(1, 0.002), c.threshold(1, 0); with <= without {
		t.Errorf("θ with a draft model's cost %.4f, without %.4f", with, without)
	}
	r := &Runner{cost: c}
	sp := &specState{proposed: 100, accepted: 90} // α ≈ 0.9
	if k1, k8 := r.draftLen(sp, 1), r.draftLen(sp, 8); k1 <= k8 || k8 < 1 {
		t.Errorf("α 0.9: %d drafts at 1 stream, %d at 8; want fewer at 8, at least 1", k1, k8)
	}
	sp = &specState{proposed: 100, accepted: 10}
	if k := r.draftLen(sp, 8); k != 0 {
		t.Errorf("α 0.1 at 8 streams: %d drafts, want none", k)
	}
	// Steps that all cost the same per token (no fixed part): never draft.
	var flat stepCost
	for i := range 50 {
		n := 1 + i%5
		flat.observe(n, 0.002*float64(n))
	}
	if th := flat.threshold(4, 0); th < 0.99 {
		t.Errorf("no fixed cost: θ = %.3f, want 1", th)
	}
}

// A draft model drafts instead of prompt lookup: the model drafting for
// itself is always right (every draft accepted) and, as with any
// drafter, the output is the one without drafts, greedy and sampled,
// alone and beside other requests, across prefix reuse; a draft model of
// another vocabulary is refused naming the difference.
func TestDraftModel(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	d := loadModel(t, "stories260K.gguf") // its own draft: a second copy
	mk := func(cfg Config) *Runner {
		cfg.Parallel, cfg.NumCtx, cfg.Threads = 3, 512, 1
		r, err := New(m, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		return r
	}
	off, on := mk(Config{DraftMax: -1}), mk(Config{Draft: d})
	prompts := []string{"Once upon a time", "The little dog", "Once upon a time there was"}
	for _, sampling := range []engine.SamplerParams{{Temperature: 0}, {Temperature: 0.8, Seed: 3, TopK: 40, TopP: 0.9, RepeatLastN: 64, RepeatPenalty: 1.1}} {
		for _, p := range prompts { // the third reuses the first's prefix
			req := Request{Prompt: tokenize(t, m, p), NumPredict: 60, Sampling: sampling}
			want, got := run(t, off, req), run(t, on, req)
			if got.text != want.text {
				t.Errorf("%q at temperature %g: with the draft model %q, without %q", p, sampling.Temperature, got.text, want.text)
			}
			st := got.last.Stats
			if sampling.Temperature == 0 && (st.DraftTokens == 0 || st.DraftAccepted != st.DraftTokens) {
				t.Errorf("%q greedy, drafting for itself: %d drafted, %d accepted; want all accepted", p, st.DraftTokens, st.DraftAccepted)
			}
		}
		// Three at once.
		ctx := context.Background()
		var chans []<-chan Event
		for _, p := range prompts {
			evs, err := generate(on, ctx, Request{Prompt: tokenize(t, m, p), NumPredict: 60, Sampling: sampling})
			if err != nil {
				t.Fatal(err)
			}
			chans = append(chans, evs)
		}
		for i, evs := range chans {
			want := run(t, off, Request{Prompt: tokenize(t, m, prompts[i]), NumPredict: 60, Sampling: sampling}).text
			if got := collect(t, evs).text; got != want {
				t.Errorf("%q at temperature %g beside two others: %q, alone without drafts %q", prompts[i], sampling.Temperature, got, want)
			}
		}
	}

	other := loadModel(t, "llama-2-tiny-random.gguf")
	if _, err := New(m, Config{Parallel: 1, NumCtx: 256, Threads: 1, Draft: other}); err == nil || !strings.Contains(err.Error(), "vocabulary") {
		t.Errorf("a draft model of another vocabulary: %v", err)
	}
}
