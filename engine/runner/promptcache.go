package runner

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
)

// PromptCache keeps the KV state of prompts that left the slots, so that
// a returning conversation restores its prefix instead of prefilling it:
// in host RAM up to a byte budget, and past it (and when a runner closes)
// in files under a directory, with a budget of their own. Both tiers are
// least recently used first out. One cache serves every runner: an entry
// is keyed by its runner's CacheKey (the model's digest, the KV type and
// the per-sequence window: a state restores only into a context of the
// same shape) and matched token for token.
//
// A disk entry is one file, written to a temporary name and renamed, and
// checked when read (magic, key, sizes, SHA-256): a damaged, truncated or
// foreign file is removed and never restored. A directory that cannot be
// written (full, read-only) turns the disk tier off with a warning: the
// cache goes on in RAM, and no request fails for it.
type PromptCache struct {
	mu       sync.Mutex
	ramLimit int64
	ramUsed  int64
	ram      []*cacheEntry // oldest use first
	dir      string        // "" or failed: no disk tier
	disk     []*diskEntry  // oldest use first
	writing  []string      // paths being written
	writes   sync.WaitGroup
	diskUsed int64
	diskMax  int64
	stats    CacheStats
	// spare is a buffer a retired entry left, its pages faulted in, for
	// the next save to copy into instead of fresh memory. Under mu.
	spare *engine.StateBuffer
}

// keepSpare keeps b as the spare if it is larger than the one there is,
// and frees the other. Under c.mu.
func (c *PromptCache) keepSpare(b *engine.StateBuffer) {
	if c.spare == nil || b.Cap() > c.spare.Cap() {
		b, c.spare = c.spare, b
	}
	b.Free()
}

// CacheStats are a PromptCache's counters and sizes.
type CacheStats struct {
	RAMBytes, DiskBytes     int64
	RAMEntries, DiskEntries int
	RAMHits, DiskHits       int64
	Misses                  int64
	Saves, Evictions        int64
	RAMRestoreTime          time.Duration // total
	DiskRestoreTime         time.Duration
	RestoredTokens          int64
}

type cacheEntry struct {
	key    string
	tokens []engine.Token
	data   []byte
	// whole: a state that cannot be cut back (checkpoint.go), which
	// serves only prompts it is all a prefix of.
	whole bool
	// buf, when set, holds data outside Go's heap (a saved slot's state):
	// it is freed once the entry has left the RAM tier (dead) and nothing
	// reads it (refs: a restore under way, a disk write). Under c.mu.
	buf  *engine.StateBuffer
	refs int
	dead bool
}

// ramBytes is what e takes of the RAM budget: its state, or the pages of
// its buffer that hold one.
func (e *cacheEntry) ramBytes() int64 {
	if e.buf != nil {
		return int64(e.buf.Resident())
	}
	return int64(len(e.data))
}

// retire marks e as out of the RAM tier and, unless it is being read,
// gives up its buffer (kept as the spare when it is the larger, else
// freed). Under c.mu.
func (c *PromptCache) retire(e *cacheEntry) {
	e.dead = true
	if e.refs == 0 && e.buf != nil {
		c.keepSpare(e.buf)
		e.buf, e.data = nil, nil
	}
}

// release ends one reader of e. Under c.mu.
func (c *PromptCache) release(e *cacheEntry) {
	if e.refs--; e.refs == 0 && e.dead {
		c.retire(e)
	}
}

type diskEntry struct {
	key    string
	tokens []engine.Token
	path   string
	size   int64
}

// MinCachedPrompt is the fewest tokens worth an entry: shorter prefixes
// prefill faster than a state is copied.
const MinCachedPrompt = 64

// NewPromptCache makes a cache of ramBytes in RAM and, with dir set,
// diskBytes of files in dir (created if need be; the entries already
// there are indexed, the damaged ones removed). A zero budget turns its
// tier off.
func NewPromptCache(ramBytes int64, dir string, diskBytes int64) *PromptCache {
	c := &PromptCache{ramLimit: max(ramBytes, 0), diskMax: max(diskBytes, 0)}
	if dir != "" && diskBytes > 0 {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			slog.Warn("prompt cache: the disk tier is off (RAM only)", "dir", dir, "error", err)
		} else {
			c.dir = dir
			c.index()
		}
	}
	return c
}

// Stats are the cache's counters now.
func (c *PromptCache) Stats() CacheStats {
	if c == nil {
		return CacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.RAMBytes, s.DiskBytes = c.ramUsed, c.diskUsed
	s.RAMEntries, s.DiskEntries = len(c.ram), len(c.disk)
	return s
}

// prefetched is a disk entry a request read before it queued (see
// prefetch), with what reading it took.
type prefetched struct {
	entry *cacheEntry
	disk  *diskEntry
	took  time.Duration
}

// prefetch runs in the caller's goroutine before a request queues: when
// the disk tier holds a longer prefix of prompt (at least min tokens)
// than the RAM tier, it reads and checks that file now and promotes it
// to the RAM tier, so that the runner's loop, which decodes for every
// slot, never waits on a disk (a slow disk, or a file planted in the
// cache, stalls only the request that asked for it). The request keeps
// the entry until a slot takes it, so that it is not lost when the RAM
// tier is small (or off) and evicts it first. A file that fails its
// checks is removed and the request prefills.
func (c *PromptCache) prefetch(key string, prompt []engine.Token, min int, whole bool) *prefetched {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	ram := 0
	for _, e := range c.ram {
		if e.key == key {
			if k := commonPrefix(e.tokens, prompt); !whole || k == len(e.tokens) {
				ram = max(ram, k)
			}
		}
	}
	var best *diskEntry
	n := max(ram+1, min)
	for _, e := range c.disk {
		if e.key == key {
			if k := commonPrefix(e.tokens, prompt); k >= n && (!whole || k == len(e.tokens)) {
				n, best = k+1, e
			}
		}
	}
	if best == nil {
		c.mu.Unlock()
		return nil
	}
	c.touchDisk(best)
	c.mu.Unlock()
	t0 := time.Now()
	data, err := readEntry(best.path, best.key, best.size)
	if err != nil {
		slog.Warn("prompt cache: a disk entry could not be read; removed", "file", best.path, "error", err)
		c.dropDisk(best)
		return nil
	}
	e := &cacheEntry{key: best.key, tokens: best.tokens, data: data, whole: whole}
	c.put(e, false) // promoted
	return &prefetched{entry: e, disk: best, took: time.Since(t0)}
}

// lookup finds the entry of key sharing the longest prefix with prompt
// (at least min tokens; with whole, entries all of which are a prefix)
// in the RAM tier or pre (the request's prefetched disk entry): its tokens and a function that loads its state into seq
// of ctx, or n 0. The disk tier is not read here: lookup runs on the
// runner's loop.
func (c *PromptCache) lookup(key string, prompt []engine.Token, min int, pre *prefetched, whole bool) (n int, tokens []engine.Token, load func(ctx *engine.Context, seq int) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best *cacheEntry
	// whole: the state cannot be cut back (checkpoint.go), so only an
	// entry that is all a prefix of the prompt serves.
	usable := func(e *cacheEntry) int {
		k := commonPrefix(e.tokens, prompt)
		if whole && k < len(e.tokens) {
			return 0
		}
		return k
	}
	for _, e := range c.ram {
		if e.key == key {
			if k := usable(e); k > n {
				n, best = k, e
			}
		}
	}
	fromDisk := false
	if pre != nil && pre.entry.key == key {
		if k := usable(pre.entry); k > n || k == n && k > 0 && best == pre.entry {
			n, best, fromDisk = k, pre.entry, true
		}
	}
	if n < min {
		c.stats.Misses++
		return 0, nil, nil
	}
	if !fromDisk {
		c.touchRAM(best)
	}
	best.refs++ // until load has copied it (another runner may retire it)
	return n, best.tokens, func(ctx *engine.Context, seq int) error {
		t0 := time.Now()
		err := ctx.SetSeqState(seq, best.data)
		took := time.Since(t0)
		if fromDisk {
			took += pre.took
		}
		c.restored(fromDisk, n, took, err)
		if err != nil {
			c.drop(best)
			if fromDisk {
				slog.Warn("prompt cache: a disk entry could not be restored; removed", "file", pre.disk.path, "error", err)
				c.dropDisk(pre.disk)
			}
		}
		c.mu.Lock()
		c.release(best)
		c.mu.Unlock()
		return err
	}
}

func (c *PromptCache) restored(disk bool, n int, took time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.stats.Misses++
		return
	}
	c.stats.RestoredTokens += int64(n)
	if disk {
		c.stats.DiskHits++
		c.stats.DiskRestoreTime += took
	} else {
		c.stats.RAMHits++
		c.stats.RAMRestoreTime += took
	}
}

// save stores the state of tokens (the sequence seq of ctx holds exactly
// them) under key, unless an entry already holds a longer prefix of them.
func (c *PromptCache) save(key string, ctx *engine.Context, seq int, tokens []engine.Token, whole bool) {
	c.mu.Lock()
	for _, e := range c.ram {
		if e.key == key && len(e.tokens) >= len(tokens) && commonPrefix(e.tokens, tokens) == len(tokens) {
			c.touchRAM(e)
			c.mu.Unlock()
			return
		}
	}
	spare := c.spare
	c.spare = nil
	c.mu.Unlock()
	buf, err := ctx.SeqStateBuffer(seq, spare)
	c.mu.Lock()
	defer c.mu.Unlock()
	if spare != nil && buf != spare {
		c.keepSpare(spare) // too small for this state, or the copy failed
	}
	if err != nil {
		slog.Warn("prompt cache: could not copy a sequence's state", "error", err)
		return
	}
	c.stats.Saves++
	c.put(&cacheEntry{key: key, tokens: append([]engine.Token(nil), tokens...), data: buf.Bytes(), buf: buf, whole: whole}, true)
}

// put adds e to the RAM tier, dropping the entries it supersedes, then
// moves the oldest entries past the budget to disk. Under c.mu.
//
// e supersedes an entry that it holds all of but fewer than
// MinCachedPrompt tokens at the end (and at least that many at the
// start): the entry a conversation's turn was restored from, whose
// answer the client did not send back token for token (or at all).
// Keeping both would cost a whole state for a short tail, and the RAM
// tier would grow by a state per turn; dropping it costs at most that
// tail's prefill, and its buffer takes the next save without fresh
// pages.
func (c *PromptCache) put(e *cacheEntry, locked bool) {
	if !locked {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	kept := c.ram[:0]
	for _, o := range c.ram {
		k := commonPrefix(o.tokens, e.tokens)
		if e.whole && len(o.tokens) != len(e.tokens) {
			// o serves prompts e cannot (e cannot be cut back to o's
			// tokens: checkpoint.go): it is not superseded.
			k = 0
		}
		if o.key == e.key && k >= MinCachedPrompt && len(o.tokens)-k < MinCachedPrompt {
			c.ramUsed -= o.ramBytes()
			c.retire(o)
			continue
		}
		kept = append(kept, o)
	}
	c.ram = append(kept, e)
	c.ramUsed += e.ramBytes()
	for c.ramUsed > c.ramLimit && len(c.ram) > 0 {
		old := c.ram[0]
		c.ram = c.ram[1:]
		c.ramUsed -= old.ramBytes()
		c.stats.Evictions++
		c.spill(old)
		c.retire(old)
	}
}

func (c *PromptCache) touchRAM(e *cacheEntry) {
	for i, o := range c.ram {
		if o == e {
			c.ram = append(append(c.ram[:i:i], c.ram[i+1:]...), e)
			return
		}
	}
}

func (c *PromptCache) touchDisk(e *diskEntry) {
	for i, o := range c.disk {
		if o == e {
			c.disk = append(append(c.disk[:i:i], c.disk[i+1:]...), e)
			now := time.Now()
			os.Chtimes(e.path, now, now) // the order survives a restart
			return
		}
	}
}

func (c *PromptCache) drop(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, o := range c.ram {
		if o == e {
			c.ram = append(c.ram[:i:i], c.ram[i+1:]...)
			c.ramUsed -= e.ramBytes()
			c.retire(e)
			return
		}
	}
}

func (c *PromptCache) dropDisk(e *diskEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeDisk(e)
}

func (c *PromptCache) removeDisk(e *diskEntry) {
	for i, o := range c.disk {
		if o == e {
			c.disk = append(c.disk[:i:i], c.disk[i+1:]...)
			c.diskUsed -= e.size
			break
		}
	}
	os.Remove(e.path)
}

// Flush writes every RAM entry to the disk tier (a stopping server), so
// they survive a restart, and waits for the writes.
func (c *PromptCache) Flush() {
	if c == nil {
		return
	}
	c.mu.Lock()
	for _, e := range c.ram {
		c.spill(e)
	}
	c.mu.Unlock()
	c.Wait()
}

// persist saves the sequence seq of ctx holding tokens straight to disk
// (a runner closing).
func (c *PromptCache) persist(key string, ctx *engine.Context, seq int, tokens []engine.Token) {
	c.mu.Lock()
	off := c.dir == ""
	c.mu.Unlock()
	if off {
		return
	}
	data, err := ctx.SeqState(seq)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spill(&cacheEntry{key: key, tokens: tokens, data: data})
}

// spill writes e to the disk tier, if there is one and e fits its
// budget, evicting the oldest files past it. Under c.mu.
func (c *PromptCache) spill(e *cacheEntry) {
	if c.dir == "" {
		return
	}
	size := entrySize(e)
	if size > c.diskMax {
		return
	}
	name := entryName(e.key, e.tokens)
	path := filepath.Join(c.dir, name)
	for _, o := range c.disk {
		if o.path == path {
			return // already there
		}
	}
	for _, p := range c.writing {
		if p == path {
			return
		}
	}
	// Written beside the loop: a state is megabytes, and the loop must not
	// wait for a disk.
	c.writing = append(c.writing, path)
	c.writes.Add(1)
	e.refs++ // the write reads e.data
	go func() {
		defer c.writes.Done()
		err := writeEntry(path, e)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.release(e)
		for i, p := range c.writing {
			if p == path {
				c.writing = append(c.writing[:i:i], c.writing[i+1:]...)
				break
			}
		}
		if err != nil {
			if c.dir != "" {
				slog.Warn("prompt cache: the disk tier is off (RAM only): a write failed", "dir", c.dir, "error", err)
			}
			c.dir = ""
			return
		}
		if c.dir == "" {
			os.Remove(path)
			return
		}
		c.disk = append(c.disk, &diskEntry{key: e.key, tokens: e.tokens, path: path, size: size})
		c.diskUsed += size
		for c.diskUsed > c.diskMax && len(c.disk) > 0 {
			c.removeDisk(c.disk[0])
		}
	}()
}

// Wait waits for the disk writes under way.
func (c *PromptCache) Wait() { c.writes.Wait() }

// The file of an entry: magic, then little-endian the engine's state
// version's length and bytes (engine.StateVersion), the key's length and
// bytes, the token count and tokens (int32), the state's length and
// bytes, and the SHA-256 of all that. A file of another engine (another
// state version, or the first format's magic, written by the engine
// before llama.cpp v0.5.0) is removed, never restored.
var (
	entryMagic    = []byte("TPKVSEQ2")
	oldEntryMagic = []byte("TPKVSEQ1")
	stateVersion  = engine.StateVersion()
)

const entryExt = ".kv"

func entryName(key string, tokens []engine.Token) string {
	h := sha256.New()
	h.Write([]byte(key))
	binary.Write(h, binary.LittleEndian, tokens)
	return hex.EncodeToString(h.Sum(nil)[:16]) + entryExt
}

func entrySize(e *cacheEntry) int64 {
	return int64(len(entryMagic)+4+len(stateVersion)+4+len(e.key)+4+4*len(e.tokens)+8+len(e.data)) + sha256.Size
}

func writeEntry(path string, e *cacheEntry) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(tmp, h), 1<<20)
	w.Write(entryMagic)
	binary.Write(w, binary.LittleEndian, uint32(len(stateVersion)))
	w.WriteString(stateVersion)
	binary.Write(w, binary.LittleEndian, uint32(len(e.key)))
	w.WriteString(e.key)
	binary.Write(w, binary.LittleEndian, uint32(len(e.tokens)))
	binary.Write(w, binary.LittleEndian, e.tokens)
	binary.Write(w, binary.LittleEndian, uint64(len(e.data)))
	w.Write(e.data)
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(h.Sum(nil)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Bounds of a disk entry's header, checked before anything is allocated.
const (
	maxKeyLen      = 4096
	maxEntryTokens = 1 << 24
)

var (
	errBadEntry    = errors.New("not a prompt cache entry, or damaged")
	errOtherEngine = errors.New("written by another engine version")
)

// readHeader reads an entry's key and tokens, checking the sizes against
// the file's.
func readHeader(r io.Reader, fileSize int64) (key string, tokens []engine.Token, dataLen uint64, err error) {
	magic := make([]byte, len(entryMagic))
	if _, err = io.ReadFull(r, magic); err != nil {
		return "", nil, 0, errBadEntry
	}
	if bytes.Equal(magic, oldEntryMagic) {
		return "", nil, 0, fmt.Errorf("%w (the engine before llama.cpp v0.5.0; this one is %s)", errOtherEngine, stateVersion)
	}
	if !bytes.Equal(magic, entryMagic) {
		return "", nil, 0, errBadEntry
	}
	var n uint32
	if err = binary.Read(r, binary.LittleEndian, &n); err != nil || n > maxKeyLen {
		return "", nil, 0, errBadEntry
	}
	vb := make([]byte, n)
	if _, err = io.ReadFull(r, vb); err != nil {
		return "", nil, 0, errBadEntry
	}
	if string(vb) != stateVersion {
		return "", nil, 0, fmt.Errorf("%w (%q; this one is %s)", errOtherEngine, vb, stateVersion)
	}
	if err = binary.Read(r, binary.LittleEndian, &n); err != nil || n > maxKeyLen {
		return "", nil, 0, errBadEntry
	}
	kb := make([]byte, n)
	if _, err = io.ReadFull(r, kb); err != nil {
		return "", nil, 0, errBadEntry
	}
	if err = binary.Read(r, binary.LittleEndian, &n); err != nil || n > maxEntryTokens {
		return "", nil, 0, errBadEntry
	}
	tokens = make([]engine.Token, n)
	if err = binary.Read(r, binary.LittleEndian, tokens); err != nil {
		return "", nil, 0, errBadEntry
	}
	if err = binary.Read(r, binary.LittleEndian, &dataLen); err != nil {
		return "", nil, 0, errBadEntry
	}
	head := int64(len(entryMagic)+4+len(vb)+4+len(kb)+4) + 4*int64(len(tokens)) + 8
	if dataLen == 0 || dataLen > uint64(fileSize) || head+int64(dataLen)+sha256.Size != fileSize {
		return "", nil, 0, errBadEntry
	}
	return string(kb), tokens, dataLen, nil
}

// readEntry reads and checks a whole entry of key, which was size bytes
// when it was written or indexed, returning its state. The file is
// checked before it is read: opened without following a symbolic link
// and without blocking (O_NONBLOCK: a FIFO planted in its place would
// block open and read forever, on the decode loop), it must be a regular
// file of exactly size bytes (a link to /dev/zero, or a file grown since,
// is refused rather than read without end).
func readEntry(path, key string, size int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file (%v)", errBadEntry, fi.Mode().Type())
	}
	if fi.Size() != size {
		return nil, fmt.Errorf("%w: %d bytes, %d when written", errBadEntry, fi.Size(), size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadEntry, err)
	}
	if len(b) < sha256.Size {
		return nil, errBadEntry
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadEntry)
	}
	k, _, dataLen, err := readHeader(bytes.NewReader(body), int64(len(b)))
	if err != nil {
		return nil, err
	}
	if k != key {
		return nil, fmt.Errorf("%w: another model's", errBadEntry)
	}
	return body[len(body)-int(dataLen):], nil
}

// index lists the entries in the directory, oldest use first, removing
// the files that are not entries (a damaged header, a temporary file a
// crash left) and the oldest past the budget.
func (c *PromptCache) index() {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		slog.Warn("prompt cache: the disk tier is off (RAM only)", "dir", c.dir, "error", err)
		c.dir = ""
		return
	}
	type found struct {
		e   *diskEntry
		mod time.Time
	}
	var all []found
	for _, de := range des {
		path := filepath.Join(c.dir, de.Name())
		if strings.HasPrefix(de.Name(), ".tmp-") {
			os.Remove(path)
			continue
		}
		if !strings.HasSuffix(de.Name(), entryExt) || !de.Type().IsRegular() {
			continue // not ours: left alone
		}
		fi, err := de.Info()
		if err != nil {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		key, tokens, _, err := readHeader(bufio.NewReader(f), fi.Size())
		f.Close()
		if errors.Is(err, errOtherEngine) {
			slog.Warn("prompt cache: removed an entry of another engine version", "file", path, "error", err)
			os.Remove(path)
			continue
		}
		if err != nil {
			slog.Warn("prompt cache: removed a damaged entry", "file", path, "error", err)
			os.Remove(path)
			continue
		}
		all = append(all, found{&diskEntry{key: key, tokens: tokens, path: path, size: fi.Size()}, fi.ModTime()})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod.Before(all[j].mod) })
	for _, f := range all {
		c.disk = append(c.disk, f.e)
		c.diskUsed += f.e.size
	}
	for c.diskUsed > c.diskMax && len(c.disk) > 0 {
		c.removeDisk(c.disk[0])
	}
}

// cacheKey is the runner's key in the prompt cache: the model's identity
// and the shape of a sequence's state (KV type, flash attention, which
// stores V transposed or not, cells per sequence). Made once, by New.
func (r *Runner) cacheKey() string { return r.key }

func (r *Runner) makeCacheKey() string {
	return fmt.Sprintf("%s|kv=%s|fa=%d|seq=%d", r.cfg.CacheKey, r.cfg.KVType, r.cfg.FlashAttn, r.ctx.NumCtxSeq())
}

// swapPromptCache runs before slot s takes request q. What q would drop
// of the slot's sequence (a whole conversation, when another takes the
// slot) is saved to the prompt cache first; then, when the cache holds a
// longer prefix of q's prompt than the slot does, it is restored into
// the slot instead of being prefilled. It reports whether it restored.
// Sequences with embeddings (images) are neither saved nor restored.
func (r *Runner) swapPromptCache(s *slot, q *request) bool {
	pc := r.cfg.PromptCache
	if pc == nil {
		return false
	}
	key := r.cacheKeyFor(s.adapters) // what the slot holds was computed under its set
	have := r.keepable(s, s.reusable(q))
	if len(s.spans) == 0 && len(s.cache)-have >= MinCachedPrompt {
		if r.ckpt {
			// An uncuttable state is saved at its latest checkpoint (the
			// prompt's end), the prefix a returning conversation sends
			// again: the slot goes back to it first (checkpoint.go).
			if k := len(s.ckpts); k > 0 && s.ckpts[k-1].n >= MinCachedPrompt {
				n := r.cutBack(s, s.ckpts[k-1].n)
				s.cache = s.cache[:n]
				r.resetDraft(s, n)
				have = min(have, n)
			}
		}
		if len(s.cache) >= MinCachedPrompt {
			pc.save(key, r.ctx, s.id, s.cache, r.ckpt)
		}
	}
	pre := q.prefetched
	q.prefetched = nil // the slot's now: the entry's memory goes with the request
	if len(q.spans) > 0 {
		return false
	}
	n, tokens, load := pc.lookup(r.cacheKeyFor(q.Adapters.key), q.prompt, have+MinCachedPrompt, pre, r.ckpt)
	if n == 0 {
		return false
	}
	if err := load(r.ctx, s.id); err != nil {
		slog.Warn("prompt cache: restore failed; prefilling", "slot", s.id, "error", err)
		r.ctx.SeqRemove(s.id, -1, -1)
		r.resetDraft(s, 0)
		s.cache, s.spans, s.ckpts = s.cache[:0], nil, s.ckpts[:0]
		return false
	}
	r.resetDraft(s, 0) // the draft model's sequence mirrors the old tokens
	s.cache = append(s.cache[:0], tokens...)
	s.adapters = q.Adapters.key
	s.ckpts = s.ckpts[:0] // they were of the tokens the slot had
	s.spans = nil
	slog.Debug("prompt cache: restored", "slot", s.id, "tokens", len(tokens), "shared", n)
	return true
}

// persistSlots writes the slots' sequences to the prompt cache's disk
// tier as the runner closes, so that they outlive it (a restart, an
// unload).
func (r *Runner) persistSlots() {
	pc := r.cfg.PromptCache
	if pc == nil {
		return
	}
	for _, s := range r.slots {
		key := r.cacheKeyFor(s.adapters)
		if k := len(s.ckpts); r.ckpt && len(s.spans) == 0 && k > 0 && s.ckpts[k-1].n >= MinCachedPrompt {
			// An uncuttable state goes to disk at its latest checkpoint,
			// as swapPromptCache saves it.
			s.cache = s.cache[:r.cutBack(s, s.ckpts[k-1].n)]
		}
		if len(s.spans) == 0 && len(s.cache) >= MinCachedPrompt {
			pc.persist(key, r.ctx, s.id, append([]engine.Token(nil), s.cache...))
		}
	}
	pc.Wait()
}
