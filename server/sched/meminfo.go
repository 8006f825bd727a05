package sched

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// totalMemory is the machine's memory from /proc/meminfo (MemTotal), or
// 16 GiB when it cannot be read.
func totalMemory() uint64 {
	if n, ok := meminfo("MemTotal:"); ok {
		return n
	}
	return 16 << 30
}

// availableMemory is the memory the kernel could give a new allocation
// now without swapping (/proc/meminfo MemAvailable); ok is false when it
// cannot be read.
func availableMemory() (uint64, bool) {
	return meminfo("MemAvailable:")
}

// meminfo reads one /proc/meminfo line's value, in bytes.
func meminfo(field string) (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == field {
			if kb, err := strconv.ParseUint(fields[1], 10, 64); err == nil && kb <= 1<<53 {
				return kb << 10, true
			}
		}
	}
	return 0, false
}

// AvailableMemory is the host memory available now (MemAvailable), 0
// when it cannot be read: for sizing caches at start-up.
func AvailableMemory() uint64 {
	n, _ := availableMemory()
	return n
}
