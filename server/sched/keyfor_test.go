package sched

import (
	"testing"

	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// TestKeyForDefaultBatch checks that the default num_batch is keyed and
// estimated as the batch the runner uses (runner.DefaultBatch, its one
// owner), and that an explicit PARAMETER num_batch of that size shares
// the instance.
func TestKeyForDefaultBatch(t *testing.T) {
	def := KeyFor("m.gguf", ollamaapi.DefaultOptions())
	if def.NumBatch != runner.DefaultBatch || batchSize(def) != runner.DefaultBatch {
		t.Errorf("default options: key num_batch %d, estimated batch %d; the runner uses %d", def.NumBatch, batchSize(def), runner.DefaultBatch)
	}
	o := ollamaapi.DefaultOptions()
	o.NumBatch = runner.DefaultBatch
	if KeyFor("m.gguf", o) != def {
		t.Errorf("num_batch %d keys %+v, the default %+v", runner.DefaultBatch, KeyFor("m.gguf", o), def)
	}
	o.NumBatch = 64
	if k := KeyFor("m.gguf", o); k.NumBatch != 64 || batchSize(k) != 64 {
		t.Errorf("num_batch 64 keys %+v, estimated batch %d", k, batchSize(k))
	}
}
