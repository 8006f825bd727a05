// Package gpu is Tadpole's GPU inventory: which GPUs the host has, their
// memory, utilization, temperature and power, read from NVIDIA's NVML
// (github.com/NVIDIA/go-nvml, loaded with dlopen). A host without NVML —
// no NVIDIA driver, a CPU-only machine — is a normal mode: the inventory
// is empty. Tests use Fake.
//
// The package only reads device state; placement decisions are the
// scheduler's (server/sched).
package gpu

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Device is one GPU's identity and live state.
type Device struct {
	Index          int     `json:"index"`
	Name           string  `json:"name"`
	UUID           string  `json:"uuid"`
	TotalBytes     uint64  `json:"total_bytes"`
	FreeBytes      uint64  `json:"free_bytes"`
	UtilizationPct int     `json:"utilization_pct"`
	TemperatureC   int     `json:"temperature_c"`
	PowerWatts     float64 `json:"power_watts"`
	Driver         string  `json:"driver_version"`
	CUDA           string  `json:"cuda_version"`
}

// Inventory lists the host's GPUs with their current state.
type Inventory interface {
	Devices() ([]Device, error)
}

// Fake is an inventory of made-up devices, for tests.
type Fake struct {
	mu   sync.Mutex
	List []Device
}

// Devices returns a copy of the fake devices.
func (f *Fake) Devices() ([]Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Device(nil), f.List...), nil
}

// SetFree changes a fake device's free memory.
func (f *Fake) SetFree(index int, free uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.List[index].FreeBytes = free
}

// NVMLInventory reads devices through NVML. The zero value is not usable;
// use NVML().
type NVMLInventory struct {
	lib nvml.Interface
	ok  bool
}

var (
	nvmlOnce sync.Once
	nvmlInv  *NVMLInventory
)

// NVML returns the process's NVML inventory, initialising NVML once. When
// the library or driver is missing it logs "no GPUs" once and the
// inventory is empty.
func NVML() *NVMLInventory {
	nvmlOnce.Do(func() {
		nvmlInv = &NVMLInventory{lib: nvml.New()}
		if ret := nvmlInv.lib.Init(); ret != nvml.SUCCESS {
			slog.Info("no GPUs: NVML is not available", "reason", nvml.ErrorString(ret))
			return
		}
		nvmlInv.ok = true
	})
	return nvmlInv
}

// Available reports whether NVML was initialised.
func (n *NVMLInventory) Available() bool { return n.ok }

// Devices reads every GPU's state now.
func (n *NVMLInventory) Devices() ([]Device, error) {
	if !n.ok {
		return nil, nil
	}
	count, ret := n.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml: device count: %s", nvml.ErrorString(ret))
	}
	driver, _ := n.lib.SystemGetDriverVersion()
	cuda := ""
	if v, ret := n.lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		cuda = fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
	}
	out := make([]Device, 0, count)
	for i := 0; i < count; i++ {
		d, ret := n.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml: device %d: %s", i, nvml.ErrorString(ret))
		}
		dev := Device{Index: i, Driver: driver, CUDA: cuda}
		dev.Name, _ = d.GetName()
		dev.UUID, _ = d.GetUUID()
		if mem, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			dev.TotalBytes, dev.FreeBytes = mem.Total, mem.Free
		}
		if u, ret := d.GetUtilizationRates(); ret == nvml.SUCCESS {
			dev.UtilizationPct = int(u.Gpu)
		}
		if t, ret := d.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
			dev.TemperatureC = int(t)
		}
		if p, ret := d.GetPowerUsage(); ret == nvml.SUCCESS {
			dev.PowerWatts = float64(p) / 1000
		}
		out = append(out, dev)
	}
	return out, nil
}
