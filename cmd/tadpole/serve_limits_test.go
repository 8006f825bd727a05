package main

import (
	"strings"
	"testing"
)

// Serve flags the engine cannot take are refused at start-up, naming the
// flag and its range (issue 19: --threads 100000 made ggml start that many
// threads per graph).
func TestServeLimits(t *testing.T) {
	for _, tc := range []struct {
		parallel, numCtx, maxCtx, threads int
		flag                              string
	}{
		{0, 0, 0, 0, "--parallel"},
		{257, 0, 0, 0, "--parallel"},
		{4, 8, 0, 0, "--context-length"},
		{4, 1 << 21, 0, 0, "--context-length"},
		{4, 0, 1 << 30, 0, "--max-ctx"},
		{4, 0, 0, 100000, "--threads"},
		{4, 0, 0, -1, "--threads"},
	} {
		err := checkServeLimits(tc.parallel, tc.numCtx, tc.maxCtx, tc.threads)
		if err == nil || !strings.Contains(err.Error(), tc.flag) || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("%+v: %v", tc, err)
		}
	}
	if err := checkServeLimits(4, 4096, 32768, 2); err != nil {
		t.Fatal(err)
	}
}
