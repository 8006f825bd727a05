package main

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// decodeFlags are the prompt cache's budgets (RAM, disk) and the
// speculative decoding's draft bound (issue 24).
type decodeFlags struct {
	ram, disk *string
	draftMax  *int
	drafts    *[]string
	swaFull   *bool
}

// Defaults: a quarter of the memory available at start-up, at most 8 GiB
// (llama-server's --cache-ram default), and 8 GiB of disk.
const (
	maxDefaultCacheRAM = 8 << 30
	defaultCacheDisk   = "8GiB"
)

func addDecodeFlags(fs *pflag.FlagSet) *decodeFlags {
	return &decodeFlags{
		ram:  fs.String("cache-ram", env("TADPOLE_CACHE_RAM", "auto"), "host RAM for the KV state of prompts the slots gave up, restored when they return (auto: a quarter of the available memory, at most 8GiB; 0: off) (TADPOLE_CACHE_RAM)"),
		disk: fs.String("cache-disk", env("TADPOLE_CACHE_DISK", defaultCacheDisk), "disk, under the data directory (prompt-cache/), for prompt states past --cache-ram and the slots' at shutdown; they survive a restart (0: off) (TADPOLE_CACHE_DISK)"),
		draftMax: fs.Int("draft-max", envInt("TADPOLE_DRAFT_MAX", runner.DefaultDraftMax),
			"most tokens a generating request drafts per step (by its draft model, else by prompt lookup) and verifies in the same decode (speculative decoding; the output is unchanged); 0: off (TADPOLE_DRAFT_MAX)"),
		swaFull: fs.Bool("swa-full", envBool("TADPOLE_SWA_FULL"),
			"full-size caches for sliding-window layers (Gemma 2/3/4, …), as llama-server's --swa-full: the memory of a model without a window, and speculative decoding on those models, which is off without it (TADPOLE_SWA_FULL)"),
		drafts: fs.StringArray("draft", splitList(env("TADPOLE_DRAFT", "")),
			"MODEL=DRAFT: load the model DRAFT (same vocabulary) beside MODEL to draft its tokens instead of prompt lookup (overrides its Modelfile DRAFT); repeatable, or comma-separated (TADPOLE_DRAFT)"),
	}
}

// draftModels is --draft as canonical model name → draft model name.
func (f *decodeFlags) draftModels() (map[string]string, error) {
	out := map[string]string{}
	for _, a := range *f.drafts {
		for _, pair := range splitList(a) {
			model, draft, ok := strings.Cut(pair, "=")
			mn, err1 := models.ParseName(model)
			dn, err2 := models.ParseName(draft)
			if !ok || err1 != nil || err2 != nil {
				return nil, fmt.Errorf("--draft: want MODEL=DRAFT, two model names, not %q", pair)
			}
			if mn.String() == dn.String() {
				return nil, fmt.Errorf("--draft %s: a model cannot draft for itself", pair)
			}
			out[mn.String()] = dn.String()
		}
	}
	return out, nil
}

// draft is the scheduler's DraftMax for --draft-max (0: off).
func (f *decodeFlags) draft() (int, error) {
	n := *f.draftMax
	if n < 0 || n > runner.MaxDraft {
		return 0, fmt.Errorf("--draft-max must be 0 to %d, not %d", runner.MaxDraft, n)
	}
	if n == 0 {
		return -1, nil
	}
	return n, nil
}

// open makes the prompt cache (nil when both budgets are 0), its files in
// dataDir/prompt-cache.
func (f *decodeFlags) open(dataDir string) (*runner.PromptCache, error) {
	var ram int64
	if *f.ram == "auto" {
		ram = int64(min(sched.AvailableMemory()/4, maxDefaultCacheRAM))
	} else {
		var err error
		if ram, err = parseSize("--cache-ram", *f.ram); err != nil {
			return nil, err
		}
	}
	disk, err := parseSize("--cache-disk", *f.disk)
	if err != nil {
		return nil, err
	}
	if ram < 0 || disk < 0 {
		return nil, fmt.Errorf("--cache-ram and --cache-disk cannot be negative")
	}
	if ram == 0 && disk == 0 {
		return nil, nil
	}
	dir := filepath.Join(dataDir, "prompt-cache")
	slog.Info("prompt cache", "ram_bytes", ram, "disk_bytes", disk, "dir", dir)
	return runner.NewPromptCache(ram, dir, disk), nil
}
