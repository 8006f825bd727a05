package main

import (
	"log/slog"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/gpu"
)

// logDevices logs ggml's devices (where layers can actually go) and
// NVML's GPUs (placement), warns when the two disagree, and logs the
// engine's build. engine.Init must have run.
func logDevices() {
	ggmlGPUs := 0
	for _, d := range engine.Devices() {
		slog.Info("device", "name", d.Name, "description", d.Description, "type", d.Type,
			"free_mib", d.FreeBytes>>20, "total_mib", d.TotalBytes>>20)
		if d.Type == "gpu" {
			ggmlGPUs++
		}
	}
	// Cross-check NVML's inventory (placement) with ggml's devices (where
	// layers can actually go).
	nvmlGPUs, err := gpu.NVML().Devices()
	if err != nil {
		slog.Warn("NVML inventory failed", "error", err)
	}
	for _, d := range nvmlGPUs {
		slog.Info("gpu", "index", d.Index, "name", d.Name, "uuid", d.UUID, "free_mib", d.FreeBytes>>20,
			"total_mib", d.TotalBytes>>20, "driver", d.Driver, "cuda", d.CUDA)
	}
	switch {
	case len(nvmlGPUs) > 0 && ggmlGPUs == 0:
		slog.Warn("NVML sees GPUs but no GPU backend is loaded: models run on the CPU (see --backends)", "nvml_gpus", len(nvmlGPUs))
	case ggmlGPUs > 0 && len(nvmlGPUs) != ggmlGPUs:
		slog.Warn("NVML and ggml disagree on the number of GPUs", "nvml", len(nvmlGPUs), "ggml", ggmlGPUs)
	}
	slog.Info("engine", "version", engine.Version, "cpu_flags", engine.BuildFlags, "system", engine.SystemInfo())
}
