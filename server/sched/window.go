package sched

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"os"
	"syscall"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models/gguf"
)

// Context windows. A request's num_ctx is a window, not an instance key:
// it runs on any loaded instance of its model whose per-slot context is at
// least that large, with truncation and context shifts at its own window
// (runner.Request.NumCtx), so its answer is the one an instance loaded
// with exactly that context would give. A window larger than the model's
// default context loads an instance with the next power of two (at most
// the operator's MaxCtx), so clients choosing many different num_ctx
// values key at most log2(MaxCtx/default) instances per model, never one
// each.

// errNeverFits marks a model that does not fit even with nothing else
// loaded; Acquire refuses it without evicting anything.
var errNeverFits = errors.New("model too large for this machine")

// trainedCtx caches a model file's training context, keyed by path and
// checked against the file's version.
type trainedCtx struct {
	version string
	n       int
}

// contextLimits are the default window of a model file (the server's
// NumCtx capped at its training context, else min(4096, its training
// context)) and the largest window a request may ask for (MaxCtx, else
// the training context; never below the default, never past MaxCtxCap).
// An explicit MaxCtx past the training context is the operator's choice
// to run windows the model was not trained for.
func (s *Scheduler) contextLimits(path string) (def, maxCtx int, version string, err error) {
	trained, version, err := s.trainedContext(path)
	if err != nil {
		return 0, 0, "", err
	}
	switch {
	case s.cfg.NumCtx > 0 && !s.cfg.AutoCtx:
		// The server's --context-length is every model's default, but
		// never past what a model was trained for (as Ollama caps it):
		// a 2048-token embedding model under --context-length 65536
		// would otherwise allocate 65536 × slots of KV it can never use
		// (logged once per file by trainedContext).
		def = s.cfg.NumCtx
		if trained > 0 {
			def = min(def, trained)
		}
	case trained > 0:
		def = min(4096, trained)
	default:
		def = 2048
	}
	def = min(max(def, MinCtx), MaxCtxCap)
	maxCtx = s.cfg.MaxCtx
	if maxCtx <= 0 {
		maxCtx = trained
	}
	maxCtx = min(max(maxCtx, def), MaxCtxCap)
	// The whole KV cache (every slot) must fit llama.cpp's n_ctx.
	maxCtx = min(maxCtx, engine.MaxContext/max(s.cfg.Parallel, 1))
	return min(def, maxCtx), maxCtx, version, nil
}

func (s *Scheduler) trainedContext(path string) (int, string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, "", fmt.Errorf("load: %w", engine.ErrModelNotFound)
	}
	version := fileVersion(st)
	if v, ok := s.ctxs.Load(path); ok {
		if c := v.(trainedCtx); c.version == version {
			return c.n, version, nil
		}
	}
	f, err := gguf.Open(path)
	if err != nil {
		return 0, "", fmt.Errorf("load: %w", err)
	}
	n := 0
	if c := f.ContextLength(); c > 0 && c <= MaxCtxCap {
		n = int(c)
	} else if c > MaxCtxCap {
		n = MaxCtxCap
	}
	s.ctxs.Store(path, trainedCtx{version: version, n: n})
	if n > 0 && s.cfg.NumCtx > n && !s.cfg.AutoCtx {
		slog.Info("--context-length is past the model's trained context: its default window is capped to it",
			"path", path, "context_length", s.cfg.NumCtx, "trained", n)
	}
	return n, version, nil
}

// fileVersion identifies one version of a model file: its inode, size and
// modification time. A file replaced (renamed over) or rewritten in place
// gets another version, and so another instance (see dropStaleLocked).
func fileVersion(fi os.FileInfo) string {
	ino := uint64(0)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%d/%d/%d", ino, fi.Size(), fi.ModTime().UnixNano())
}

// dropStaleLocked unloads the idle instances of key's file that were
// loaded from an earlier version of it, and marks busy ones to unload
// when released. The new version is validated when it loads (a file
// truncated in place is refused there); the old one is never served to
// a new request.
func (s *Scheduler) dropStaleLocked(key Key) {
	for _, in := range s.loaded {
		if in.Key.Path != key.Path || in.Key.Version == key.Version {
			continue
		}
		if in.refs == 0 {
			slog.Info("model file changed on disk; unloading the instance of the old file", "model", in.Name, "path", in.Key.Path)
			s.unloadLocked(in)
		} else {
			in.stale = true
		}
	}
}

// instanceCtx is the per-slot context of the instance a window needs.
func instanceCtx(want, def, maxCtx int) int {
	if want <= def {
		return def
	}
	return min(1<<bits.Len(uint(want-1)), maxCtx)
}

// findLocked returns the loaded (or loading) instance that serves a
// window of want tokens with key's load options: the one with the
// smallest sufficient context.
func (s *Scheduler) findLocked(key Key, want int) *Instance {
	if in, ok := s.loaded[key]; ok {
		return in
	}
	var best *Instance
	for k, in := range s.loaded {
		k.NumCtx = key.NumCtx
		if k != key || in.NumCtx < want {
			continue
		}
		if best == nil || in.NumCtx < best.NumCtx {
			best = in
		}
	}
	return best
}

// mulInt multiplies non-negative ints, refusing an overflow.
func mulInt(a, b int) (int, error) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if a < 0 || b < 0 || hi != 0 || lo > math.MaxInt {
		return 0, fmt.Errorf("%d × %d overflows", a, b)
	}
	return int(lo), nil
}
