package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tadpole-llm/tadpole/internal/testkit"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/telemetry"
)

// scrape reads /metrics and returns every gauge sample as
// "name{label=value}" → value, keeping only the labels given.
func scrape(t *testing.T, base string, labels ...string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	out := map[string]float64{}
	for name, f := range fams {
		if f.GetType() != dto.MetricType_GAUGE {
			continue
		}
		for _, m := range f.GetMetric() {
			key := name
			for _, lp := range m.GetLabel() {
				for _, l := range labels {
					if lp.GetName() == l {
						key += fmt.Sprintf("{%s=%s}", l, lp.GetValue())
					}
				}
			}
			out[key] = m.GetGauge().GetValue()
		}
	}
	return out
}

// The model-server gauges a router reads (Tadpole's names, and vLLM's
// with --metrics-compat vllm) follow the requests: with one slot and
// three long generations, one runs, two wait and the running one holds
// KV cells; once they end, all three gauges are back at zero.
func TestModelServerMetrics(t *testing.T) {
	srv := New(Config{ModelsDir: testModels(t, "stories"), MetricsCompat: telemetry.CompatVLLM, Sched: testSched(1, 256)})
	ts := serveForTest(t, srv)

	// Before any model is loaded the vLLM gauges say "idle" (a router
	// reads a missing gauge as a failed scrape); Tadpole's have no series.
	idle := scrape(t, ts.URL, "model", "model_name")
	if v, ok := idle["vllm:num_requests_waiting{model_name=}"]; !ok || v != 0 {
		t.Fatalf("nothing loaded: %v", idle)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			// About a minute of generation each (context shifts included):
			// they are cancelled long before.
			ts.Client.Generate(ctx, &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once upon a time",
				Options: map[string]any{"temperature": 0, "num_predict": 100000}}, func(ollamaapi.GenerateResponse) error { return nil })
		})
	}

	const m = "stories:latest"
	want := func(s map[string]float64) bool {
		return s["tadpole_requests_running{model="+m+"}"] == 1 && s["tadpole_requests_waiting{model="+m+"}"] == 2 &&
			s["tadpole_kv_cache_usage_ratio{model="+m+"}"] > 0 && s["tadpole_kv_cache_cells{model="+m+"}"] == 256 &&
			s["vllm:num_requests_running{model_name="+m+"}"] == 1 && s["vllm:num_requests_waiting{model_name="+m+"}"] == 2 &&
			s["vllm:kv_cache_usage_perc{model_name="+m+"}"] > 0 && s["vllm:gpu_cache_usage_perc{model_name="+m+"}"] > 0
	}
	busy := pollMetrics(t, ts.URL, want, "1 running, 2 waiting, KV cells in use")
	kv := busy["tadpole_kv_cache_usage_ratio{model="+m+"}"]
	if used := busy["tadpole_kv_cache_cells_used{model="+m+"}"]; kv > 1 || used < 1 || used > 256 || kv != used/256 {
		t.Fatalf("KV usage %v with %v of 256 cells used", kv, used)
	}
	t.Logf("under load: running 1, waiting 2, KV usage %.3f (%v cells)", kv, busy["tadpole_kv_cache_cells_used{model="+m+"}"])

	cancel()
	wg.Wait()
	done := pollMetrics(t, ts.URL, func(s map[string]float64) bool {
		return s["tadpole_requests_running{model="+m+"}"] == 0 && s["tadpole_requests_waiting{model="+m+"}"] == 0 &&
			s["tadpole_kv_cache_usage_ratio{model="+m+"}"] == 0 &&
			s["vllm:num_requests_running{model_name="+m+"}"] == 0 && s["vllm:num_requests_waiting{model_name="+m+"}"] == 0 &&
			s["vllm:kv_cache_usage_perc{model_name="+m+"}"] == 0 && s["tadpole_kv_cache_cells{model="+m+"}"] == 256
	}, "all zero after the requests ended")
	// The idle slot keeps its prefix for the next request: cached, not used.
	if c := done["tadpole_kv_cache_cells_cached{model="+m+"}"]; c < 1 {
		t.Errorf("no cached cells after the requests: %v", c)
	}
}

// pollMetrics scrapes /metrics until ok holds, failing after a generous
// deadline (no timing is asserted: only that the state is reached).
func pollMetrics(t *testing.T, base string, ok func(map[string]float64) bool, what string) map[string]float64 {
	t.Helper()
	var s map[string]float64
	seen := false
	defer func() {
		if !seen { // Eventually failed the test
			t.Logf("the last /metrics:\n%v", s)
		}
	}()
	testkit.Eventually(t, 2*time.Minute, "/metrics to show "+what, func() bool {
		s = scrape(t, base, "model", "model_name")
		return ok(s)
	})
	seen = true
	return s
}

// Without --metrics-compat only Tadpole's names are exported.
func TestModelServerMetricsNoCompat(t *testing.T) {
	ts := startServer(t)
	if err := ts.Client.Generate(context.Background(), &ollamaapi.GenerateRequest{Model: "stories", Prompt: "Once", Stream: ptr(false), Options: greedyOpts(3)},
		func(ollamaapi.GenerateResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	s := scrape(t, ts.URL, "model")
	if _, ok := s["tadpole_requests_waiting{model=stories:latest}"]; !ok {
		t.Fatalf("tadpole_requests_waiting missing: %v", s)
	}
	for k := range s {
		if strings.HasPrefix(k, "vllm:") {
			t.Fatalf("%s exported without --metrics-compat", k)
		}
	}
}

func TestParseCompat(t *testing.T) {
	for in, want := range map[string]telemetry.Compat{"": telemetry.CompatNone, "none": telemetry.CompatNone, "vllm": telemetry.CompatVLLM} {
		if got, err := telemetry.ParseCompat(in); err != nil || got != want {
			t.Errorf("ParseCompat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := telemetry.ParseCompat("sglang"); err == nil || !strings.Contains(err.Error(), "--metrics-compat") {
		t.Errorf("ParseCompat(sglang): %v", err)
	}
}
