package registry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/registry/registrytest"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// A pulled model whose GGUF header llama.cpp cannot load (block_count
// 2^37) is refused before its manifest is written: the store does not
// list it, and a valid model from the same registry still pulls.
func TestPullRefusesInvalidGGUF(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	err := gguf.Rewrite(bad, testmodels.Testdata("stories260K.gguf"), func(kvs []gguf.KV) []gguf.KV {
		return gguf.SetKV(kvs, "llama.block_count", uint64(1)<<37)
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.New()
	defer reg.Close()
	reg.PublishModel("library/bad", "latest", data, "")
	publish(t, reg, "library/bigram", "latest")
	st := &models.Store{Dir: t.TempDir()}
	c := &Client{Insecure: true, Allow: []string{reg.Host()}}

	err = c.Pull(context.Background(), st, name(t, reg.Host()+"/library/bad"), nil)
	if !errors.Is(err, models.ErrInvalidModel) || !errors.Is(err, ErrRemote) || !strings.Contains(err.Error(), "llama.block_count is 137438953472") {
		t.Fatalf("pull of a broken model: %v", err)
	}
	if _, err := st.ReadManifest(name(t, reg.Host()+"/library/bad")); err == nil {
		t.Fatal("the broken model's manifest was written")
	}
	if err := c.Pull(context.Background(), st, name(t, reg.Host()+"/library/bigram"), nil); err != nil {
		t.Fatal(err)
	}
	list, err := st.List()
	if err != nil || len(list) != 1 || !strings.Contains(list[0].Name.String(), "bigram") {
		t.Fatalf("List = %v, %v; want only the bigram model", list, err)
	}
}
