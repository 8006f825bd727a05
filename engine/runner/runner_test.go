package runner

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// storiesContinuation is stories260K's greedy continuation of "Once upon a
// time" (see models/testdata/NOTICE).
const storiesContinuation = ", there was a little girl named Lily. She loved to play outside in the park."

func loadModel(t testing.TB, file string) *engine.Model {
	t.Helper()
	m, err := engine.LoadModel(testmodels.Testdata(file), engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// newRunner starts a runner with one thread: the test machines have 2
// cores and test packages run in parallel.
func newRunner(t testing.TB, m *engine.Model, cfg Config) *Runner {
	t.Helper()
	cfg.Threads = 1
	r, err := New(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func tokenize(t testing.TB, m *engine.Model, s string) []engine.Token {
	t.Helper()
	toks, err := m.Tokenize(s, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return toks
}

type result struct {
	text   string
	pieces []string
	last   Event
}

func collect(t testing.TB, events <-chan Event) result {
	t.Helper()
	var res result
	for ev := range events {
		if ev.Text != "" {
			res.pieces = append(res.pieces, ev.Text)
			res.text += ev.Text
		}
		if ev.Done {
			res.last = ev
		}
	}
	if !res.last.Done {
		t.Fatal("stream closed without a final event")
	}
	return res
}

// generate is Generate with the stream read as a channel to its final
// event (also after ctx ends: a cancelled request's final event is read).
func generate(r *Runner, ctx context.Context, req Request) (<-chan Event, error) {
	s, err := r.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	return events(s), nil
}

// events forwards a stream's events to a channel until the final one.
func events(s *Stream) <-chan Event {
	out := make(chan Event, 8)
	go func() {
		defer close(out)
		var buf []Event
		for {
			var err error
			buf, err = s.Next(context.Background(), buf[:0])
			for _, ev := range buf {
				out <- ev
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

func run(t testing.TB, r *Runner, req Request) result {
	t.Helper()
	events, err := generate(r, context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	res := collect(t, events)
	if res.last.Err != nil {
		t.Fatal(res.last.Err)
	}
	return res
}

func TestGreedyStories(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{Parallel: 2, NumCtx: 256})
	res := run(t, r, Request{Prompt: tokenize(t, m, "Once upon a time"), NumPredict: 30})
	if !strings.HasPrefix(res.text, storiesContinuation) {
		t.Fatalf("greedy continuation = %q, want prefix %q", res.text, storiesContinuation)
	}
	st := res.last.Stats
	if res.last.DoneReason != "length" || st.EvalCount != 30 || st.PromptEvalCount != 5 || st.PromptTokens != 5 {
		t.Fatalf("final event = %+v", res.last)
	}
	if st.PromptEvalDuration <= 0 || st.EvalDuration <= 0 {
		t.Fatalf("durations not measured: %+v", st)
	}
	if len(res.last.Tokens) != 35 {
		t.Fatalf("context has %d tokens, want 35", len(res.last.Tokens))
	}
}

func TestBigramChatModel(t *testing.T) {
	path := t.TempDir() + "/bigram.gguf"
	if err := testmodels.WriteBigram(path); err != nil {
		t.Fatal(err)
	}
	m, err := engine.LoadModel(path, engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r := newRunner(t, m, Config{Parallel: 2, NumCtx: 128})
	prompt, err := m.ApplyChatTemplate("", []engine.ChatMessage{{Role: "user", Content: "Hi"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := m.Tokenize(prompt, true, true)
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, r, Request{Prompt: toks, NumPredict: 50})
	if res.text != testmodels.BigramAnswer || res.last.DoneReason != "stop" {
		t.Fatalf("answer %q (%s), want %q (stop)", res.text, res.last.DoneReason, testmodels.BigramAnswer)
	}
	res = run(t, r, Request{Prompt: tokenize(t, m, testmodels.CountPrompt), NumPredict: 50})
	if res.text != testmodels.CountAnswer || res.last.DoneReason != "stop" {
		t.Fatalf("count %q (%s), want %q (stop)", res.text, res.last.DoneReason, testmodels.CountAnswer)
	}
}

// Determinism under batching: with greedy sampling, 8 concurrent requests
// produce exactly what each produces alone.
func TestDeterminismUnderBatching(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{Parallel: 8, NumCtx: 256})
	prompts := []string{
		"Once upon a time", "The little dog", "One day, a girl named Sue", "Tom and his mom went",
		"The sun was", "There was a big tree", "Lily wanted to", "The cat saw a bird and",
	}
	alone := make([]string, len(prompts))
	for i, p := range prompts {
		alone[i] = run(t, r, Request{Prompt: tokenize(t, m, p), NumPredict: 40}).text
	}
	// Fresh runner so no prefix cache is involved in the comparison.
	r2 := newRunner(t, m, Config{Parallel: 8, NumCtx: 256})
	together := make([]string, len(prompts))
	var wg sync.WaitGroup
	for i, p := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			together[i] = run(t, r2, Request{Prompt: tokenize(t, m, p), NumPredict: 40}).text
		}()
	}
	wg.Wait()
	for i := range prompts {
		if alone[i] != together[i] {
			t.Errorf("prompt %q:\nalone    %q\nbatched  %q", prompts[i], alone[i], together[i])
		}
		if alone[i] == "" {
			t.Errorf("prompt %q produced nothing", prompts[i])
		}
	}
}

func TestPrefixCache(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{Parallel: 2, NumCtx: 512})
	shared := strings.Repeat("Once upon a time, there was a little girl named Lily. She loved to play outside. ", 4)
	first := tokenize(t, m, shared+"One day she saw a cat.")
	res := run(t, r, Request{Prompt: first, NumPredict: 4})
	if res.last.Stats.PromptEvalCount != len(first) {
		t.Fatalf("first request evaluated %d of %d prompt tokens", res.last.Stats.PromptEvalCount, len(first))
	}
	second := tokenize(t, m, shared+"The dog ran to the park and barked.")
	common := 0
	for common < len(first) && first[common] == second[common] {
		common++
	}
	res = run(t, r, Request{Prompt: second, NumPredict: 4})
	got, want := res.last.Stats.PromptEvalCount, len(second)-common
	if got < want || got > want+1 {
		t.Fatalf("second request evaluated %d prompt tokens, want %d (+1) of %d", got, want, len(second))
	}
	if res.last.Stats.CachedTokens < common-1 {
		t.Fatalf("cached %d tokens, want about %d", res.last.Stats.CachedTokens, common)
	}
	// The same prompt again reuses everything but the last token.
	res = run(t, r, Request{Prompt: second, NumPredict: 4})
	if res.last.Stats.PromptEvalCount != 1 {
		t.Fatalf("repeated prompt evaluated %d tokens, want 1", res.last.Stats.PromptEvalCount)
	}
	// Reuse does not change the output.
	fresh := newRunner(t, m, Config{Parallel: 1, NumCtx: 512})
	if a, b := run(t, fresh, Request{Prompt: second, NumPredict: 16}).text, run(t, r, Request{Prompt: second, NumPredict: 16}).text; a != b {
		t.Fatalf("cached prefix changed the output:\nfresh  %q\ncached %q", a, b)
	}
}

func TestCancellationFreesSlots(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{Parallel: 4, NumCtx: 256})
	prompt := tokenize(t, m, "Once upon a time")
	run(t, r, Request{Prompt: prompt, NumPredict: 2}) // warm up
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			events, err := generate(r, ctx, Request{Prompt: prompt, NumPredict: -1, Sampling: engine.SamplerParams{Temperature: 1, Seed: int64(i)}})
			if err != nil {
				t.Error(err)
				cancel()
				return
			}
			got := 0
			for ev := range events {
				if ev.Text != "" {
					got++
					if got == 3 {
						cancel()
					}
				}
				if ev.Done && ev.DoneReason != "cancel" && ev.Err == nil {
					t.Errorf("unlimited request ended with %q", ev.DoneReason)
				}
			}
			cancel()
		}()
	}
	wg.Wait()
	testkit.Eventually(t, 10*time.Second, "the cancelled requests to free their slots", func() bool { return r.Busy() == 0 })
	testkit.Eventually(t, 10*time.Second, fmt.Sprintf("the goroutines to go back to %d", before), func() bool { return runtime.NumGoroutine() <= before })
	// The runner still serves correctly.
	if res := run(t, r, Request{Prompt: prompt, NumPredict: 30}); !strings.HasPrefix(res.text, storiesContinuation) {
		t.Fatalf("after cancellations: %q", res.text)
	}
}

func TestStopStrings(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{Parallel: 2, NumCtx: 256})
	prompt := tokenize(t, m, "Once upon a time")
	// "tle gi" starts inside " little" and ends inside " girl".
	for _, tc := range []struct{ stop, want string }{
		{"tle gi", ", there was a lit"},
		{"girl named", ", there was a little "},
		{"Lily.", ", there was a little girl named "},
		{", there", ""},
	} {
		res := run(t, r, Request{Prompt: prompt, NumPredict: 40, Stop: []string{"never", tc.stop}})
		if res.text != tc.want || res.last.DoneReason != "stop" {
			t.Errorf("stop %q: got %q (%s), want %q", tc.stop, res.text, res.last.DoneReason, tc.want)
		}
		for _, p := range res.pieces {
			if strings.Contains(p, tc.stop) {
				t.Errorf("stop %q: a streamed piece contains it: %q", tc.stop, p)
			}
		}
	}
}

func TestContextShiftAndTruncation(t *testing.T) {
	m := loadModel(t, "stories260Ktok512.gguf") // trained context 128
	if m.Meta.ContextLength != 128 {
		t.Fatalf("context length %d, want 128", m.Meta.ContextLength)
	}
	r := newRunner(t, m, Config{Parallel: 2, NumCtx: 128})
	prompt := tokenize(t, m, "Once upon a time")

	// Unlimited context: shifting lets generation run past 128 tokens.
	res := run(t, r, Request{Prompt: prompt, NumPredict: 300, NumKeep: 4})
	if res.last.DoneReason != "length" || res.last.Stats.EvalCount != 300 {
		t.Fatalf("with shift: %s after %d tokens, want length after 300", res.last.DoneReason, res.last.Stats.EvalCount)
	}
	// No shift: stops when the context is full. The last token is sampled
	// from the logits of position 127 and needs no room of its own.
	full := 128 - len(prompt) + 1
	res = run(t, r, Request{Prompt: prompt, NumPredict: 300, NoShift: true})
	if res.last.DoneReason != "length" || res.last.Stats.EvalCount != full {
		t.Fatalf("without shift: %s after %d tokens, want length after %d", res.last.DoneReason, res.last.Stats.EvalCount, full)
	}
	// -2 fills the context and stops.
	res = run(t, r, Request{Prompt: prompt, NumPredict: -2})
	if res.last.DoneReason != "length" || res.last.Stats.EvalCount != full {
		t.Fatalf("num_predict -2: %s after %d tokens", res.last.DoneReason, res.last.Stats.EvalCount)
	}
	// A prompt longer than the context is truncated from the front,
	// keeping num_keep tokens, unless truncation is refused.
	long := tokenize(t, m, strings.Repeat("The cat sat on the mat. ", 30))
	if len(long) <= 128 {
		t.Fatalf("long prompt has only %d tokens", len(long))
	}
	res = run(t, r, Request{Prompt: long, NumPredict: 8, NumKeep: 5})
	if res.last.Stats.PromptTokens >= 128 || res.last.Stats.EvalCount != 8 {
		t.Fatalf("truncated prompt: %+v", res.last.Stats)
	}
	if got := res.last.Tokens[:5]; fmt.Sprint(got) != fmt.Sprint(long[:5]) {
		t.Fatalf("num_keep tokens not kept: %v vs %v", got, long[:5])
	}
	if _, err := r.Generate(context.Background(), Request{Prompt: long, NoTruncate: true}); err == nil {
		t.Fatal("a prompt longer than the context was accepted with truncation refused")
	}
	// The 2048-context model with a small slot context behaves the same.
	m2 := loadModel(t, "stories260K.gguf")
	r2 := newRunner(t, m2, Config{Parallel: 1, NumCtx: 64})
	res = run(t, r2, Request{Prompt: prompt, NumPredict: 100})
	if res.last.Stats.EvalCount != 100 {
		t.Fatalf("2048-context model with a 64-token slot: %d tokens", res.last.Stats.EvalCount)
	}
}

func TestEdgeCases(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{Parallel: 2, NumCtx: 128})
	prompt := tokenize(t, m, "Once upon a time")
	res := run(t, r, Request{Prompt: prompt, NumPredict: 0})
	if res.text != "" || res.last.DoneReason != "length" || res.last.Stats.PromptEvalCount == 0 {
		t.Fatalf("num_predict 0: %q %+v", res.text, res.last)
	}
	if _, err := r.Generate(context.Background(), Request{}); err == nil {
		t.Fatal("empty prompt accepted")
	}
	if _, err := r.Generate(context.Background(), Request{Prompt: []engine.Token{1, 99999}}); err == nil {
		t.Fatal("out-of-vocabulary token accepted")
	}
	// More requests than slots all complete.
	var wg sync.WaitGroup
	for i := 0; i < 7; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res := run(t, r, Request{Prompt: prompt, NumPredict: 30}); !strings.HasPrefix(res.text, storiesContinuation) {
				t.Errorf("queued request: %q", res.text)
			}
		}()
	}
	wg.Wait()
	// A cancelled request that never got a slot ends with "cancel".
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	events, err := generate(r, ctx, Request{Prompt: prompt, NumPredict: 5})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Done && ev.DoneReason != "cancel" {
			t.Fatalf("cancelled request: %+v", ev)
		}
	}
}

func TestStopMatcher(t *testing.T) {
	for _, tc := range []struct {
		stops  []string
		pieces []string
		want   string
		hit    bool
	}{
		{[]string{"END"}, []string{"ab", "cE", "N", "D more"}, "abc", true},
		{[]string{"END"}, []string{"ab", "cE", "N", "x"}, "abcENx", false},
		{[]string{"xyz", "c"}, []string{"ab", "cd"}, "ab", true},
		{nil, []string{"a", "b"}, "ab", false},
		{[]string{"ü!"}, []string{"gr", "ü", "n"}, "grün", false},
	} {
		m := stopMatcher{stops: tc.stops}
		var out string
		hit := false
		for _, p := range tc.pieces {
			o, h := m.push(p)
			out += o
			if h {
				hit = true
				break
			}
		}
		if !hit {
			out += m.flush()
		}
		if out != tc.want || hit != tc.hit {
			t.Errorf("%v %v: got %q %v, want %q %v", tc.stops, tc.pieces, out, hit, tc.want, tc.hit)
		}
	}
}

func TestLogprobs(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{Parallel: 1, NumCtx: 128})
	res := run(t, r, Request{Prompt: tokenize(t, m, "Once upon a time"), NumPredict: 10, Logprobs: true, TopLogprobs: 3})
	var lps []TokenLogprob
	events, _ := generate(r, context.Background(), Request{Prompt: tokenize(t, m, "Once upon a time"), NumPredict: 10, Logprobs: true, TopLogprobs: 3})
	text := ""
	for ev := range events {
		lps = append(lps, ev.Logprobs...)
		text += ev.Text
	}
	if text != res.text || len(lps) != 10 {
		t.Fatalf("%d logprobs for %q", len(lps), text)
	}
	joined := ""
	for _, lp := range lps {
		joined += lp.Token
		if lp.Logprob > 0 || len(lp.Top) != 3 {
			t.Fatalf("logprob %+v", lp)
		}
		// Greedy: the chosen token is the most likely one.
		if lp.Top[0].ID != lp.ID || lp.Top[0].Logprob != lp.Logprob || lp.Top[1].Logprob > lp.Top[0].Logprob || lp.Top[2].Logprob > lp.Top[1].Logprob {
			t.Fatalf("top logprobs %+v", lp)
		}
	}
	if strings.ReplaceAll(joined, "▁", " ") != text && joined != text {
		t.Fatalf("logprob tokens %q vs text %q", joined, text)
	}
}

// Waiting requests are admitted by priority, FIFO within one, a level of
// priority worth Config.PriorityStep of waiting: background work gives
// way to later interactive requests only that long.
func TestPriority(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	prompt := tokenize(t, m, "Once upon a time")
	for _, c := range []struct {
		step time.Duration
		want string
	}{
		{time.Hour, "user1,user2,job1,job2"},
		// The users queue at least a millisecond after the jobs: the jobs
		// have waited longer than their priority is worth.
		{time.Nanosecond, "job1,job2,user1,user2"},
	} {
		r := newRunner(t, m, Config{Parallel: 1, NumCtx: 2048, PriorityStep: c.step})
		// Hold the only slot while the others queue; it is freed (the
		// blocker cancelled) once all four wait, so that a loaded machine
		// cannot let it end before the users queue.
		hold, release := context.WithCancel(context.Background())
		defer release()
		blocker, err := generate(r, hold, Request{Prompt: prompt, NumPredict: 2000})
		if err != nil {
			t.Fatal(err)
		}
		// The order requests got the slot, from the runner's own clock
		// (the order their events are read in depends on goroutines).
		var mu sync.Mutex
		admitted := map[string]time.Time{}
		var wg sync.WaitGroup
		submit := func(name string, prio int) {
			events, err := generate(r, context.Background(), Request{Prompt: prompt, NumPredict: 10, Priority: prio})
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ev := range events {
					if ev.Done {
						mu.Lock()
						admitted[name] = ev.Stats.StartedAt
						mu.Unlock()
					}
				}
			}()
		}
		submit("job1", -1)
		submit("job2", -1)
		time.Sleep(time.Millisecond)
		submit("user1", 0)
		submit("user2", 0)
		testkit.Eventually(t, 10*time.Second, "the four requests to queue", func() bool { return r.Waiting() == 4 })
		release()
		for range blocker {
		}
		wg.Wait()
		order := []string{"job1", "job2", "user1", "user2"}
		sort.Slice(order, func(i, j int) bool { return admitted[order[i]].Before(admitted[order[j]]) })
		if got := strings.Join(order, ","); got != c.want {
			t.Fatalf("step %v: order %s, want %s", c.step, got, c.want)
		}
	}
	r := newRunner(t, m, Config{Parallel: 1, NumCtx: 128})
	for _, p := range []int{MaxPriority + 1, -MaxPriority - 1, math.MinInt} {
		if _, err := r.Generate(context.Background(), Request{Prompt: prompt, NumPredict: 1, Priority: p}); err == nil {
			t.Errorf("priority %d accepted", p)
		}
	}
}

// pick keeps busy slots in runs of consecutive ids (one ubatch each with
// a KV stream per slot) unless a slot's cache saves MinCachedPrompt more
// tokens.
func TestPickKeepsSlotsTogether(t *testing.T) {
	long := make([]engine.Token, 3*MinCachedPrompt)
	for i := range long {
		long[i] = engine.Token(i + 1)
	}
	for _, c := range []struct {
		name    string
		busy    string // one letter a slot: b busy, . free
		cached  int    // the slot holding a prefix of the prompt (-1 none)
		shared  int    // how long that prefix is
		unified bool
		want    int
	}{
		{"idle: the lowest", "........", -1, 0, false, 0},
		{"extends a run", "bbb.....", -1, 0, false, 3},
		{"joins two runs", "bb.b..b.", -1, 0, false, 2},
		{"next to a run, not the lowest", "....bb..", -1, 0, false, 3},
		{"a short shared prefix is not worth a gap", "bb......", 6, MinCachedPrompt - 1, false, 2},
		{"a long one is", "bb......", 6, MinCachedPrompt, false, 6},
		{"unified: the longest prefix", "bb......", 6, 1, true, 6},
		{"idle: the slot that holds the prompt", "........", 5, 1, false, 5},
		{"a short prompt held apart is not worth a new run", "bb......", 6, -20, false, 2},
		{"a short prompt mostly held next to a run", "bb.b....", 4, -20, false, 4},
		{"a short prompt barely held next to a run", "bb.b....", 4, -2, false, 2},
		{"of two slots next to runs, the one holding the prompt", "bb..b...", 5, 1, false, 5},
		{"all busy", "bbbb", -1, 0, false, -1},
		{"the waiting fill every slot: the slot that holds the prompt", "bb......", 6, -20, false, 6},
	} {
		r := &Runner{cfg: Config{KVUnified: c.unified}}
		q := &request{prompt: long}
		shared := c.shared
		if shared < 0 { // a 24-token prompt, -shared of it cached
			q.prompt, shared = long[:24], -shared
		}
		for i, b := range c.busy {
			s := &slot{id: i}
			if b == 'b' {
				s.req = &request{}
			}
			if i == c.cached {
				s.cache = long[:shared]
			}
			r.slots = append(r.slots, s)
		}
		got := -1
		waiting := 1
		if strings.HasPrefix(c.name, "the waiting fill") {
			waiting = strings.Count(c.busy, ".")
		}
		if s := r.pick(q, waiting, nil); s != nil {
			got = s.id
		}
		if got != c.want {
			t.Errorf("%s: slot %d, want %d", c.name, got, c.want)
		}
	}
}

// A burst of returning streams goes back to the slots that hold their
// prompts when the busy slots stay in as few runs as pick's one-by-one
// placement leaves them; else pick's placement stands.
func TestBurstKeepsStreamsInTheirSlots(t *testing.T) {
	for _, c := range []struct {
		name  string
		busy  string // b busy, . free
		own   []int  // the slot holding each waiting request's prompt (-1 none)
		want  []int  // the planned slots (nil: no plan, pick decides)
		unify bool
	}{
		// The first stream back took its old slot 5; the other seven
		// return to 0-4, 6, 7: one run, as pick's 4, 6, 3, 7, … would be.
		{"back to their slots", ".....b..........", []int{0, 1, 2, 3, 4, 6, 7}, []int{0, 1, 2, 3, 4, 6, 7}, false},
		// Old slots 0, 2 and 9 around a busy 5 would leave four runs.
		{"scattered: pick's runs", ".....b..........", []int{0, 2, 9}, nil, false},
		{"nothing held: pick", ".....b..........", []int{-1, -1}, nil, false},
		{"one waits: pick", ".....b..........", []int{4}, nil, false},
		{"unified KV: pick takes the prefixes itself", ".....b..........", []int{0, 1}, nil, true},
		{"they fill every slot: pick takes the prefixes itself", "bb..", []int{3, 2}, nil, false},
	} {
		r := &Runner{cfg: Config{KVUnified: c.unify}}
		for i, b := range c.busy {
			s := &slot{id: i}
			if b == 'b' {
				s.req = &request{}
			}
			r.slots = append(r.slots, s)
		}
		for k, own := range c.own {
			// Each request's 9-token prompt differs from the others'
			// at its second token, as make bench's streams do.
			p := []engine.Token{1, engine.Token(100 + k), 3, 4, 5, 6, 7, 8, 9}
			q := &request{prompt: p}
			r.waiting = append(r.waiting, q)
			if own >= 0 {
				r.slots[own].cache = p
			}
		}
		plan := r.burst()
		var got []int
		if plan != nil {
			for _, q := range r.waiting {
				got = append(got, plan[q].id)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: planned %v, want %v", c.name, got, c.want)
		}
	}
}

// A lazy grammar's tokens are checked against the vocabulary, its
// grammar must parse, and a request that never triggers it ends with
// both samplers freed (the runner closes cleanly).
func TestLazyWorstValues(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newRunner(t, m, Config{Parallel: 1, NumCtx: 128})
	prompt := tokenize(t, m, "Once upon a time")
	n := engine.Token(m.VocabSize())
	big, neg := n, engine.Token(-1)
	for _, l := range []*Lazy{
		{Grammar: `root ::= "a"`, Trigger: n},
		{Grammar: `root ::= "a"`, Trigger: -1},
		{Grammar: `root ::= "a"`, Trigger: 5, After: &big},
		{Grammar: `root ::= "a"`, Trigger: 5, After: &neg},
		{Grammar: ``, Trigger: 5},
		{Grammar: `root ::= (`, Trigger: 5},
	} {
		if _, err := r.Generate(context.Background(), Request{Prompt: prompt, NumPredict: 4, Lazy: l}); err == nil {
			t.Errorf("lazy %+v accepted", l)
		}
	}
	// A trigger the model does not write: the output is free.
	events, err := generate(r, context.Background(), Request{Prompt: prompt, NumPredict: 8, Lazy: &Lazy{Grammar: "root ::= <[" + fmt.Sprint(n-1) + "]> \"x\"", Trigger: n - 1}})
	if err != nil {
		t.Fatal(err)
	}
	free, err := generate(r, context.Background(), Request{Prompt: prompt, NumPredict: 8})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := collect(t, events), collect(t, free); a.text != b.text || a.text == "" {
		t.Fatalf("untriggered lazy grammar changed the output: %q vs %q", a.text, b.text)
	}
}
