package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/server"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/media"
)

// --max-images, --max-image-pixels and --max-image-decode-memory (and
// their TADPOLE_ variables) reach the server's config; values below 1,
// and pixels over the vision encoder's limit, are refused at start-up.
func TestMediaFlags(t *testing.T) {
	apply := func(args ...string) (server.Config, error) {
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		f := addAPIFlags(fs)
		if err := fs.Parse(append(args, "--data-dir", filepath.Join(t.TempDir(), "data"))); err != nil {
			t.Fatal(err)
		}
		cfg := server.Config{ModelsDir: t.TempDir()}
		err := f.apply(&cfg)
		if cfg.Jobs != nil {
			cfg.Jobs.Close()
		}
		return cfg, err
	}
	cfg, err := apply()
	if err != nil || cfg.MaxImages != infer.DefaultMaxImages || cfg.MaxImagePixels != media.DefaultMaxPixels || cfg.MaxImagePixels > media.MaxPixels ||
		cfg.MaxImageDecodeMemory != infer.DefaultMaxDecodeMemory {
		t.Errorf("defaults: %d %d %d %v", cfg.MaxImages, cfg.MaxImagePixels, cfg.MaxImageDecodeMemory, err)
	}
	cfg, err = apply("--max-images", "3", "--max-image-pixels", "1000000", "--max-image-decode-memory", "256MiB")
	if err != nil || cfg.MaxImages != 3 || cfg.MaxImagePixels != 1000000 || cfg.MaxImageDecodeMemory != 256<<20 {
		t.Errorf("flags: %d %d %d %v", cfg.MaxImages, cfg.MaxImagePixels, cfg.MaxImageDecodeMemory, err)
	}
	t.Setenv("TADPOLE_MAX_IMAGES", "5")
	t.Setenv("TADPOLE_MAX_IMAGE_PIXELS", "640000")
	if cfg, err = apply(); err != nil || cfg.MaxImages != 5 || cfg.MaxImagePixels != 640000 {
		t.Errorf("env: %d %d %v", cfg.MaxImages, cfg.MaxImagePixels, err)
	}
	for _, args := range [][]string{{"--max-images", "0"}, {"--max-images", "-1"}, {"--max-image-pixels", "0"},
		{"--max-image-pixels", "33554433"}, {"--max-image-decode-memory", "0"}, {"--max-image-decode-memory", "lots"}} {
		if _, err := apply(args...); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: %v", args, err)
		}
	}
}
