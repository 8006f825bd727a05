package telemetry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// Compat names another server's metric names that /metrics also exports
// the model-server gauges under (--metrics-compat).
type Compat string

const (
	// CompatNone exports Tadpole's names only.
	CompatNone Compat = ""
	// CompatVLLM also exports the vLLM names that the Gateway API
	// Inference Extension's endpoint picker reads by default:
	// vllm:num_requests_waiting, vllm:num_requests_running and both
	// spellings of the KV-cache usage, vllm:kv_cache_usage_perc (vLLM
	// v1, the picker's default since v1.3) and vllm:gpu_cache_usage_perc
	// (vLLM v0, the default of the picker up to v1.2), with the label
	// model_name.
	CompatVLLM Compat = "vllm"
)

// ParseCompat reads a --metrics-compat value: "" or "none", or "vllm".
func ParseCompat(s string) (Compat, error) {
	switch s {
	case "", "none":
		return CompatNone, nil
	case "vllm":
		return CompatVLLM, nil
	}
	return CompatNone, fmt.Errorf("--metrics-compat: want vllm or none, not %q", s)
}

// kvWait bounds how long a scrape waits for a runner's loop to report
// its KV cells (runner.KVCells answers between two decode steps); past
// it the scrape reports the instance's last answer.
const kvWait = 100 * time.Millisecond

// modelServerCollector exports the gauges a load-balancing router reads
// to pick a model server (the Gateway API Inference Extension's
// model-server protocol): per model, the requests waiting for a slot,
// the requests running in one, and the KV-cache utilization (cells of
// running requests / all cells, 0–1). Instances of one model (loaded
// with different contexts) are summed, so that each series names one
// model. It is a Prometheus collector rather than OpenTelemetry
// instruments because the vLLM names hold a colon, which OpenTelemetry
// instrument names may not.
type modelServerCollector struct {
	sched  *sched.Scheduler
	compat Compat

	mu   sync.Mutex
	last map[*runner.Runner]runner.KVCells // each loaded runner's last answer
}

var (
	msWaiting  = prometheus.NewDesc("tadpole_requests_waiting", "requests waiting for a slot, by model", []string{"model"}, nil)
	msRunning  = prometheus.NewDesc("tadpole_requests_running", "requests generating in a slot, by model", []string{"model"}, nil)
	msKVUsage  = prometheus.NewDesc("tadpole_kv_cache_usage_ratio", "KV-cache cells held by running requests / all cells (0-1), by model", []string{"model"}, nil)
	msKVUsed   = prometheus.NewDesc("tadpole_kv_cache_cells_used", "KV-cache cells held by running requests, by model", []string{"model"}, nil)
	msKVCached = prometheus.NewDesc("tadpole_kv_cache_cells_cached", "KV-cache cells idle slots keep for prefix reuse, by model", []string{"model"}, nil)
	msKVTotal  = prometheus.NewDesc("tadpole_kv_cache_cells", "KV-cache cells (slots x per-slot context), by model", []string{"model"}, nil)

	vllmWaiting = prometheus.NewDesc("vllm:num_requests_waiting", "Number of requests waiting to be processed (Tadpole: waiting for a slot).", []string{"model_name"}, nil)
	vllmRunning = prometheus.NewDesc("vllm:num_requests_running", "Number of requests currently running (Tadpole: generating in a slot).", []string{"model_name"}, nil)
	vllmKV      = prometheus.NewDesc("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", []string{"model_name"}, nil)
	vllmGPUKV   = prometheus.NewDesc("vllm:gpu_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage (vLLM v0's name).", []string{"model_name"}, nil)
)

func (c *modelServerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{msWaiting, msRunning, msKVUsage, msKVUsed, msKVCached, msKVTotal} {
		ch <- d
	}
	if c.compat == CompatVLLM {
		for _, d := range []*prometheus.Desc{vllmWaiting, vllmRunning, vllmKV, vllmGPUKV} {
			ch <- d
		}
	}
}

// modelLoad is one model's gauges, summed over its instances.
type modelLoad struct {
	waiting, running int
	kv               runner.KVCells
}

func (c *modelServerCollector) Collect(ch chan<- prometheus.Metric) {
	var st []sched.Status
	if c.sched != nil {
		st = c.sched.Status()
	}
	kv := c.kvCells(st)
	byModel := map[string]*modelLoad{}
	for i, in := range st {
		m := byModel[in.Name]
		if m == nil {
			m = &modelLoad{}
			byModel[in.Name] = m
		}
		running, _ := in.Runner.Slots()
		m.running += running
		m.waiting += in.Runner.Waiting()
		m.kv.Used += kv[i].Used
		m.kv.Cached += kv[i].Cached
		m.kv.Total += kv[i].Total
	}
	gauge := func(d *prometheus.Desc, v float64, model string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, model)
	}
	for name, m := range byModel {
		gauge(msWaiting, float64(m.waiting), name)
		gauge(msRunning, float64(m.running), name)
		gauge(msKVUsage, m.kv.Usage(), name)
		gauge(msKVUsed, float64(m.kv.Used), name)
		gauge(msKVCached, float64(m.kv.Cached), name)
		gauge(msKVTotal, float64(m.kv.Total), name)
	}
	if c.compat != CompatVLLM {
		return
	}
	if len(byModel) == 0 {
		// A router reads an absent gauge as a scrape error; a server with
		// nothing loaded is idle, so it says so.
		byModel[""] = &modelLoad{}
	}
	for name, m := range byModel {
		gauge(vllmWaiting, float64(m.waiting), name)
		gauge(vllmRunning, float64(m.running), name)
		gauge(vllmKV, m.kv.Usage(), name)
		gauge(vllmGPUKV, m.kv.Usage(), name)
	}
}

// kvCells asks every instance's runner for its KV cells at once, each
// for at most kvWait, and keeps the answers for the next scrape: a runner
// in a long decode step reports its previous answer (or zero cells in
// use, before its first). Only the runners loaded now are kept.
func (c *modelServerCollector) kvCells(st []sched.Status) []runner.KVCells {
	out := make([]runner.KVCells, len(st))
	ok := make([]bool, len(st))
	ctx, cancel := context.WithTimeout(context.Background(), kvWait)
	defer cancel()
	var wg sync.WaitGroup
	for i, in := range st {
		wg.Go(func() {
			k, err := in.Runner.KVCells(ctx)
			out[i], ok[i] = k, err == nil
		})
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	last := make(map[*runner.Runner]runner.KVCells, len(st))
	for i, in := range st {
		if !ok[i] {
			if prev, had := c.last[in.Runner]; had {
				out[i] = prev
			} else {
				cfg := in.Runner.Config()
				out[i] = runner.KVCells{Total: cfg.Parallel * cfg.NumCtx}
			}
		}
		last[in.Runner] = out[i]
	}
	c.last = last
	return out
}
