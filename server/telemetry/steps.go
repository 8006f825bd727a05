package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tadpole-llm/tadpole/engine/runner"
)

// stepCollector exports the runners' per-phase timings (runner.Timings)
// as one histogram, tadpole_step_seconds{phase}: where the time of each
// decode step and each generated token goes (batch building, decode or
// prefill, sampling, detokenizing, hand-off to the request, delivery to
// its reader).
type stepCollector struct{}

var stepDesc = prometheus.NewDesc("tadpole_step_seconds",
	"time spent per decode step (phases batch, decode, prefill, step) and per generated token (sample, detokenize, handoff, deliver)",
	[]string{"phase"}, nil)

func (stepCollector) Describe(ch chan<- *prometheus.Desc) { ch <- stepDesc }

func (stepCollector) Collect(ch chan<- prometheus.Metric) {
	t := runner.Timings()
	for _, p := range runner.Phases() {
		h := t[p]
		buckets := make(map[float64]uint64, len(runner.TimingBounds))
		var cum uint64
		for i, b := range runner.TimingBounds {
			cum += h.Buckets[i]
			buckets[b] = cum
		}
		ch <- prometheus.MustNewConstHistogram(stepDesc, h.Count, h.Sum.Seconds(), buckets, p.String())
	}
}
