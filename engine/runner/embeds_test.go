package runner

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// storiesRows are stories260K's token_embd.weight rows (F32): the vector
// llama.cpp's first layer gets for each token id.
func storiesRows(t testing.TB) [][]float32 {
	t.Helper()
	path := testmodels.Testdata("stories260K.gguf")
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ti, ok := f.Tensor("token_embd.weight")
	if !ok || ti.Type != gguf.F32 || len(ti.Dims) != 2 {
		t.Fatalf("token_embd.weight: %+v, want a 2-D F32 tensor", ti)
	}
	width, n := int(ti.Dims[0]), int(ti.Dims[1])
	buf := make([]byte, 4*width*n)
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.ReadAt(buf, f.DataOffset+int64(ti.Offset)); err != nil {
		t.Fatal(err)
	}
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = make([]float32, width)
		for j := range rows[i] {
			rows[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*(i*width+j):]))
		}
	}
	return rows
}

// asSpan turns prompt[start:start+n] into an Embeds span of the tokens'
// embedding rows and returns the prompt with placeholders there
// (ph, ph-1, ...: negative, never a token).
func asSpan(rows [][]float32, prompt []engine.Token, start, n int, ph engine.Token) ([]engine.Token, Embeds) {
	out := append([]engine.Token(nil), prompt...)
	e := Embeds{Start: start, N: n}
	for i := start; i < start+n; i++ {
		e.Data = append(e.Data, rows[prompt[i]]...)
		out[i] = ph - engine.Token(i-start)
	}
	return out, e
}

// sameLogprobs compares two runs' tokens and log-probabilities (the
// logits, normalised) within float tolerance.
func sameLogprobs(t *testing.T, name string, a, b []TokenLogprob) {
	t.Helper()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%s: %d and %d logprobs", name, len(a), len(b))
	}
	for i := range a {
		if a[i].ID != b[i].ID || math.Abs(float64(a[i].Logprob-b[i].Logprob)) > 1e-3 || len(a[i].Top) != len(b[i].Top) {
			t.Fatalf("%s: token %d: %+v vs %+v", name, i, a[i], b[i])
		}
		for j := range a[i].Top {
			if a[i].Top[j].ID != b[i].Top[j].ID || math.Abs(float64(a[i].Top[j].Logprob-b[i].Top[j].Logprob)) > 1e-3 {
				t.Fatalf("%s: token %d alternative %d: %+v vs %+v", name, i, j, a[i].Top[j], b[i].Top[j])
			}
		}
	}
}

func logprobsOf(t *testing.T, r *Runner, req Request) (result, []TokenLogprob) {
	t.Helper()
	req.Logprobs, req.TopLogprobs = true, 5
	events, err := generate(r, context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var res result
	var lps []TokenLogprob
	for ev := range events {
		res.text += ev.Text
		lps = append(lps, ev.Logprobs...)
		if ev.Done {
			res.last = ev
		}
	}
	if res.last.Err != nil {
		t.Fatal(res.last.Err)
	}
	return res, lps
}

// TestEmbedsMatchTokens: spans of the prompt fed as the tokens' own
// embedding rows give the same greedy output and logits as the tokens,
// wherever the spans are (the start, the middle, the end, several, pieces
// of a span longer than the batch, a one-position NonCausal span).
func TestEmbedsMatchTokens(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	rows := storiesRows(t)
	prompt := tokenize(t, m, "Once upon a time, there was a little girl named Lily. She loved")
	n := len(prompt)
	if n < 14 {
		t.Fatalf("prompt of %d tokens", n)
	}
	ref := newRunner(t, m, Config{Parallel: 1, NumCtx: 256})
	want, wantLP := logprobsOf(t, ref, Request{Prompt: prompt, NumPredict: 20})
	if want.text == "" {
		t.Fatal("no reference output")
	}
	spans := map[string][][3]int{ // start, n, NonCausal
		"start":          {{0, 3, 0}},
		"middle":         {{4, 5, 0}},
		"end":            {{n - 4, 4, 0}},
		"whole":          {{0, n, 0}},
		"several":        {{1, 2, 0}, {3, 1, 0}, {7, 3, 0}, {n - 1, 1, 0}},
		"longer than 4":  {{2, 11, 0}},
		"non-causal one": {{5, 1, 1}},
	}
	for name, ss := range spans {
		// A fresh runner each time: no prefix cache in the comparison;
		// batches of 4 split the long span into pieces.
		r := newRunner(t, m, Config{Parallel: 2, NumCtx: 256, NumBatch: 4})
		p := prompt
		var embeds []Embeds
		for i, s := range ss {
			var e Embeds
			p, e = asSpan(rows, p, s[0], s[1], engine.Token(-1000*(i+1)))
			e.NonCausal = s[2] == 1
			embeds = append(embeds, e)
		}
		got, gotLP := logprobsOf(t, r, Request{Prompt: p, Embeds: embeds, NumPredict: 20})
		if got.text != want.text {
			t.Fatalf("%s: %q, want %q", name, got.text, want.text)
		}
		sameLogprobs(t, name, gotLP, wantLP)
		st := got.last.Stats
		if st.PromptTokens != n || st.PromptEvalCount != n || st.EvalCount != 20 {
			t.Fatalf("%s: stats %+v", name, st)
		}
		// The final context keeps the placeholders.
		if len(got.last.Tokens) != n+20 || got.last.Tokens[ss[0][0]] != -1000 {
			t.Fatalf("%s: tokens %v", name, got.last.Tokens[:n])
		}
	}
}

// TestEmbedsPrefixCache: a cached span is reused for the same
// placeholders, never for others, never for the same values as text, and
// a prompt ending in a span decodes it whole again.
func TestEmbedsPrefixCache(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	rows := storiesRows(t)
	prompt := tokenize(t, m, "Once upon a time, there was a little girl named Lily. She loved")
	n := len(prompt)
	r := newRunner(t, m, Config{Parallel: 1, NumCtx: 256})
	want := run(t, r, Request{Prompt: prompt, NumPredict: 10}).text
	check := func(name string, req Request, cached int) {
		t.Helper()
		res := run(t, r, req)
		if res.text != want {
			t.Fatalf("%s: %q, want %q", name, res.text, want)
		}
		if st := res.last.Stats; st.CachedTokens != cached || st.PromptEvalCount != n-cached {
			t.Fatalf("%s: cached %d, evaluated %d; want %d cached of %d", name, st.CachedTokens, st.PromptEvalCount, cached, n)
		}
	}
	pa, a := asSpan(rows, prompt, 3, 5, -100)
	// The slot holds the text: the span's positions differ (placeholders).
	check("text then span", Request{Prompt: pa, Embeds: []Embeds{a}, NumPredict: 10}, 3)
	// Same placeholders: the span is reused with the rest.
	check("same span", Request{Prompt: pa, Embeds: []Embeds{a}, NumPredict: 10}, n-1)
	// Other placeholders (another image) at the same place: back to the span's start.
	pb, b := asSpan(rows, prompt, 3, 5, -200)
	check("other span", Request{Prompt: pb, Embeds: []Embeds{b}, NumPredict: 10}, 3)
	// Placeholders equal to the text's tokens: a span never matches text.
	pc, c := asSpan(rows, prompt, 3, 5, 0)
	copy(pc[3:8], prompt[3:8])
	check("span with the text's ids", Request{Prompt: pc, Embeds: []Embeds{c}, NumPredict: 10}, 3)
	check("text after a span with its ids", Request{Prompt: prompt, NumPredict: 10}, 3)
	// A span of other bounds with the same placeholders: not reused.
	check("span again", Request{Prompt: pb, Embeds: []Embeds{b}, NumPredict: 10}, 3)
	pd := append([]engine.Token(nil), pb...)
	d := Embeds{Start: 3, N: 4, Data: b.Data[:4*m.EmbdSize()]}
	pd[7] = prompt[7]
	check("shorter span, same placeholders", Request{Prompt: pd, Embeds: []Embeds{d}, NumPredict: 10}, 3)
	// A prompt ending in a span: the span is decoded whole again for the
	// last position's logits.
	check("text after a shorter span", Request{Prompt: prompt, NumPredict: 10}, 3)
	pe, e := asSpan(rows, prompt, n-4, 4, -300)
	check("span at the end", Request{Prompt: pe, Embeds: []Embeds{e}, NumPredict: 10}, n-4)
	check("span at the end again", Request{Prompt: pe, Embeds: []Embeds{e}, NumPredict: 10}, n-4)
}

// TestEmbedsBatchedSlots: one request with spans among text-only ones,
// all at once, each gives its single-request answer.
func TestEmbedsBatchedSlots(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	rows := storiesRows(t)
	prompts := []string{"Once upon a time, there was a little girl named Lily", "The little dog", "One day, a girl named Sue", "The sun was"}
	reqs := make([]Request, len(prompts))
	alone := make([]string, len(prompts))
	ref := newRunner(t, m, Config{Parallel: 1, NumCtx: 256})
	for i, p := range prompts {
		reqs[i] = Request{Prompt: tokenize(t, m, p), NumPredict: 30}
		alone[i] = run(t, ref, reqs[i]).text
	}
	p, e1 := asSpan(rows, reqs[0].Prompt, 1, 6, -10)
	p, e2 := asSpan(rows, p, 8, 3, -20)
	reqs[0] = Request{Prompt: p, Embeds: []Embeds{e1, e2}, NumPredict: 30}
	r := newRunner(t, m, Config{Parallel: 4, NumCtx: 256, NumBatch: 4})
	for round := 0; round < 2; round++ { // the second round reuses the slots' caches
		got := make([]string, len(reqs))
		var wg sync.WaitGroup
		for i := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i] = run(t, r, reqs[i]).text
			}()
		}
		wg.Wait()
		for i := range reqs {
			if got[i] != alone[i] || got[i] == "" {
				t.Errorf("round %d, request %d: %q, alone %q", round, i, got[i], alone[i])
			}
		}
	}
}

// TestEmbedsWorstValues: bad spans are refused by Generate, the runner
// goes on serving.
func TestEmbedsWorstValues(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	rows := storiesRows(t)
	w := m.EmbdSize()
	r := newRunner(t, m, Config{Parallel: 1, NumCtx: 64, NumBatch: 16})
	prompt := tokenize(t, m, "Once upon a time, there was a little girl")
	n := len(prompt)
	p, e := asSpan(rows, prompt, 2, 4, -1)
	data := func(k int) []float32 { return make([]float32, k*w) }
	nan := data(2)
	nan[w+3] = float32(math.NaN())
	inf := data(2)
	inf[0] = float32(math.Inf(1))
	long := make([]engine.Token, 70)
	for i := range long {
		long[i] = prompt[1+i%(n-1)]
	}
	cases := map[string]Request{
		"past the end":        {Prompt: p, Embeds: []Embeds{{Start: n - 1, N: 2, Data: data(2)}}},
		"start past the end":  {Prompt: p, Embeds: []Embeds{{Start: n, N: 1, Data: data(1)}}},
		"negative start":      {Prompt: p, Embeds: []Embeds{{Start: -1, N: 2, Data: data(2)}}},
		"overlapping":         {Prompt: p, Embeds: []Embeds{e, {Start: 5, N: 2, Data: data(2)}}},
		"out of order":        {Prompt: p, Embeds: []Embeds{{Start: 7, N: 1, Data: data(1)}, e}},
		"N=0":                 {Prompt: p, Embeds: []Embeds{{Start: 2, N: 0}}},
		"N<0":                 {Prompt: p, Embeds: []Embeds{{Start: 2, N: -4, Data: data(0)}}},
		"data one short":      {Prompt: p, Embeds: []Embeds{{Start: 2, N: 4, Data: e.Data[:4*w-1]}}},
		"data one long":       {Prompt: p, Embeds: []Embeds{{Start: 2, N: 4, Data: append(append([]float32(nil), e.Data...), 0)}}},
		"N=2^31":              {Prompt: p, Embeds: []Embeds{{Start: 2, N: 1 << 31, Data: e.Data}}},
		"N=MaxInt":            {Prompt: p, Embeds: []Embeds{{Start: 2, N: math.MaxInt, Data: e.Data}}},
		"NaN":                 {Prompt: p, Embeds: []Embeds{{Start: 2, N: 2, Data: nan}}},
		"+Inf":                {Prompt: p, Embeds: []Embeds{{Start: 2, N: 2, Data: inf}}},
		"non-causal > ubatch": {Prompt: long, Embeds: []Embeds{{Start: 1, N: 17, Data: data(17), NonCausal: true}}, NumCtx: 64},
		"token outside spans": {Prompt: append([]engine.Token{-7}, p[1:]...), Embeds: []Embeds{e}},
		"placeholder outside": {Prompt: p, Embeds: []Embeds{{Start: 3, N: 2, Data: data(2)}}},
		"NoTruncate too long": {Prompt: long, Embeds: []Embeds{{Start: 1, N: 4, Data: data(4)}}, NoTruncate: true},
		"num_keep in a span":  {Prompt: long, Embeds: []Embeds{{Start: 1, N: 4, Data: data(4)}}, NumKeep: 3},
		"all dropped":         {Prompt: long, Embeds: []Embeds{{Start: 0, N: 70, Data: data(70)}}},
	}
	for name, req := range cases {
		if _, err := r.Generate(context.Background(), req); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	// Still serving, spans included.
	want := run(t, r, Request{Prompt: prompt, NumPredict: 8}).text
	if got := run(t, r, Request{Prompt: p, Embeds: []Embeds{e}, NumPredict: 8}).text; got != want || want == "" {
		t.Fatalf("after the refusals: %q, want %q", got, want)
	}
}

// TestEmbedsTruncateAndShift: truncation and context shifts drop whole
// spans only, giving what the same prompt as text gives when the cut is
// the same; a num_keep inside a span ends the generation with "length"
// when the context fills.
func TestEmbedsTruncateAndShift(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	rows := storiesRows(t)
	prompt := tokenize(t, m, "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big")
	n := len(prompt)
	if n < 34 {
		t.Fatalf("prompt of %d tokens", n)
	}
	const nctx = 32
	r := newRunner(t, m, Config{Parallel: 1, NumCtx: nctx})
	fresh := func() *Runner { return newRunner(t, m, Config{Parallel: 1, NumCtx: nctx}) }
	// Truncation keeps 1 and drops [1, n-16+1): a span inside goes whole.
	target := 1 + (nctx-1)/2
	p, e := asSpan(rows, prompt, 2, 4, -1)
	got := run(t, r, Request{Prompt: p, Embeds: []Embeds{e}, NumKeep: 1, NumPredict: 10})
	want := run(t, fresh(), Request{Prompt: prompt, NumKeep: 1, NumPredict: 10})
	if got.text != want.text || got.last.Stats.PromptTokens != target {
		t.Fatalf("span dropped whole: %q (%d tokens), want %q (%d)", got.text, got.last.Stats.PromptTokens, want.text, target)
	}
	// A span across the end of the dropped part: dropped whole, and the
	// prompt is what is left after it (its text as tokens gives the same).
	cut := n - target + 1
	p, e = asSpan(rows, prompt, cut-2, 5, -1)
	got = run(t, r, Request{Prompt: p, Embeds: []Embeds{e}, NumKeep: 1, NumPredict: 10})
	left := append([]engine.Token{prompt[0]}, prompt[cut+3:]...)
	want = run(t, fresh(), Request{Prompt: left, NumPredict: 10})
	if got.text != want.text || got.last.Stats.PromptTokens != len(left) {
		t.Fatalf("span across the cut: %q (%d tokens), want %q (%d)", got.text, got.last.Stats.PromptTokens, want.text, len(left))
	}
	// A span kept after the cut decodes as its tokens would.
	p, e = asSpan(rows, prompt, n-6, 3, -1)
	got = run(t, r, Request{Prompt: p, Embeds: []Embeds{e}, NumKeep: 1, NumPredict: 10})
	want = run(t, fresh(), Request{Prompt: prompt, NumKeep: 1, NumPredict: 10})
	if got.text != want.text {
		t.Fatalf("span after the cut: %q, want %q", got.text, want.text)
	}

	// Context shift: keep 1 discards [1, 16) when the context fills; a
	// span inside goes whole and the output is the text's.
	short := prompt[:12]
	p, e = asSpan(rows, short, 2, 6, -1)
	got = run(t, r, Request{Prompt: p, Embeds: []Embeds{e}, NumKeep: 1, NumPredict: 60})
	want = run(t, fresh(), Request{Prompt: short, NumKeep: 1, NumPredict: 60})
	if got.text != want.text || got.last.Stats.EvalCount != want.last.Stats.EvalCount || got.last.Stats.EvalCount <= nctx-len(short)+1 {
		t.Fatalf("shift over a span: %q (%d tokens), want %q (%d)", got.text, got.last.Stats.EvalCount, want.text, want.last.Stats.EvalCount)
	}
	// A span across the discarded part's end: the shift grows to its end
	// and generation goes on past it.
	p, e = asSpan(rows, prompt[:20], 14, 4, -1)
	got = run(t, r, Request{Prompt: p, Embeds: []Embeds{e}, NumKeep: 1, NumPredict: 60})
	if got.last.DoneReason != "stop" && got.last.Stats.EvalCount != 60 || got.last.Stats.EvalCount <= nctx-20+1 {
		t.Fatalf("shift across a span: %s after %d tokens", got.last.DoneReason, got.last.Stats.EvalCount)
	}
	// num_keep inside a span: no shift, "length" when the context is
	// full, as with shifting off.
	p, e = asSpan(rows, short, 1, 4, -1)
	got = run(t, r, Request{Prompt: p, Embeds: []Embeds{e}, NumKeep: 3, NumPredict: 60})
	want = run(t, fresh(), Request{Prompt: short, NoShift: true, NumPredict: 60})
	if got.last.DoneReason != "length" || got.last.Stats.EvalCount != want.last.Stats.EvalCount || got.text != want.text {
		t.Fatalf("num_keep in a span: %s after %d tokens %q, want %s after %d %q", got.last.DoneReason, got.last.Stats.EvalCount, got.text,
			want.last.DoneReason, want.last.Stats.EvalCount, want.text)
	}
}

// TestEmbedsCancel: cancelling a request while its long span is being
// decoded (one position per decode) frees the slot, and the partly
// decoded span is not reused.
func TestEmbedsCancel(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	w := m.EmbdSize()
	r := newRunner(t, m, Config{Parallel: 1, NumCtx: 2048, NumBatch: 1})
	prompt := tokenize(t, m, "Once upon a time")
	long := append([]engine.Token{prompt[0]}, make([]engine.Token, 300)...)
	data := make([]float32, 300*w)
	for i := range data {
		data[i] = float32(math.Sin(float64(i))) / 8
	}
	for i := 1; i <= 300; i++ {
		long[i] = engine.Token(-i)
	}
	long = append(long, prompt[1:]...)
	span := Embeds{Start: 1, N: 300, Data: data}
	ctx, cancel := context.WithCancel(context.Background())
	admitted := make(chan struct{})
	events, err := generate(r, ctx, Request{Prompt: long, Embeds: []Embeds{span}, NumPredict: 4, OnAdmit: func() { close(admitted) }})
	if err != nil {
		t.Fatal(err)
	}
	<-admitted
	time.Sleep(20 * time.Millisecond)
	cancel()
	res := collect(t, events)
	if res.last.DoneReason != "cancel" || res.last.Stats.PromptEvalCount != 0 {
		t.Fatalf("final event %+v", res.last)
	}
	testkit.Eventually(t, 5*time.Second, "the slot to be free after cancel", func() bool { busy, _ := r.Slots(); return busy == 0 })
	// The same request again: the partly decoded span is decoded whole,
	// and gives what a fresh runner gives.
	res = run(t, r, Request{Prompt: long, Embeds: []Embeds{span}, NumPredict: 4})
	if res.last.Stats.CachedTokens > 1 {
		t.Fatalf("reused %d positions of a partly decoded span", res.last.Stats.CachedTokens)
	}
	want := run(t, newRunner(t, m, Config{Parallel: 1, NumCtx: 2048, NumBatch: 1}), Request{Prompt: long, Embeds: []Embeds{span}, NumPredict: 4})
	// The span's decode must outlast the 20 ms before the cancel.
	if d := want.last.Stats.PromptEvalDuration; d < 100*time.Millisecond {
		t.Fatalf("the span decoded in %v: too fast to be cancelled during it", d)
	}
	if res.text != want.text || res.last.Stats.EvalCount != want.last.Stats.EvalCount {
		t.Fatalf("after cancel %q, fresh %q", res.text, want.text)
	}
}
