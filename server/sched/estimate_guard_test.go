package sched

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// EstimateMemory refuses an absurd block_count itself instead of
// allocating from it (2^37 once ended the process with "out of memory"),
// even for a file that never went through the store's validation.
func TestEstimateRefusesHugeBlockCount(t *testing.T) {
	for _, v := range []any{uint64(1) << 37, uint32(0xFFFFFFFF)} {
		p := filepath.Join(t.TempDir(), "bad.gguf")
		err := gguf.Rewrite(p, testmodels.Testdata("stories260K.gguf"), func(kvs []gguf.KV) []gguf.KV {
			return gguf.SetKV(kvs, "llama.block_count", v)
		})
		if err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := EstimateMemory(f, 256, "f16", 512); err == nil || !strings.Contains(err.Error(), "llama.block_count") {
			t.Errorf("block_count %v: err = %v", v, err)
		}
	}
}
