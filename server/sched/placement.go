package sched

import (
	"fmt"
	"sort"

	"github.com/tadpole-llm/tadpole/engine/gpu"
)

// Placement is where an instance goes: which GPUs, how many layers are
// offloaded and how the model is split.
type Placement struct {
	GPUs        []int     `json:"gpus,omitempty"` // device indexes
	GPULayers   int       `json:"gpu_layers"`     // 0: CPU only; Layers+1: everything
	TensorSplit []float32 `json:"tensor_split,omitempty"`
	// EstimatedBytes is the instance's whole estimate; EstimatedGPUBytes
	// the part placed on GPUs.
	EstimatedBytes    uint64 `json:"estimated_bytes"`
	EstimatedGPUBytes uint64 `json:"estimated_gpu_bytes"`
	Reason            string `json:"reason"`
	full              bool
}

// Processor is Ollama's PROCESSOR column: "100% GPU", "100% CPU" or
// "48%/52% CPU/GPU".
func (p Placement) Processor() string {
	if p.EstimatedGPUBytes == 0 || p.EstimatedBytes == 0 {
		return "100% CPU"
	}
	gpuPct := int(float64(p.EstimatedGPUBytes) / float64(p.EstimatedBytes) * 100)
	if p.full || gpuPct >= 100 {
		// The token embeddings stay on the CPU even when every layer is
		// offloaded; Ollama calls that 100% GPU too.
		return "100% GPU"
	}
	return fmt.Sprintf("%d%%/%d%% CPU/GPU", 100-gpuPct, gpuPct)
}

// ErrTooLarge is wrapped by Place when the model fits nowhere.
var ErrTooLarge = fmt.Errorf("model too large")

// Place decides where a model goes. numGPU is the request's num_gpu: -1
// decides automatically, 0 forces the CPU, n > 0 offloads n layers to the
// GPU with the most free memory. Automatic placement fits the whole model
// on the GPU with the most free memory; else splits it over every GPU by
// free memory; else offloads as many layers as fit on the best GPU; else
// runs on the CPU. cpuFree is the memory the CPU side may use; a model
// whose CPU part exceeds it is refused with the numbers.
func Place(e Estimate, gpus []gpu.Device, numGPU int, cpuFree uint64) (Placement, error) {
	p := Placement{EstimatedBytes: e.Total()}
	all := e.Layers + 1
	sorted := append([]gpu.Device(nil), gpus...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].FreeBytes > sorted[j].FreeBytes })
	switch {
	case numGPU == 0 || len(sorted) == 0:
		p.Reason = "cpu"
		if len(sorted) == 0 && numGPU != 0 {
			p.Reason = "cpu: no GPUs"
		}
	case numGPU > 0:
		p.GPULayers = min(numGPU, all)
		p.GPUs = []int{sorted[0].Index}
		p.Reason = fmt.Sprintf("num_gpu %d: on the GPU with the most free memory", numGPU)
	case e.GPUBytes(all) <= sorted[0].FreeBytes:
		p.GPULayers = all
		p.GPUs = []int{sorted[0].Index}
		p.Reason = "fits on one GPU"
	case len(sorted) > 1 && e.GPUBytes(all)+uint64(len(sorted)-1)*e.ComputeBytes <= sumFree(sorted):
		p.GPULayers = all
		total := float32(sumFree(sorted))
		maxIdx := 0
		for _, d := range sorted {
			p.GPUs = append(p.GPUs, d.Index)
			maxIdx = max(maxIdx, d.Index)
		}
		p.TensorSplit = make([]float32, maxIdx+1)
		for _, d := range sorted {
			p.TensorSplit[d.Index] = float32(d.FreeBytes) / total
		}
		p.Reason = "split over GPUs by free memory"
	default:
		n := 0
		for n < all && e.GPUBytes(n+1) <= sorted[0].FreeBytes {
			n++
		}
		if n > 0 {
			p.GPULayers = n
			p.GPUs = []int{sorted[0].Index}
			p.Reason = fmt.Sprintf("partial offload: %d of %d layers fit", n, all)
		} else {
			p.Reason = "cpu: no GPU has room for one layer"
		}
	}
	p.EstimatedGPUBytes = e.GPUBytes(p.GPULayers)
	p.full = p.GPULayers > e.Layers
	cpuPart := p.EstimatedBytes - min(p.EstimatedBytes, p.EstimatedGPUBytes)
	if cpuPart > cpuFree {
		return p, fmt.Errorf("%w: needs %s of memory beside the GPUs, %s available", ErrTooLarge, human(cpuPart), human(cpuFree))
	}
	return p, nil
}

func sumFree(ds []gpu.Device) uint64 {
	var n uint64
	for _, d := range ds {
		n += d.FreeBytes
	}
	return n
}

// human formats bytes as MiB/GiB.
func human(b uint64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
