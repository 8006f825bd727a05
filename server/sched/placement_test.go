package sched

import (
	"errors"
	"testing"

	"github.com/tadpole-llm/tadpole/engine/gpu"
)

const gib = uint64(1) << 30

// synthetic is a model of layers equal blocks totalling about weights
// bytes, with kv bytes of cache.
func synthetic(layers int, weights, kv uint64) Estimate {
	e := Estimate{Layers: layers, LayerBytes: make([]uint64, layers), OutputBytes: weights / 50, InputBytes: weights / 50}
	for i := range e.LayerBytes {
		e.LayerBytes[i] = (weights - 2*weights/50) / uint64(layers)
	}
	e.KVBytesPerLayer = kv / uint64(layers)
	e.ComputeBytes = 512 << 20
	return e
}

func TestPlace(t *testing.T) {
	two := []gpu.Device{{Index: 0, Name: "A", TotalBytes: 24 * gib, FreeBytes: 24 * gib}, {Index: 1, Name: "B", TotalBytes: 24 * gib, FreeBytes: 23 * gib}}
	one := []gpu.Device{{Index: 0, Name: "A", TotalBytes: 24 * gib, FreeBytes: 24 * gib}}
	small, big := synthetic(32, 8*gib, gib), synthetic(60, 30*gib, 2*gib)
	for _, tc := range []struct {
		name      string
		e         Estimate
		gpus      []gpu.Device
		numGPU    int
		cpuFree   uint64
		gpusUsed  int
		layers    int // -1: all
		split     bool
		processor string
		err       bool
	}{
		{"full fit on the freest GPU", small, two, -1, 64 * gib, 1, -1, false, "100% GPU", false},
		{"split over two GPUs", big, two, -1, 64 * gib, 2, -1, true, "100% GPU", false},
		{"partial offload on one GPU", big, one, -1, 64 * gib, 1, 0, false, "", false},
		{"no GPUs: CPU", small, nil, -1, 64 * gib, 0, 0, false, "100% CPU", false},
		{"num_gpu 0 forces the CPU", small, two, 0, 64 * gib, 0, 0, false, "100% CPU", false},
		{"num_gpu 10", big, two, 10, 64 * gib, 1, 10, false, "", false},
		{"too large for RAM on CPU", big, nil, -1, 16 * gib, 0, 0, false, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Place(tc.e, tc.gpus, tc.numGPU, tc.cpuFree)
			if tc.err {
				if !errors.Is(err, ErrTooLarge) {
					t.Fatalf("error %v, want ErrTooLarge", err)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.GPUs) != tc.gpusUsed || (tc.split != (p.TensorSplit != nil)) {
				t.Fatalf("placement %+v", p)
			}
			switch {
			case tc.layers == -1 && p.GPULayers != tc.e.Layers+1:
				t.Fatalf("offloaded %d layers, want all %d", p.GPULayers, tc.e.Layers+1)
			case tc.layers > 0 && p.GPULayers != tc.layers:
				t.Fatalf("offloaded %d layers, want %d", p.GPULayers, tc.layers)
			}
			if tc.processor != "" && p.Processor() != tc.processor {
				t.Fatalf("processor %q, want %q", p.Processor(), tc.processor)
			}
			if tc.gpusUsed == 1 && p.GPUs[0] != 0 {
				t.Fatalf("used GPU %d, want the freest (0)", p.GPUs[0])
			}
			t.Logf("%s: %s, %d layers, %s", tc.name, p.Reason, p.GPULayers, p.Processor())
		})
	}
	// Partial offload fits the most layers that fit, no more.
	p, _ := Place(big, one, -1, 64*gib)
	if p.GPULayers <= 0 || p.GPULayers > big.Layers || big.GPUBytes(p.GPULayers) > 24*gib || big.GPUBytes(p.GPULayers+1) <= 24*gib {
		t.Fatalf("partial offload of %d layers (%d bytes)", p.GPULayers, big.GPUBytes(p.GPULayers))
	}
	// The split is proportional to free memory.
	p, _ = Place(big, two, -1, 64*gib)
	if p.TensorSplit[0] <= p.TensorSplit[1] || p.TensorSplit[0]+p.TensorSplit[1] < 0.999 {
		t.Fatalf("split %v", p.TensorSplit)
	}
}
