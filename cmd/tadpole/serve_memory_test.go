package main

import (
	"strings"
	"testing"
)

// --memory-limit: auto takes 3/4 of the least known bound (machine,
// cgroup, address space); a size is taken as given; GOMEMLIMIT wins; a
// bad value is refused naming it.
func TestMemoryLimit(t *testing.T) {
	const gib = int64(1) << 30
	for _, tc := range []struct {
		flag, env string
		bounds    []int64
		want      int64
	}{
		{"auto", "", []int64{16 * gib, 0, 0}, 12 * gib},
		{"auto", "", []int64{16 * gib, 8 * gib, 0}, 6 * gib},
		{"auto", "", []int64{16 * gib, 8 * gib, 4 * gib}, 3 * gib},
		{"auto", "", []int64{0, 0, 0}, 0},
		{"2GiB", "", []int64{16 * gib}, 2 * gib},
		{"off", "", []int64{16 * gib}, 0},
		{"0", "", []int64{16 * gib}, 0},
		{"2GiB", "1GiB", []int64{16 * gib}, 0},
	} {
		got, why, err := memoryLimit(tc.flag, tc.env, tc.bounds)
		if err != nil || got != tc.want {
			t.Errorf("memoryLimit(%q, GOMEMLIMIT=%q, %v) = %d (%s), %v; want %d", tc.flag, tc.env, tc.bounds, got, why, err, tc.want)
		}
	}
	for _, bad := range []string{"lots", "-1GiB"} {
		if _, _, err := memoryLimit(bad, "", nil); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("memoryLimit(%q): %v", bad, err)
		}
	}
	// This machine's bounds are read (the test runs on Linux).
	if memTotal() <= 0 {
		t.Error("MemTotal not read from /proc/meminfo")
	}
}
