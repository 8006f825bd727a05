package gguf_test

import (
	"bytes"
	"testing"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// The generated test models (bigram, scripted, random llama of every
// shape, quantized) are valid.
func TestValidateGeneratedModels(t *testing.T) {
	type model struct {
		name    string
		kvs     []gguf.KV
		tensors []gguf.Tensor
	}
	kvs, tensors := testmodels.Bigram()
	models := []model{{"bigram", kvs, tensors}}
	kvs, tensors = testmodels.Script()
	models = append(models, model{"script", kvs, tensors})
	for _, s := range []testmodels.Shape{testmodels.Tiny, testmodels.Small} {
		for _, typ := range []gguf.TensorType{gguf.F32, gguf.F16, gguf.Q8_0, gguf.Q4_0} {
			kvs, tensors, err := testmodels.RandomLlama(s, typ, 1)
			if err != nil {
				t.Fatal(err)
			}
			models = append(models, model{"random " + typ.String(), kvs, tensors})
		}
	}
	for _, m := range models {
		var b bytes.Buffer
		if err := gguf.Write(&b, m.kvs, m.tensors); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Read(bytes.NewReader(b.Bytes()), int64(b.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Validate(); err != nil {
			t.Errorf("%s: %v", m.name, err)
		}
	}
}
