package main

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/sched"
)

// cacheFlags are the prompt cache's budgets (RAM, disk) and the
// speculative decoding's draft bound (issue 24).
type cacheFlags struct {
	ram, disk *string
	draftMax  *int
}

// Defaults: a quarter of the memory available at start-up, at most 8 GiB
// (llama-server's --cache-ram default), and 8 GiB of disk.
const (
	maxDefaultCacheRAM = 8 << 30
	defaultCacheDisk   = "8GiB"
)

func addCacheFlags(fs *pflag.FlagSet) *cacheFlags {
	return &cacheFlags{
		ram:  fs.String("cache-ram", env("TADPOLE_CACHE_RAM", "auto"), "host RAM for the KV state of prompts the slots gave up, restored when they return (auto: a quarter of the available memory, at most 8GiB; 0: off) (TADPOLE_CACHE_RAM)"),
		disk: fs.String("cache-disk", env("TADPOLE_CACHE_DISK", defaultCacheDisk), "disk, under the data directory (prompt-cache/), for prompt states past --cache-ram and the slots' at shutdown; they survive a restart (0: off) (TADPOLE_CACHE_DISK)"),
		draftMax: fs.Int("draft-max", envInt("TADPOLE_DRAFT_MAX", runner.DefaultDraftMax),
			"most tokens a generating request drafts per step by prompt lookup and verifies in the same decode (speculative decoding; the output is unchanged); 0: off (TADPOLE_DRAFT_MAX)"),
	}
}

// draft is the scheduler's DraftMax for --draft-max (0: off).
func (f *cacheFlags) draft() (int, error) {
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
func (f *cacheFlags) open(dataDir string) (*runner.PromptCache, error) {
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
