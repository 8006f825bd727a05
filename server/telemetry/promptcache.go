package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
)

// promptCacheCollector exports the prompt cache's sizes and counters
// (runner.PromptCache: the KV state of prompts the slots gave up), by
// tier (ram, disk).
type promptCacheCollector struct{ cache *runner.PromptCache }

var (
	pcBytes   = prometheus.NewDesc("tadpole_prompt_cache_bytes", "bytes of KV state the prompt cache holds, by tier", []string{"tier"}, nil)
	pcEntries = prometheus.NewDesc("tadpole_prompt_cache_entries", "prompts the prompt cache holds, by tier", []string{"tier"}, nil)
	pcHits    = prometheus.NewDesc("tadpole_prompt_cache_hits_total", "prompt prefixes restored from the prompt cache instead of prefilled, by tier", []string{"tier"}, nil)
	pcMisses  = prometheus.NewDesc("tadpole_prompt_cache_misses_total", "requests whose prompt the prompt cache had no longer prefix of than their slot (or whose restore failed)", nil, nil)
	pcRestore = prometheus.NewDesc("tadpole_prompt_cache_restore_seconds_total", "time spent restoring prefixes from the prompt cache, by tier", []string{"tier"}, nil)
	pcTokens  = prometheus.NewDesc("tadpole_prompt_cache_restored_tokens_total", "prompt tokens restored from the prompt cache (not prefilled)", nil, nil)
	pcSaves   = prometheus.NewDesc("tadpole_prompt_cache_saves_total", "sequence states saved to the prompt cache", nil, nil)
)

func (c promptCacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{pcBytes, pcEntries, pcHits, pcMisses, pcRestore, pcTokens, pcSaves} {
		ch <- d
	}
}

func (c promptCacheCollector) Collect(ch chan<- prometheus.Metric) {
	if c.cache == nil {
		return
	}
	s := c.cache.Stats()
	for _, t := range []struct {
		tier    string
		bytes   int64
		entries int
		hits    int64
		restore float64
	}{
		{"ram", s.RAMBytes, s.RAMEntries, s.RAMHits, s.RAMRestoreTime.Seconds()},
		{"disk", s.DiskBytes, s.DiskEntries, s.DiskHits, s.DiskRestoreTime.Seconds()},
	} {
		ch <- prometheus.MustNewConstMetric(pcBytes, prometheus.GaugeValue, float64(t.bytes), t.tier)
		ch <- prometheus.MustNewConstMetric(pcEntries, prometheus.GaugeValue, float64(t.entries), t.tier)
		ch <- prometheus.MustNewConstMetric(pcHits, prometheus.CounterValue, float64(t.hits), t.tier)
		ch <- prometheus.MustNewConstMetric(pcRestore, prometheus.CounterValue, t.restore, t.tier)
	}
	ch <- prometheus.MustNewConstMetric(pcMisses, prometheus.CounterValue, float64(s.Misses))
	ch <- prometheus.MustNewConstMetric(pcTokens, prometheus.CounterValue, float64(s.RestoredTokens))
	ch <- prometheus.MustNewConstMetric(pcSaves, prometheus.CounterValue, float64(s.Saves))
}

// nativeHeapCollector exports what C's malloc holds for llama.cpp and the
// C libraries (engine.NativeHeap): memory neither the Go runtime's figures
// nor the prompt cache's show, where a native leak would grow.
type nativeHeapCollector struct{}

var nativeHeap = prometheus.NewDesc("tadpole_native_heap_bytes", "bytes C's malloc holds for llama.cpp and the C libraries: in_use (allocated, not freed) and held (taken from the system)", []string{"state"}, nil)

func (nativeHeapCollector) Describe(ch chan<- *prometheus.Desc) { ch <- nativeHeap }

func (nativeHeapCollector) Collect(ch chan<- prometheus.Metric) {
	inUse, held, ok := engine.NativeHeap()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(nativeHeap, prometheus.GaugeValue, float64(inUse), "in_use")
	ch <- prometheus.MustNewConstMetric(nativeHeap, prometheus.GaugeValue, float64(held), "held")
}
