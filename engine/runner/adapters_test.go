package runner

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// loraBigram loads the bigram model and its two test adapters.
func loraBigram(t *testing.T) (m *engine.Model, colors, count *engine.Adapter) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "bigram.gguf")
	if err := testmodels.WriteBigram(path); err != nil {
		t.Fatal(err)
	}
	m, err := engine.LoadModel(path, engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	load := func(name string, changes map[string]string) *engine.Adapter {
		p := filepath.Join(dir, name+".gguf")
		if err := testmodels.WriteBigramAdapter(p, name, changes); err != nil {
			t.Fatal(err)
		}
		a, err := m.LoadAdapter(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	return m, load("colors", testmodels.AdapterColors), load("count", testmodels.AdapterCount)
}

func adapterSet(t *testing.T, adapters []*engine.Adapter, scales []float32) AdapterSet {
	t.Helper()
	s, err := NewAdapterSet(adapters, scales)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAdapterSetsTakeTurns: requests under four adapter sets (none,
// colors, count, both) at once, several of each, each answer exactly its
// set's (a set never leaks into another's tokens), then each set alone
// again on the slots the others left (prefixes are reused only under the
// set they were computed under).
func TestAdapterSetsTakeTurns(t *testing.T) {
	m, colors, count := loraBigram(t)
	r := newRunner(t, m, Config{Parallel: 4, NumCtx: 128})
	chat, err := m.Tokenize(testmodels.BigramChatPrompt, true, true)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		set  AdapterSet
		want string
	}{
		{AdapterSet{}, testmodels.BigramAnswer},
		{adapterSet(t, []*engine.Adapter{colors}, []float32{1}), testmodels.AdapterColorsAnswer},
		{adapterSet(t, []*engine.Adapter{count}, []float32{1}), testmodels.AdapterCountAnswer},
		{adapterSet(t, []*engine.Adapter{colors, count}, []float32{1, 1}), testmodels.AdapterColorsAndCountAnswer},
		{adapterSet(t, []*engine.Adapter{colors, count}, []float32{0, 0}), testmodels.BigramAnswer}, // all off: the base
	}
	var wg sync.WaitGroup
	for round := range 2 {
		for i, c := range cases {
			for k := range 2 {
				wg.Go(func() {
					res := collect(t, mustGenerate(t, r, Request{Prompt: chat, NumPredict: 40, Adapters: c.set}))
					if res.last.Err != nil || res.text != c.want {
						t.Errorf("round %d, set %d (%q) #%d: %q (%v), want %q", round, i, c.set.Key(), k, res.text, res.last.Err, c.want)
					}
				})
			}
		}
		wg.Wait()
	}
	// Alone, one after another on the same slots: no prefix computed
	// under one set answers for another.
	// (The bigram model's answer hangs on the last token alone, so the
	// cached-token count tells whether a prefix was reused.)
	r1 := newRunner(t, m, Config{Parallel: 1, NumCtx: 128})
	prev := "none yet"
	for _, c := range append(cases, cases[1], cases[1]) {
		res := run(t, r1, Request{Prompt: chat, NumPredict: 40, Adapters: c.set})
		if res.text != c.want {
			t.Errorf("alone, set %q: %q, want %q", c.set.Key(), res.text, c.want)
		}
		cached := res.last.Stats.CachedTokens
		switch {
		case c.set.Key() != prev && cached != 0:
			t.Errorf("set %q reused %d tokens cached under %q", c.set.Key(), cached, prev)
		case c.set.Key() == prev && cached == 0:
			t.Errorf("set %q did not reuse its own prefix", c.set.Key())
		}
		prev = c.set.Key()
	}
	if set := adapterSet(t, []*engine.Adapter{colors, count}, []float32{0, 0}); !set.Empty() {
		t.Errorf("a set of zero scales is %q, want the base's", set.Key())
	}
}

// TestAdapterPromptCacheKeyed: a conversation's state saved under one
// set is restored for the same set, and never for another.
func TestAdapterPromptCacheKeyed(t *testing.T) {
	m, colors, _ := loraBigram(t)
	pc := NewPromptCache(64<<20, "", 0)
	r := newRunner(t, m, Config{Parallel: 1, NumCtx: 256, PromptCache: pc, CacheKey: "bigram"})
	set := adapterSet(t, []*engine.Adapter{colors}, []float32{1})
	long, err := m.Tokenize(testmodels.BigramChatPrompt+" one two three four five six seven eight nine ten one two three four five six seven eight nine ten one two three four five six seven eight nine ten one two three four five six seven eight nine ten one two three four five six seven eight nine ten "+testmodels.BigramChatPrompt, true, true)
	if err != nil {
		t.Fatal(err)
	}
	other := tokenize(t, m, testmodels.CountPrompt)
	first := run(t, r, Request{Prompt: long, NumPredict: 40, Adapters: set})
	if first.text != testmodels.AdapterColorsAnswer {
		t.Fatalf("under colors: %q", first.text)
	}
	run(t, r, Request{Prompt: other, NumPredict: 4}) // takes the slot: the long prompt goes to the cache
	base := run(t, r, Request{Prompt: long, NumPredict: 40})
	if base.text != testmodels.BigramAnswer || base.last.Stats.RestoredTokens != 0 {
		t.Fatalf("the base after colors: %q, %d tokens restored from the cache", base.text, base.last.Stats.RestoredTokens)
	}
	run(t, r, Request{Prompt: other, NumPredict: 4})
	again := run(t, r, Request{Prompt: long, NumPredict: 40, Adapters: set})
	if again.text != testmodels.AdapterColorsAnswer || again.last.Stats.RestoredTokens == 0 {
		t.Fatalf("colors again: %q, %d tokens restored (want its own entry)", again.text, again.last.Stats.RestoredTokens)
	}
}

func mustGenerate(t *testing.T, r *Runner, req Request) <-chan Event {
	t.Helper()
	ch, err := generate(r, context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}
