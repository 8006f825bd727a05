package main

import (
	"bufio"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/labstack/gommon/bytes"
)

// The Go heap's soft limit (runtime/debug.SetMemoryLimit): as the heap
// nears it the collector runs harder, so garbage never doubles what a
// request holds alive, and the process stays below what the machine or
// its container grants for longer. It governs Go's heap only: llama.cpp's
// weights, KV caches and compute buffers are C allocations outside it,
// which is what the auto limit's headroom is for. A request that keeps
// more alive than the limit still ends the process (Go's "out of memory"
// cannot be caught): the in-flight file (server/flight) then names it at
// the next start.

// autoFraction is the share of the memory the process may use that the
// auto limit gives Go's heap.
const autoFraction = 0.75

// memoryLimit is the limit --memory-limit asks for, in bytes (0: none):
// "auto" is autoFraction of the smallest of the machine's memory, the
// cgroup's limit and the address-space limit (RLIMIT_AS); "0" or "off"
// none; else a size. GOMEMLIMIT, when set, wins (the runtime applied it
// at start-up); the flag's value is then ignored and 0 returned with a
// reason.
func memoryLimit(flag, gomemlimit string, bounds []int64) (int64, string, error) {
	if gomemlimit != "" {
		return 0, "GOMEMLIMIT is set", nil
	}
	switch strings.ToLower(strings.TrimSpace(flag)) {
	case "0", "off", "none":
		return 0, "off", nil
	case "auto", "":
		least := int64(math.MaxInt64)
		for _, b := range bounds {
			if b > 0 && b < least {
				least = b
			}
		}
		if least == math.MaxInt64 {
			return 0, "the machine's memory is unknown", nil
		}
		return int64(float64(least) * autoFraction), "auto", nil
	}
	n, err := bytes.Parse(flag)
	if err != nil || n <= 0 {
		return 0, "", fmt.Errorf("--memory-limit: want auto, off or a size such as 8GiB, not %q", flag)
	}
	return n, "flag", nil
}

// applyMemoryLimit sets the Go heap's limit --memory-limit asks for.
func applyMemoryLimit(flag string) error {
	limit, why, err := memoryLimit(flag, os.Getenv("GOMEMLIMIT"), []int64{memTotal(), cgroupLimit(), addressSpaceLimit()})
	if err != nil {
		return err
	}
	if limit == 0 {
		if cur := debug.SetMemoryLimit(-1); cur != math.MaxInt64 {
			slog.Info("Go heap limit", "limit", bytes.Format(cur), "why", why)
		} else {
			slog.Info("Go heap limit: none", "why", why)
		}
		return nil
	}
	debug.SetMemoryLimit(limit)
	slog.Info("Go heap limit", "limit", bytes.Format(limit), "why", why)
	return nil
}

// memTotal is the machine's memory (0: unknown).
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// cgroupLimit is the memory limit of the process's cgroup, v2 or v1 (0:
// none or unknown).
func cgroupLimit() int64 {
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(p); err == nil {
			n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			if err == nil && n > 0 && n < 1<<60 { // v1 says "no limit" with a huge number
				return n
			}
			return 0
		}
	}
	return 0
}

// addressSpaceLimit is the soft RLIMIT_AS (0: unlimited or unknown).
func addressSpaceLimit() int64 {
	f, err := os.Open("/proc/self/limits")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Max address space"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				n, _ := strconv.ParseInt(fields[0], 10, 64) // "unlimited": 0
				return n
			}
		}
	}
	return 0
}
