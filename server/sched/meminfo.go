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
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 16 << 30
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			if kb, err := strconv.ParseUint(fields[1], 10, 64); err == nil {
				return kb << 10
			}
		}
	}
	return 16 << 30
}
