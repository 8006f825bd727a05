package runner

import (
	"sync/atomic"
	"time"
)

// Phase is one part of the work the decode loop does per step or per
// generated token. Phases are timed in every runner and summed over all of
// them (Timings), so /metrics and the benchmark can show where each
// millisecond of a token goes.
type Phase int

const (
	// PhaseBatch builds a step's batch: cancellations, context shifts,
	// one token per generating slot and chunks of waiting prompts.
	PhaseBatch Phase = iota
	// PhaseDecode is llama_decode of a step with generated tokens only.
	PhaseDecode
	// PhasePrefill is llama_decode of a step that holds prompt tokens.
	PhasePrefill
	// PhaseSample picks one slot's next token from its logits (and its
	// log-probabilities when asked for): per generated token.
	PhaseSample
	// PhaseDetokenize turns one token into text and matches stop strings:
	// per generated token.
	PhaseDetokenize
	// PhaseHandoff queues one token's event for its request: per event.
	PhaseHandoff
	// PhaseDeliver is how long an event waited between the loop queuing
	// it and the request's reader taking it (the reader's scheduling
	// and, for a slow client, its writes): per event.
	PhaseDeliver
	// PhaseStep is a whole step, from building the batch to the last
	// event queued.
	PhaseStep
	numPhases
)

var phaseNames = [numPhases]string{"batch", "decode", "prefill", "sample", "detokenize", "handoff", "deliver", "step"}

func (p Phase) String() string {
	if p < 0 || p >= numPhases {
		return "unknown"
	}
	return phaseNames[p]
}

// Phases lists every phase in loop order.
func Phases() []Phase {
	out := make([]Phase, numPhases)
	for i := range out {
		out[i] = Phase(i)
	}
	return out
}

// TimingBounds are the upper bounds (seconds) of the timing histograms'
// buckets: 1 µs to 10 s, three per decade.
var TimingBounds = []float64{
	1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4,
	1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// histogram counts durations in TimingBounds' buckets without locks; the
// loop records and a scrape reads concurrently.
type histogram struct {
	counts [23]atomic.Uint64 // len(TimingBounds) buckets and +Inf
	sumNs  atomic.Int64
	count  atomic.Uint64
}

func (h *histogram) record(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(TimingBounds) && s > TimingBounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(int64(d))
	h.count.Add(1)
}

// Histogram is a snapshot of one phase's durations.
type Histogram struct {
	Count uint64
	Sum   time.Duration
	// Buckets[i] counts durations ≤ TimingBounds[i] and above the bound
	// before it; the last element counts those above every bound.
	Buckets []uint64
}

var timings [numPhases]histogram

func record(p Phase, d time.Duration) { timings[p].record(d) }

// Timings is a snapshot of every phase's histogram, summed over all
// runners since the process started.
func Timings() map[Phase]Histogram {
	out := make(map[Phase]Histogram, numPhases)
	for p := range numPhases {
		h := &timings[p]
		s := Histogram{Count: h.count.Load(), Sum: time.Duration(h.sumNs.Load()), Buckets: make([]uint64, len(TimingBounds)+1)}
		for i := range s.Buckets {
			s.Buckets[i] = h.counts[i].Load()
		}
		out[p] = s
	}
	return out
}
