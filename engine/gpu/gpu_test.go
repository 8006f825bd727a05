package gpu

import "testing"

// On a machine without an NVIDIA driver, NVML is absent: the inventory is
// empty and nothing fails. On a GPU host it lists real devices.
func TestNVMLInventory(t *testing.T) {
	inv := NVML()
	devs, err := inv.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if !inv.Available() && len(devs) != 0 {
		t.Fatalf("no NVML but %d devices", len(devs))
	}
	for _, d := range devs {
		if d.Name == "" || d.TotalBytes == 0 || d.FreeBytes > d.TotalBytes {
			t.Errorf("device %+v", d)
		}
		t.Logf("GPU %d: %s %s, %d/%d MiB free, %d%%, %d°C, %.0f W, driver %s, CUDA %s",
			d.Index, d.Name, d.UUID, d.FreeBytes>>20, d.TotalBytes>>20, d.UtilizationPct, d.TemperatureC, d.PowerWatts, d.Driver, d.CUDA)
	}
	if NVML() != inv {
		t.Fatal("NVML is initialised more than once")
	}
}

func TestFake(t *testing.T) {
	f := &Fake{List: []Device{{Index: 0, Name: "A", TotalBytes: 24 << 30, FreeBytes: 24 << 30}}}
	f.SetFree(0, 1<<30)
	d, _ := f.Devices()
	if d[0].FreeBytes != 1<<30 {
		t.Fatal(d)
	}
	d[0].FreeBytes = 5 // a copy
	if d2, _ := f.Devices(); d2[0].FreeBytes != 1<<30 {
		t.Fatal("Devices returned the fake's own slice")
	}
}
