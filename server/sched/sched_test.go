package sched

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine/gpu"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

var (
	storiesPath = testmodels.Testdata("stories260K.gguf")
	tok512Path  = testmodels.Testdata("stories260Ktok512.gguf")
)

func newSched(t *testing.T, cfg Config) *Scheduler {
	t.Helper()
	cfg.Threads = 1
	if cfg.GPUs == nil {
		cfg.GPUs = &gpu.Fake{}
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = 2
	}
	if cfg.NumCtx == 0 {
		cfg.NumCtx = 128
	}
	s := New(cfg)
	t.Cleanup(s.Close)
	return s
}

func acquire(t *testing.T, s *Scheduler, path string) *Instance {
	t.Helper()
	in, _, err := s.Acquire(context.Background(), path, Key{Path: path, NumGPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func loadedPaths(s *Scheduler) string {
	var out []string
	for _, in := range s.Loaded() {
		out = append(out, in.Key.Path[strings.LastIndex(in.Key.Path, "/")+1:])
	}
	if len(out) == 2 && out[0] > out[1] {
		out[0], out[1] = out[1], out[0]
	}
	return strings.Join(out, ",")
}

func generate(t *testing.T, in *Instance, prompt string) string {
	t.Helper()
	toks, _ := in.Model.Tokenize(prompt, true, false)
	stream, err := in.Runner.Generate(context.Background(), runner.Request{Prompt: toks, NumPredict: 30})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := stream.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	text := ""
	for _, ev := range evs {
		text += ev.Text
	}
	return text
}

func TestTwoModelsConcurrently(t *testing.T) {
	s := newSched(t, Config{KeepAlive: time.Minute})
	a, b := acquire(t, s, storiesPath), acquire(t, s, tok512Path)
	var wg sync.WaitGroup
	var ta, tb string
	wg.Add(2)
	go func() { defer wg.Done(); ta = generate(t, a, "Once upon a time") }()
	go func() { defer wg.Done(); tb = generate(t, b, "Once upon a time") }()
	wg.Wait()
	want := ", there was a little girl named Lily."
	if !strings.HasPrefix(ta, want) || !strings.HasPrefix(tb, want) {
		t.Fatalf("%q / %q", ta, tb)
	}
	s.Release(a, time.Minute)
	s.Release(b, time.Minute)
	if got := loadedPaths(s); got != "stories260K.gguf,stories260Ktok512.gguf" {
		t.Fatalf("loaded: %s", got)
	}
	for _, st := range s.Status() {
		if st.ExpiresAt.Before(time.Now().Add(50 * time.Second)) {
			t.Fatalf("expiry %v", st.ExpiresAt)
		}
	}
}

func TestKeepAlive(t *testing.T) {
	s := newSched(t, Config{KeepAlive: time.Minute})
	in := acquire(t, s, storiesPath)
	s.Release(in, 150*time.Millisecond)
	if len(s.Loaded()) != 1 {
		t.Fatal("unloaded before keep_alive expired")
	}
	testkit.Eventually(t, 5*time.Second, "the model to unload after keep_alive", func() bool { return len(s.Loaded()) == 0 })
	in = acquire(t, s, storiesPath)
	s.Release(in, 0)
	if len(s.Loaded()) != 0 {
		t.Fatal("keep_alive 0 did not unload")
	}
	in = acquire(t, s, storiesPath)
	s.Release(in, -1)
	time.Sleep(50 * time.Millisecond)
	if st := s.Status(); len(st) != 1 || !st[0].ExpiresAt.IsZero() {
		t.Fatal("negative keep_alive did not keep the model")
	}
	// A request arriving for an idle model cancels its expiry.
	s.Release(acquire(t, s, storiesPath), 100*time.Millisecond)
	again := acquire(t, s, storiesPath)
	time.Sleep(250 * time.Millisecond)
	if len(s.Loaded()) != 1 {
		t.Fatal("a busy model expired")
	}
	s.Release(again, time.Minute)
}

func TestEvictsIdleLeastRecentlyUsed(t *testing.T) {
	s := newSched(t, Config{KeepAlive: time.Minute, MaxLoaded: 2})
	s.Release(acquire(t, s, storiesPath), time.Minute)
	time.Sleep(5 * time.Millisecond)
	s.Release(acquire(t, s, tok512Path), time.Minute)
	time.Sleep(5 * time.Millisecond)
	s.Release(acquire(t, s, storiesPath), time.Minute) // stories is now the most recent
	// A third instance (a num_ctx past the default context of 128) evicts
	// tok512, the least recent.
	in, _, err := s.Acquire(context.Background(), "x", Key{Path: storiesPath, NumCtx: 200, NumGPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(in, time.Minute)
	for _, l := range s.Loaded() {
		if l.Key.Path == tok512Path {
			t.Fatal("the least recently used model was not evicted")
		}
	}
	if len(s.Loaded()) != 2 {
		t.Fatalf("%d loaded", len(s.Loaded()))
	}
}

func TestBusyModelIsNotEvicted(t *testing.T) {
	s := newSched(t, Config{KeepAlive: time.Minute, MaxLoaded: 1})
	a := acquire(t, s, storiesPath)
	got := make(chan *Instance)
	go func() {
		in, _, err := s.Acquire(context.Background(), "b", Key{Path: tok512Path, NumGPU: -1})
		if err != nil {
			t.Error(err)
		}
		got <- in
	}()
	select {
	case <-got:
		t.Fatal("a busy model was evicted")
	case <-time.After(200 * time.Millisecond):
	}
	if loadedPaths(s) != "stories260K.gguf" {
		t.Fatalf("loaded %s", loadedPaths(s))
	}
	s.Release(a, time.Minute) // now idle: the waiting request evicts it
	b := <-got
	if b == nil || loadedPaths(s) != "stories260Ktok512.gguf" {
		t.Fatalf("loaded %s", loadedPaths(s))
	}
	s.Release(b, time.Minute)
	// A waiting request gives up when its context ends.
	hold := acquire(t, s, storiesPath)
	defer s.Release(hold, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := s.Acquire(ctx, "b", Key{Path: tok512Path, NumGPU: -1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled wait: %v", err)
	}
}

// With fake GPUs that hold one model at a time, a second model evicts the
// idle first one, and waits while it is busy.
func TestGPUMemoryEviction(t *testing.T) {
	f, _ := gguf.Open(storiesPath)
	e, _ := EstimateMemory(f, 128*2, "", 512)
	need := e.GPUBytes(e.Layers + 1)
	fake := &gpu.Fake{List: []gpu.Device{{Index: 0, Name: "fake", TotalBytes: need * 3 / 2, FreeBytes: need * 3 / 2}}}
	s := newSched(t, Config{KeepAlive: time.Minute, GPUs: fake})
	a := acquire(t, s, storiesPath)
	if a.Placement.GPULayers != e.Layers+1 || a.Placement.Processor() != "100% GPU" {
		t.Fatalf("placement %+v", a.Placement)
	}
	s.Release(a, time.Minute)
	b := acquire(t, s, tok512Path)
	if loadedPaths(s) != "stories260Ktok512.gguf" || b.Placement.GPULayers != e.Layers+1 {
		t.Fatalf("loaded %s, placement %+v", loadedPaths(s), b.Placement)
	}
	done := make(chan struct{})
	go func() {
		c := acquire(t, s, storiesPath)
		s.Release(c, time.Minute)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("evicted a busy model")
	case <-time.After(200 * time.Millisecond):
	}
	s.Release(b, time.Minute)
	<-done
}

func TestTooLarge(t *testing.T) {
	s := newSched(t, Config{KeepAlive: time.Minute, MemoryBytes: 100 << 10})
	_, _, err := s.Acquire(context.Background(), "x", Key{Path: storiesPath, NumGPU: -1})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "available") {
		t.Fatalf("error %v", err)
	}
	if len(s.Loaded()) != 0 {
		t.Fatal("left an instance behind")
	}
}
