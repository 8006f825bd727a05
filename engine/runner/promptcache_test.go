package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
)

// A conversation's prompt, long enough to be cached.
func longPrompt(t *testing.T, m *engine.Model, topic string) []engine.Token {
	t.Helper()
	p := tokenize(t, m, strings.Repeat("Once upon a time there was a little "+topic+" who lived in a big house. ", 8))
	if len(p) < 2*MinCachedPrompt {
		t.Fatalf("prompt of %d tokens, want at least %d", len(p), 2*MinCachedPrompt)
	}
	return p
}

func newCachedRunner(t *testing.T, m *engine.Model, pc *PromptCache) *Runner {
	t.Helper()
	r, err := New(m, Config{Parallel: 1, NumCtx: 512, Threads: 1, PromptCache: pc, CacheKey: "stories260K"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A conversation whose slot another took is restored from the prompt
// cache, RAM or disk, and answers as a cold prefill does; after a
// "restart" (a new runner and cache over the same directory) it is
// restored from disk; a damaged file is removed and the request is
// prefilled cold with the same answer; the budgets hold.
func TestPromptCache(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	a, b := longPrompt(t, m, "cat"), longPrompt(t, m, "dog")
	reqA := Request{Prompt: a, NumPredict: 24}
	reqB := Request{Prompt: b, NumPredict: 24}

	cold := newCachedRunner(t, m, nil)
	wantA := run(t, cold, reqA).text
	cold.Close()

	// RAM: A, then B takes the only slot (A is saved), then A returns.
	pc := NewPromptCache(1<<30, "", 0)
	r := newCachedRunner(t, m, pc)
	run(t, r, reqA)
	run(t, r, reqB)
	got := run(t, r, reqA)
	if got.text != wantA {
		t.Errorf("restored from RAM: %q, cold %q", got.text, wantA)
	}
	if got.last.Stats.RestoredTokens < len(a)-2 || pc.Stats().RAMHits != 1 {
		t.Errorf("restored %d tokens of %d (stats %+v), want the prompt restored from RAM", got.last.Stats.RestoredTokens, len(a), pc.Stats())
	}
	r.Close()

	// Disk: no RAM budget, every saved state goes to disk.
	dir := t.TempDir()
	pc = NewPromptCache(0, dir, 1<<30)
	r = newCachedRunner(t, m, pc)
	run(t, r, reqA)
	run(t, r, reqB)
	pc.Wait()
	if st := pc.Stats(); st.DiskEntries != 1 || st.RAMBytes != 0 {
		t.Fatalf("after A gave its slot to B: %+v, want A on disk only", st)
	}
	got = run(t, r, reqA)
	if got.text != wantA || got.last.Stats.RestoredTokens == 0 || pc.Stats().DiskHits != 1 {
		t.Errorf("restored from disk: %q (%d restored, %+v), cold %q", got.text, got.last.Stats.RestoredTokens, pc.Stats(), wantA)
	}
	r.Close() // the slot (A) is written to disk

	// Restart: a new cache over the same directory knows A and B.
	pc = NewPromptCache(0, dir, 1<<30)
	if st := pc.Stats(); st.DiskEntries != 2 {
		t.Fatalf("after a restart: %+v, want 2 entries on disk", st)
	}
	r = newCachedRunner(t, m, pc)
	got = run(t, r, reqA)
	if got.text != wantA || got.last.Stats.RestoredTokens == 0 {
		t.Errorf("after a restart: %q (%d restored), cold %q", got.text, got.last.Stats.RestoredTokens, wantA)
	}
	r.Close()

	// Damage: B's file truncated, then a restart: removed at indexing; a
	// file whose bytes changed (same size) is removed when read, and the
	// request prefills cold with the same answer.
	pc.Wait()
	files, _ := filepath.Glob(filepath.Join(dir, "*"+entryExt))
	if len(files) < 2 {
		t.Fatalf("%d entries on disk", len(files))
	}
	wantB := func() string { c := newCachedRunner(t, m, nil); defer c.Close(); return run(t, c, reqB).text }()
	for _, f := range files {
		fi, _ := os.Stat(f)
		b, _ := os.ReadFile(f)
		if fi.Size() > int64(len(b)) || len(b) < 100 {
			t.Fatal("short read")
		}
	}
	truncated, flipped := files[0], files[1]
	if err := os.Truncate(truncated, 100); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(flipped)
	data[len(data)/2] ^= 0xff
	os.WriteFile(flipped, data, 0o600)
	os.WriteFile(filepath.Join(dir, "foreign"+entryExt), []byte("not an entry"), 0o600)
	pc = NewPromptCache(0, dir, 1<<30)
	if st := pc.Stats(); st.DiskEntries != 1 {
		t.Errorf("after damaging two files: %+v, want 1 indexed (the truncated and the foreign one removed)", st)
	}
	for _, f := range []string{truncated, filepath.Join(dir, "foreign"+entryExt)} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s: not removed (%v)", filepath.Base(f), err)
		}
	}
	r = newCachedRunner(t, m, pc)
	ga, gb := run(t, r, reqA).text, run(t, r, reqB).text
	if ga != wantA || gb != wantB {
		t.Errorf("with a damaged cache: %q / %q, cold %q / %q", ga, gb, wantA, wantB)
	}
	r.Close()
	pc.Wait()
	// Removed when read (a later save of the same prompt may write it
	// anew, whole).
	if _, err := os.Stat(flipped); !os.IsNotExist(err) {
		if _, err := readEntry(flipped, "x", int64(len(data))); err == nil || strings.Contains(err.Error(), "checksum") {
			t.Errorf("the damaged entry is still there: %v", err)
		}
	}

	// Budgets: a RAM budget of one entry keeps one; a disk budget below
	// one entry keeps none.
	one := int64(0)
	{
		c := newCachedRunner(t, m, nil)
		run(t, c, reqA)
		st, err := c.ctx.SeqState(0)
		if err != nil {
			t.Fatal(err)
		}
		one = int64(len(st))
		c.Close()
	}
	pc = NewPromptCache(one+one/2, t.TempDir(), one/2)
	r = newCachedRunner(t, m, pc)
	for _, q := range []Request{reqA, reqB, reqA, reqB, reqA} {
		run(t, r, q)
	}
	pc.Wait()
	if st := pc.Stats(); st.RAMBytes > one+one/2 || st.RAMEntries != 1 || st.DiskBytes > one/2 || st.DiskEntries != 0 {
		t.Errorf("budgets %d RAM, %d disk: %+v", one+one/2, one/2, st)
	}
	r.Close()

	// A directory that cannot be made, and one whose writes fail (gone,
	// a file in its place): RAM only, and every request answers.
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, nil, 0o600)
	gone := filepath.Join(t.TempDir(), "cache")
	for _, pc := range []*PromptCache{NewPromptCache(one+one/2, filepath.Join(notDir, "sub"), 1<<30), NewPromptCache(one+one/2, gone, 1<<30)} {
		os.RemoveAll(gone)
		os.WriteFile(gone, nil, 0o600)
		r = newCachedRunner(t, m, pc)
		ga, gb := run(t, r, reqA).text, run(t, r, reqB).text // B's save pushes A out of RAM, to a disk that fails
		ga2 := run(t, r, reqA).text
		pc.Wait()
		if ga != wantA || gb != wantB || ga2 != wantA {
			t.Errorf("with a failing disk tier: %q / %q / %q", ga, gb, ga2)
		}
		if st := pc.Stats(); st.DiskEntries != 0 {
			t.Errorf("failing disk tier: %+v", st)
		}
		r.Close()
	}
}

// A state restores only into a context of the same model and shape; a
// wrong sequence id or a damaged state is an error, not an abort.
func TestSeqStateWorstValues(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	r := newCachedRunner(t, m, nil)
	defer r.Close()
	run(t, r, Request{Prompt: longPrompt(t, m, "cat"), NumPredict: 4})
	ctx := r.ctx
	for _, seq := range []int{-1, 1, 1 << 30} {
		if _, err := ctx.SeqState(seq); err == nil {
			t.Errorf("SeqState(%d): no error", seq)
		}
		if err := ctx.SetSeqState(seq, []byte{1}); err == nil {
			t.Errorf("SetSeqState(%d): no error", seq)
		}
	}
	st, err := ctx.SeqState(0)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{"empty": nil, "one byte": {1}, "half": st[:len(st)/2], "garbage": []byte(strings.Repeat("\xff", len(st)))} {
		if err := ctx.SetSeqState(0, bad); err == nil {
			t.Errorf("%s state: no error", name)
		}
	}
	if err := ctx.SetSeqState(0, st); err != nil {
		t.Errorf("its own state: %v", err)
	}
}

// A saved state supersedes the entry it extends but for a short tail (the
// entry a conversation's turn was restored from): the RAM tier keeps one
// state per conversation, the superseded entry's buffer takes the next
// save, and what is restored from it is the state saved. An entry sharing
// little, or with a long tail of its own, stays.
func TestPromptCacheSupersedes(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	ctx, err := m.NewContext(engine.ContextParams{Threads: 1, NumCtx: 1024, NumSeqMax: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	b, _ := engine.NewBatch(512)
	defer b.Close()
	// fill makes seq hold exactly toks (what it holds past their common
	// prefix removed first).
	held := map[int][]engine.Token{}
	fill := func(seq int, toks []engine.Token) {
		t.Helper()
		k := commonPrefix(held[seq], toks)
		ctx.SeqRemove(seq, k, -1)
		b.Clear()
		for i := k; i < len(toks); i++ {
			b.Add(toks[i], i, seq, i == len(toks)-1)
		}
		if err := ctx.Decode(b); err != nil {
			t.Fatal(err)
		}
		held[seq] = append([]engine.Token(nil), toks...)
	}
	cat, dog := longPrompt(t, m, "cat"), longPrompt(t, m, "dog")
	const key = "k"
	pc := NewPromptCache(1<<30, "", 0)

	// Turn 1: the history and a 10-token answer.
	turn1 := append(append([]engine.Token(nil), cat...), dog[:10]...)
	fill(0, turn1)
	pc.save(key, ctx, 0, turn1, false)
	// Turn 2 keeps the history, not the answer, and adds a message.
	turn2 := append(append([]engine.Token(nil), cat...), dog[20:60]...)
	fill(0, turn2)
	pc.save(key, ctx, 0, turn2, false)
	if st := pc.Stats(); st.RAMEntries != 1 || pc.spare == nil {
		t.Fatalf("after turn 2: %+v, spare %v: want turn 1 superseded, its buffer spare", st, pc.spare != nil)
	}
	spare := pc.spare
	turn3 := append(append([]engine.Token(nil), turn2...), dog[60:90]...)
	fill(0, turn3)
	pc.save(key, ctx, 0, turn3, false)
	if st := pc.Stats(); st.RAMEntries != 1 || pc.ram[0].buf != spare {
		t.Fatalf("after turn 3: %+v, want one entry, in turn 1's buffer", st)
	}
	want, err := ctx.SeqState(0)
	if err != nil {
		t.Fatal(err)
	}
	n, _, load := pc.lookup(key, append(append([]engine.Token(nil), turn3...), cat[:5]...), MinCachedPrompt, nil, false)
	if n != len(turn3) {
		t.Fatalf("lookup matched %d of %d tokens", n, len(turn3))
	}
	if err := load(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if string(pc.ram[0].data) != string(want) {
		t.Fatal("the state in a reused buffer differs from the sequence's")
	}
	// Restored, it continues as the sequence saved does: the next token's
	// logits on both are the same (the cells may lie in another order, so
	// the states' bytes need not be).
	b.Clear()
	b.Add(cat[3], len(turn3), 0, true)
	b.Add(cat[3], len(turn3), 1, true)
	if err := ctx.Decode(b); err != nil {
		t.Fatal(err)
	}
	l0, l1 := ctx.Logits(0), ctx.Logits(1)
	for i := range l0 {
		if d := l0[i] - l1[i]; d > 1e-4 || d < -1e-4 {
			t.Fatalf("logit %d: %g saved, %g restored", i, l0[i], l1[i])
		}
	}
	ctx.SeqRemove(0, len(turn3), -1)
	ctx.SeqRemove(1, -1, -1)

	// Another conversation, and a branch of this one with a long tail of
	// its own, stay beside it.
	fill(1, dog)
	pc.save(key, ctx, 1, dog, false)
	branch := append(append([]engine.Token(nil), turn3[:len(cat)]...), dog[:MinCachedPrompt+10]...)
	fill(1, branch)
	pc.save(key, ctx, 1, branch, false)
	if st := pc.Stats(); st.RAMEntries != 3 {
		t.Fatalf("after another conversation and a branch: %+v, want 3 entries", st)
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	var sum int64
	for _, e := range pc.ram {
		sum += e.ramBytes()
	}
	if sum != pc.ramUsed {
		t.Errorf("RAM counted %d, entries hold %d", pc.ramUsed, sum)
	}
}

// An entry replaced by a FIFO (whose open and read would block the decode
// loop for ever), or by a symbolic link to an endless file, is refused
// when it is to be restored, without blocking: the request prefills cold
// and answers as it would have, and the planted file is removed.
func TestPromptCacheEntryNotAFile(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	a, b := longPrompt(t, m, "cat"), longPrompt(t, m, "dog")
	reqA := Request{Prompt: a, NumPredict: 24}
	reqB := Request{Prompt: b, NumPredict: 24}
	wantA := func() string { c := newCachedRunner(t, m, nil); defer c.Close(); return run(t, c, reqA).text }()
	for name, plant := range map[string]func(path string) error{
		"fifo":             func(path string) error { return syscall.Mkfifo(path, 0o600) },
		"link to a device": func(path string) error { return os.Symlink("/dev/zero", path) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			pc := NewPromptCache(0, dir, 1<<30)
			r := newCachedRunner(t, m, pc)
			defer r.Close()
			run(t, r, reqA)
			run(t, r, reqB) // A's state goes to disk
			pc.Wait()
			files, _ := filepath.Glob(filepath.Join(dir, "*"+entryExt))
			if len(files) != 1 {
				t.Fatalf("%d entries on disk, want A's", len(files))
			}
			if err := os.Remove(files[0]); err != nil {
				t.Fatal(err)
			}
			if err := plant(files[0]); err != nil {
				t.Fatal(err)
			}
			done := make(chan string, 1)
			go func() {
				events, err := generate(r, context.Background(), reqA)
				if err != nil {
					done <- "error: " + err.Error()
					return
				}
				var text strings.Builder
				for ev := range events {
					text.WriteString(ev.Text)
					if ev.Done && ev.Err != nil {
						text.WriteString(" error: " + ev.Err.Error())
					}
				}
				done <- text.String()
			}()
			select {
			case got := <-done:
				if got != wantA {
					t.Errorf("A with its entry replaced: %q, cold %q", got, wantA)
				}
			case <-time.After(2 * time.Minute):
				t.Fatal("A with its entry replaced did not complete: the model hangs")
			}
			if _, err := os.Lstat(files[0]); !os.IsNotExist(err) {
				t.Errorf("the planted entry is still there: %v", err)
			}
		})
	}
}

// A disk entry is read by the request that wants it, before it queues,
// not by the runner's loop (issue 40): while the only slot decodes
// another request, Generate has already read and promoted the entry to
// the RAM tier; the request then restores it when the slot frees, with
// the cold answer.
func TestPromptCacheReadBeforeQueue(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	a, b := longPrompt(t, m, "cat"), longPrompt(t, m, "dog")
	reqA := Request{Prompt: a, NumPredict: 24}
	wantA := func() string { c := newCachedRunner(t, m, nil); defer c.Close(); return run(t, c, reqA).text }()

	dir := t.TempDir()
	pc := NewPromptCache(0, dir, 1<<30)
	r := newCachedRunner(t, m, pc)
	run(t, r, reqA)
	r.Close() // A is written to disk
	pc.Wait()

	pc = NewPromptCache(1<<30, dir, 1<<30) // a restart, with a RAM tier
	if st := pc.Stats(); st.DiskEntries != 1 || st.RAMEntries != 0 {
		t.Fatalf("after the restart: %+v", st)
	}
	r = newCachedRunner(t, m, pc)
	defer r.Close()
	busy, err := generate(r, context.Background(), Request{Prompt: b[:8], NumPredict: 400})
	if err != nil {
		t.Fatal(err)
	}
	<-busy // the slot is B's
	events, err := generate(r, context.Background(), reqA)
	if err != nil {
		t.Fatal(err)
	}
	if st := pc.Stats(); st.RAMEntries != 1 || st.DiskHits != 0 {
		t.Errorf("A queued behind B: %+v, want its entry read and in RAM already (restored later)", st)
	}
	collect(t, busy)
	got := collect(t, events)
	if got.text != wantA || got.last.Stats.RestoredTokens < len(a)-2 || pc.Stats().DiskHits != 1 {
		t.Errorf("A: %q (%d of %d tokens restored, %+v), cold %q", got.text, got.last.Stats.RestoredTokens, len(a), pc.Stats(), wantA)
	}
}

// Entries written by another engine are removed when the cache indexes
// its directory, never restored: one in the format of the engine before
// llama.cpp v0.5.0 (magic TPKVSEQ1), and one whose state version names
// another llama.cpp; a request then prefills cold with the same answer.
func TestPromptCacheOtherEngine(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	a, b := longPrompt(t, m, "cat"), longPrompt(t, m, "dog")
	reqA := Request{Prompt: a, NumPredict: 16}
	dir := t.TempDir()
	pc := NewPromptCache(0, dir, 1<<30)
	r := newCachedRunner(t, m, pc)
	wantA := run(t, r, reqA).text
	run(t, r, Request{Prompt: b, NumPredict: 4}) // A's state to disk
	pc.Wait()
	r.Close()
	pc.Wait()
	files, _ := filepath.Glob(filepath.Join(dir, "*"+entryExt))
	if len(files) != 2 {
		t.Fatalf("%d entries on disk, want 2", len(files))
	}
	// The old format: the first magic, the rest as it was (no version).
	old, _ := os.ReadFile(files[0])
	nv := len(entryMagic) + 4 + len(stateVersion)
	os.WriteFile(files[0], append([]byte("TPKVSEQ1"), old[nv:]...), 0o600)
	// Another release: the version string's bytes changed, same length.
	other, _ := os.ReadFile(files[1])
	i := len(entryMagic) + 4 + strings.Index(stateVersion, "v")
	other[i+1] = 'X'
	os.WriteFile(files[1], other, 0o600)

	pc = NewPromptCache(0, dir, 1<<30)
	if st := pc.Stats(); st.DiskEntries != 0 {
		t.Errorf("after indexing two entries of other engines: %+v, want none", st)
	}
	for _, f := range files {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s: not removed (%v)", filepath.Base(f), err)
		}
	}
	r = newCachedRunner(t, m, pc)
	got := run(t, r, reqA)
	if got.text != wantA || got.last.Stats.RestoredTokens != 0 {
		t.Errorf("after removing other engines' entries: %q (%d restored), cold %q", got.text, got.last.Stats.RestoredTokens, wantA)
	}
	r.Close()
}
