package sched

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// logCapture keeps the messages of every record.
type logCapture struct {
	mu    sync.Mutex
	lines []string
}

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.lines = append(l.lines, r.Message)
	l.mu.Unlock()
	return nil
}
func (l *logCapture) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCapture) WithGroup(string) slog.Handler      { return l }

var kvLine = regexp.MustCompile(`llama_kv_cache: size = +([0-9.]+) MiB`)

// The estimate agrees with what llama.cpp reports after loading: the
// weights exactly, the KV cache to the MiB it prints.
func TestEstimateMatchesLlamaCpp(t *testing.T) {
	capture := &logCapture{}
	old := slog.Default()
	slog.SetDefault(slog.New(capture))
	defer slog.SetDefault(old)
	// A generated model with 32-wide heads takes the quantized cache types.
	small := t.TempDir() + "/small.gguf"
	if err := testmodels.WriteRandomLlama(small, testmodels.Small, gguf.Q4_0, 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file   string
		ctx    int
		kvType string
	}{
		{testmodels.Testdata("stories260K.gguf"), 1024, "f16"},
		{testmodels.Testdata("stories260K.gguf"), 4096, "f32"},
		{testmodels.Testdata("stories260Ktok512.gguf"), 512, "f32"},
		{small, 2048, "q8_0"},
		{small, 1024, "q4_0"},
	} {
		path := tc.file
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		e, err := EstimateMemory(f, tc.ctx, tc.kvType, 512)
		if err != nil {
			t.Fatal(err)
		}
		m, err := engine.LoadModel(path, engine.ModelParams{})
		if err != nil {
			t.Fatal(err)
		}
		if e.WeightBytes() != m.Meta.SizeBytes {
			t.Errorf("%s: weights %d, llama.cpp %d", tc.file, e.WeightBytes(), m.Meta.SizeBytes)
		}
		capture.mu.Lock()
		capture.lines = nil
		capture.mu.Unlock()
		ctx, err := m.NewContext(engine.ContextParams{NumCtx: tc.ctx, KVType: tc.kvType, Threads: 1, KVUnified: true})
		if err != nil {
			t.Fatal(err)
		}
		reported := -1.0
		capture.mu.Lock()
		for _, l := range capture.lines {
			if mm := kvLine.FindStringSubmatch(l); mm != nil {
				reported, _ = strconv.ParseFloat(mm[1], 64)
			}
		}
		capture.mu.Unlock()
		ctx.Close()
		m.Close()
		got := float64(e.KVBytes()) / (1 << 20)
		if reported < 0 || got < reported-0.01 || got > reported+0.01 {
			t.Errorf("%s ctx %d %s: KV estimate %.2f MiB, llama.cpp %.2f MiB", tc.file, tc.ctx, tc.kvType, got, reported)
		}
	}
	// The generated bigram model too (no GQA, another shape).
	path := t.TempDir() + "/bigram.gguf"
	if err := testmodels.WriteBigram(path); err != nil {
		t.Fatal(err)
	}
	f, _ := gguf.Open(path)
	e, _ := EstimateMemory(f, 256, "f16", 512)
	m, err := engine.LoadModel(path, engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if e.WeightBytes() != m.Meta.SizeBytes || e.Layers != m.Meta.Layers {
		t.Errorf("bigram: weights %d vs %d", e.WeightBytes(), m.Meta.SizeBytes)
	}
}
