package infer

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// newService is a Service on the real scheduler and engine, serving the
// demo model as "stories" from a temporary models directory.
func newService(t *testing.T) *Service {
	t.Helper()
	dir := t.TempDir()
	src, err := filepath.Abs(testmodels.Testdata("stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(src, filepath.Join(dir, "stories.gguf")); err != nil {
		t.Fatal(err)
	}
	sc := sched.New(sched.Config{Parallel: 2, NumCtx: 256, Threads: 1, KeepAlive: time.Minute})
	t.Cleanup(sc.Close)
	return &Service{Store: &models.Store{Dir: dir}, Sched: sc}
}

func storiesRequest(numPredict int) *Request {
	o := ollamaapi.DefaultOptions()
	o.NumPredict = numPredict
	o.Temperature = 0
	return &Request{Model: "stories", Prompt: "Once upon a time", Options: o}
}

// requests is what the scheduler counts as holding the model's instance.
func requests(s *Service) int {
	n := 0
	for _, st := range s.Sched.Status() {
		n += st.Requests
	}
	return n
}

// TestGenerationClose: Close ends a generation that still runs (its
// stream's final event says cancelled) and only then hands the instance
// back; a second Close does nothing.
func TestGenerationClose(t *testing.T) {
	s := newService(t)
	g, err := s.Generate(context.Background(), storiesRequest(200))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Streams()) != 1 || g.Stream() == nil || g.Instance() == nil || g.Acquired().IsZero() {
		t.Fatalf("generation: %d streams, instance %v", len(g.Streams()), g.Instance())
	}
	evs, err := g.Stream().Next(nil)
	if err != nil || len(evs) == 0 {
		t.Fatalf("first events: %v, %v", evs, err)
	}
	if requests(s) != 1 {
		t.Fatalf("%d requests hold the instance while generating", requests(s))
	}
	g.Close()
	if g.Context().Err() == nil {
		t.Fatal("the generation's context is not done after Close")
	}
	if requests(s) != 0 {
		t.Fatalf("%d requests hold the instance after Close", requests(s))
	}
	// The slot is freed at the next decode step: give it a moment.
	testkit.Eventually(t, 5*time.Second, "the slots to be free after Close", func() bool {
		busy, _ := g.Instance().si.Runner.Slots()
		return busy == 0
	})
	g.Close() // a second Close does nothing (no second release)
	if requests(s) != 0 {
		t.Fatalf("%d requests after a second Close", requests(s))
	}
}

// TestGenerateAllOrNothing: when a later request cannot start, the ones
// already started end and the instance goes back; the caller gets the
// error and nothing to close.
func TestGenerateAllOrNothing(t *testing.T) {
	s := newService(t)
	bad := storiesRequest(8)
	bad.Options.TopK = -5 // out of range: Start refuses it
	g, err := s.Generate(context.Background(), storiesRequest(200), bad)
	if err == nil {
		g.Close()
		t.Fatal("a request with top_k -5 started")
	}
	if g != nil || KindOf(err) != BadRequest {
		t.Fatalf("generation %v, error %v (kind %v)", g, err, KindOf(err))
	}
	if requests(s) != 0 {
		t.Fatalf("%d requests hold the instance after a failed Generate", requests(s))
	}
	if _, err := s.Generate(context.Background()); err == nil {
		t.Fatal("Generate with no request succeeded")
	}
}

// TestGenerateReadsToEnd: a generation read to its end ends with a final
// event and io.EOF; Load holds an instance without a stream.
func TestGenerateReadsToEnd(t *testing.T) {
	s := newService(t)
	g, err := s.Generate(context.Background(), storiesRequest(5), storiesRequest(5))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for i, st := range g.Streams() {
		var last Event
		for {
			evs, err := st.Next(nil)
			if len(evs) > 0 {
				last = evs[len(evs)-1]
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("stream %d: %v", i, err)
			}
		}
		if !last.Done || last.Err != nil || last.Stats.EvalCount != 5 {
			t.Fatalf("stream %d: last event %+v", i, last)
		}
	}
	l, err := s.Load(context.Background(), storiesRequest(1))
	if err != nil {
		t.Fatal(err)
	}
	if l.Stream() != nil || len(l.Streams()) != 0 || requests(s) != 2 {
		t.Fatalf("Load: stream %v, %d requests", l.Stream(), requests(s))
	}
	l.Close()
	if requests(s) != 1 {
		t.Fatalf("%d requests after closing the Load", requests(s))
	}
}
