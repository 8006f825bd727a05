package telemetry

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tadpole-llm/tadpole/engine"
)

// TestNativeHeapCollector: /metrics carries C's malloc figures as
// tadpole_native_heap_bytes{state="in_use"|"held"}, held at least in use.
func TestNativeHeapCollector(t *testing.T) {
	if _, _, ok := engine.NativeHeap(); !ok {
		t.Skip("the C library gives no malloc figures (not glibc 2.33+)")
	}
	r := prometheus.NewRegistry()
	r.MustRegister(nativeHeapCollector{})
	fams, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "tadpole_native_heap_bytes" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" {
					got[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	if len(got) != 2 || got["in_use"] <= 0 || got["held"] < got["in_use"] {
		t.Fatalf("tadpole_native_heap_bytes: %v", got)
	}
}
