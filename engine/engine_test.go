package engine

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

const storiesContinuation = ", there was a little girl named Lily. She loved to play outside in the park."

func loadStories(t testing.TB) *Model {
	t.Helper()
	m, err := LoadModel(testmodels.Testdata("stories260K.gguf"), ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// generate runs the raw engine loop: prompt, then up to n tokens sampled
// with p (the zero value is greedy).
func generate(t testing.TB, m *Model, prompt []Token, n int, p SamplerParams) (string, []Token) {
	t.Helper()
	ctx, err := m.NewContext(ContextParams{Threads: 1, NumCtx: 256, NumBatch: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	return generateOn(t, m, ctx, prompt, n, p)
}

// generateOn is generate on a context of the caller's (its memory clear).
func generateOn(t testing.TB, m *Model, ctx *Context, prompt []Token, n int, p SamplerParams) (string, []Token) {
	t.Helper()
	s, err := m.NewSampler(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := NewBatch(256)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i, tok := range prompt {
		b.Add(tok, i, 0, i == len(prompt)-1)
	}
	var out []Token
	var d Detokenizer
	var text []byte
	for len(out) < n {
		if err := ctx.Decode(b); err != nil {
			t.Fatal(err)
		}
		tok, err := s.Sample(ctx, b.Len()-1)
		if err != nil {
			t.Fatal(err)
		}
		if m.IsEOG(tok) {
			break
		}
		out = append(out, tok)
		text = append(text, d.Add(m.TokenPiece(tok, false))...)
		b.Clear()
		b.Add(tok, len(prompt)+len(out)-1, 0, true)
	}
	return string(append(text, d.Flush()...)), out
}

func greedy(t testing.TB, m *Model, prompt []Token, n int) (string, []Token) {
	t.Helper()
	return generate(t, m, prompt, n, SamplerParams{})
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.gguf")
	os.WriteFile(junk, []byte("this is not a model\n"), 0o644)
	empty := filepath.Join(dir, "empty.gguf")
	os.WriteFile(empty, nil, 0o644)
	good, _ := os.ReadFile(testmodels.Testdata("stories260K.gguf"))
	truncated := filepath.Join(dir, "truncated.gguf")
	os.WriteFile(truncated, good[:len(good)/2], 0o644)

	for _, tc := range []struct {
		path string
		want error
	}{
		{filepath.Join(dir, "missing.gguf"), ErrModelNotFound},
		{junk, ErrNotGGUF},
		{empty, ErrNotGGUF},
		{testmodels.Testdata("unsupported/tinyllamas-stories-260k-f32.gguf"), ErrUnsupported},
		{truncated, nil},
	} {
		m, err := LoadModel(tc.path, ModelParams{})
		if err == nil {
			m.Close()
			t.Errorf("%s: loaded", tc.path)
			continue
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.path, err, tc.want)
		}
		t.Logf("%s: %v", filepath.Base(tc.path), err)
	}
}

func TestMetadataAndVocab(t *testing.T) {
	m := loadStories(t)
	md := m.Meta
	if md.Architecture != "llama" || md.ContextLength != 2048 || md.VocabSize != 512 || md.EmbeddingLen != 64 ||
		md.Layers != 5 || md.Heads != 8 || md.HeadsKV != 4 || md.FileType != "F32" || md.ChatTemplate != "" {
		t.Fatalf("metadata: %+v", md)
	}
	if md.ParameterSize < 200_000 || md.ParameterSize > 400_000 || md.KV["llama.context_length"] != "2048" {
		t.Fatalf("parameters %d, kv %v", md.ParameterSize, md.KV["llama.context_length"])
	}
	toks, err := m.Tokenize("Once upon a time", true, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []Token{1, 403, 407, 261, 378}
	if len(toks) != len(want) {
		t.Fatalf("tokens %v, want %v", toks, want)
	}
	for i := range want {
		if toks[i] != want[i] {
			t.Fatalf("tokens %v, want %v", toks, want)
		}
	}
	if got := m.Detokenize(toks[1:], false); got != " Once upon a time" {
		t.Fatalf("detokenize: %q", got)
	}
	if m.BOS() != 1 || m.EOS() != 2 || !m.IsEOG(2) || m.IsEOG(403) {
		t.Fatal("special tokens")
	}
}

func TestGreedyStories(t *testing.T) {
	m := loadStories(t)
	toks, _ := m.Tokenize("Once upon a time", true, false)
	text, _ := greedy(t, m, toks, 30)
	if !strings.HasPrefix(text, storiesContinuation) {
		t.Fatalf("greedy: %q", text)
	}
}

func TestBigramModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bigram.gguf")
	if err := testmodels.WriteBigram(path); err != nil {
		t.Fatal(err)
	}
	m, err := LoadModel(path, ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Meta.ChatTemplate == "" {
		t.Fatal("bigram model has no chat template")
	}
	prompt, err := m.ApplyChatTemplate("", []ChatMessage{{Role: "user", Content: "Hi"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if prompt != "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n" {
		t.Fatalf("ChatML prompt %q", prompt)
	}
	toks, _ := m.Tokenize(prompt, true, true)
	if text, _ := greedy(t, m, toks, 40); text != testmodels.BigramAnswer {
		t.Fatalf("answer %q, want %q", text, testmodels.BigramAnswer)
	}
	toks, _ = m.Tokenize(testmodels.CountPrompt, true, false)
	if text, _ := greedy(t, m, toks, 40); text != testmodels.CountAnswer {
		t.Fatalf("count %q, want %q", text, testmodels.CountAnswer)
	}
}

func TestChatTemplateFallback(t *testing.T) {
	m := loadStories(t) // no template of its own: ChatML
	got, err := m.ApplyChatTemplate("", []ChatMessage{{"system", "Be brief."}, {"user", "Hello"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"
	if got != want {
		t.Fatalf("got %q", got)
	}
	if _, err := m.ApplyChatTemplate("{{ not a known template }}", []ChatMessage{{"user", "x"}}, true); err == nil {
		t.Fatal("unknown template accepted")
	}
}

func TestSamplerSeedAndGrammar(t *testing.T) {
	m := loadStories(t)
	toks, _ := m.Tokenize("Once upon a time", true, false)
	sample := func(p SamplerParams, n int) string {
		text, _ := generate(t, m, toks, n, p)
		return text
	}
	hot := SamplerParams{Seed: 42, Temperature: 1.5, TopK: 100, TopP: 0.95, MinP: 0.01, RepeatPenalty: 1.1, RepeatLastN: 64}
	a, b := sample(hot, 30), sample(hot, 30)
	if a != b {
		t.Fatalf("same seed, different text:\n%q\n%q", a, b)
	}
	hot.Seed = 7
	if c := sample(hot, 30); c == a {
		t.Fatalf("different seeds gave the same text %q", c)
	}
	for _, mp := range []SamplerParams{
		{Temperature: 0.8, Mirostat: 1, MirostatTau: 5, MirostatEta: 0.1, Seed: 1},
		{Temperature: 0.8, Mirostat: 2, MirostatTau: 5, MirostatEta: 0.1, Seed: 1},
		{Temperature: 0.8, TypicalP: 0.9, PresencePenalty: 0.5, FrequencyPenalty: 0.5, Seed: 1},
	} {
		if s := sample(mp, 10); s == "" {
			t.Errorf("%+v produced nothing", mp)
		}
	}
	// A grammar constrains the output to its language.
	g := `root ::= " yes" | " no" | " maybe"`
	out := sample(SamplerParams{Grammar: g, Temperature: 0.9, Seed: 3}, 20)
	if out != " yes" && out != " no" && out != " maybe" {
		t.Fatalf("grammar output %q", out)
	}
	if _, err := m.NewSampler(SamplerParams{Grammar: "root ::= ("}); err == nil {
		t.Fatal("invalid grammar accepted")
	}
	// A logit bias of -inf on the greedy choice changes it.
	_, first := greedy(t, m, toks, 1)
	_, biased := generate(t, m, toks, 1, SamplerParams{LogitBias: map[Token]float32{first[0]: float32(math.Inf(-1))}})
	if biased[0] == first[0] {
		t.Fatalf("logit bias had no effect on token %d", first[0])
	}
}

func TestEmbeddings(t *testing.T) {
	m := loadStories(t)
	embed := func(s string) []float32 {
		ctx, err := m.NewContext(ContextParams{Threads: 1, NumCtx: 128, Embeddings: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ctx.Close()
		toks, _ := m.Tokenize(s, true, false)
		b, err := NewBatch(len(toks))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		for i, tok := range toks {
			b.Add(tok, i, 0, true)
		}
		if err := ctx.Decode(b); err != nil {
			t.Fatal(err)
		}
		e, err := ctx.Embeddings(0)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	a, b := embed("The cat sat on the mat."), embed("A dog ran in the park.")
	if len(a) != 64 {
		t.Fatalf("embedding length %d", len(a))
	}
	var na, dot float64
	for i := range a {
		na += float64(a[i]) * float64(a[i])
		dot += float64(a[i]) * float64(b[i])
	}
	if math.Abs(na-1) > 1e-4 {
		t.Fatalf("embedding norm² %v", na)
	}
	if dot > 0.9999 {
		t.Fatalf("different texts have the same embedding")
	}
	if c := embed("The cat sat on the mat."); c[0] != a[0] || c[63] != a[63] {
		t.Fatal("embeddings are not deterministic")
	}
}

func TestMemoryOps(t *testing.T) {
	m := loadStories(t)
	ctx, err := m.NewContext(ContextParams{Threads: 1, NumCtx: 256, NumSeqMax: 2, KVUnified: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	toks, _ := m.Tokenize("Once upon a time there was", true, false)
	b, err := NewBatch(256)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i, tok := range toks {
		b.Add(tok, i, 0, i == len(toks)-1)
	}
	if err := ctx.Decode(b); err != nil {
		t.Fatal(err)
	}
	want := append([]float32(nil), ctx.Logits(b.Len()-1)...)
	if ctx.SeqPosMax(0) != len(toks)-1 || ctx.SeqPosMax(1) != -1 {
		t.Fatalf("pos max %d %d", ctx.SeqPosMax(0), ctx.SeqPosMax(1))
	}
	// Copy all but the last token to sequence 1 and re-decode the last:
	// same logits as the original.
	ctx.SeqCopy(0, 1, 0, len(toks)-1)
	b.Clear()
	b.Add(toks[len(toks)-1], len(toks)-1, 1, true)
	if err := ctx.Decode(b); err != nil {
		t.Fatal(err)
	}
	got := ctx.Logits(0)
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-3 {
			t.Fatalf("logit %d: %v after copy, %v before", i, got[i], want[i])
		}
	}
	if !ctx.SeqRemove(1, -1, -1) || ctx.SeqPosMax(1) != -1 || !ctx.CanShift() {
		t.Fatal("remove / can shift")
	}
	ctx.ClearMemory()
	if ctx.SeqPosMax(0) != -1 {
		t.Fatal("memory not cleared")
	}
	if _, err := m.NewContext(ContextParams{Threads: 1, KVType: "q3_weird"}); err == nil {
		t.Fatal("unknown KV type accepted")
	}
}

// TestNativeHeap: a context's KV cache comes from C's malloc, so
// NativeHeap's in-use figure rises by about its size when the context is
// made and falls back when it is closed (what /metrics exports as
// tadpole_native_heap_bytes, and make soak judges a native leak by).
func TestNativeHeap(t *testing.T) {
	m := loadStories(t)
	before, held, ok := NativeHeap()
	if !ok {
		t.Skip("the C library gives no malloc figures (not glibc 2.33+)")
	}
	if before <= 0 || held < before {
		t.Fatalf("in use %d, held %d", before, held)
	}
	// 8192 cells × 5 layers × (K + V) × 64 values × 2 bytes (f16) = 10 MiB.
	ctx, err := m.NewContext(ContextParams{Threads: 1, NumCtx: 8192})
	if err != nil {
		t.Fatal(err)
	}
	const kv = 8192 * 5 * 2 * 64 * 2
	during, _, _ := NativeHeap()
	ctx.Close()
	after, _, _ := NativeHeap()
	if during-before < kv*9/10 {
		t.Fatalf("a context with a %d-byte KV cache raised malloc's in-use figure by %d", kv, during-before)
	}
	if during-after < kv*9/10 {
		t.Fatalf("closing it lowered the figure by %d, not about %d", during-after, kv)
	}
}

func TestVocabOnly(t *testing.T) {
	m, err := LoadModel(testmodels.Testdata("stories260K.gguf"), ModelParams{VocabOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if toks, _ := m.Tokenize("Once", false, false); len(toks) != 1 || toks[0] != 403 {
		t.Fatalf("tokens %v", toks)
	}
}

func TestLoadProgress(t *testing.T) {
	var last float32
	calls := 0
	m, err := LoadModel(testmodels.Testdata("stories260K.gguf"), ModelParams{Progress: func(p float32) bool {
		calls++
		last = p
		return true
	}})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if calls == 0 || last != 1 {
		t.Fatalf("progress: %d calls, last %v", calls, last)
	}
	_, err = LoadModel(testmodels.Testdata("stories260K.gguf"), ModelParams{Progress: func(float32) bool { return false }})
	if !errors.Is(err, ErrLoadCancelled) {
		t.Fatalf("cancelled load: %v", err)
	}
}

func TestDetokenizerUTF8(t *testing.T) {
	text := "héllo, 世界 🐸!"
	b := []byte(text)
	for split := 1; split <= 4; split++ {
		var d Detokenizer
		var out []byte
		for i := 0; i < len(b); i += split {
			piece := d.Add(b[i:min(i+split, len(b))])
			if !utf8.Valid(piece) {
				t.Fatalf("split %d: invalid piece %q", split, piece)
			}
			out = append(out, piece...)
		}
		out = append(out, d.Flush()...)
		if string(out) != text {
			t.Fatalf("split %d: %q", split, out)
		}
	}
	var d Detokenizer
	if got := string(d.Add([]byte{0xE4, 0xB8})); got != "" {
		t.Fatalf("partial character emitted: %q", got)
	}
	if got := string(d.Flush()); got != "\uFFFD\uFFFD" && got != "\uFFFD" {
		t.Fatalf("flush of a broken character: %q", got)
	}
}

func TestQuantize(t *testing.T) {
	// A model with rows of 256 (the K-quant block size): the generated
	// small random Llama, written in F32, quantized to each type.
	dir := t.TempDir()
	src := filepath.Join(dir, "small-f32.gguf")
	if err := testmodels.WriteRandomLlama(src, testmodels.Small, gguf.F32, 1); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"q8_0", "Q4_0", "Q4_K_M"} {
		out := filepath.Join(dir, typ+".gguf")
		if err := Quantize(src, out, typ, 1); err != nil {
			t.Fatal(err)
		}
		m, err := LoadModel(out, ModelParams{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.EqualFold(m.Meta.FileType, typ) {
			t.Errorf("%s: file type %s", typ, m.Meta.FileType)
		}
		toks, _ := m.Tokenize("hello", true, false)
		if _, out := greedy(t, m, toks, 3); len(out) == 0 {
			t.Errorf("%s: generated nothing", typ)
		}
		m.Close()
	}
	if err := Quantize(src, filepath.Join(dir, "x.gguf"), "Q9_9", 1); err == nil {
		t.Fatal("unknown type accepted")
	}
	if err := Quantize(testmodels.Testdata("unsupported/tinyllamas-stories-260k-f32.gguf"), filepath.Join(dir, "y.gguf"), "Q8_0", 1); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("GGUF v1: %v", err)
	}
}

// The scripted model's attention notices marker tokens anywhere in the
// context: it thinks and calls its tool, calls the tool at once when
// thinking is off, and answers once a tool response is in the context.
func TestScriptModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script.gguf")
	if err := testmodels.WriteScript(path); err != nil {
		t.Fatal(err)
	}
	m, err := LoadModel(path, ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const ask = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	const call = "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"
	for _, c := range []struct{ prompt, want string }{
		{ask, "<think>" + testmodels.ScriptThinking + "</think>" + testmodels.ScriptCall},
		{ask + "<think>\n\n</think>\n\n", testmodels.ScriptCall},
		{ask[:len(ask)-len("<|im_start|>assistant\n")] + call + "<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n<|im_start|>assistant\n", testmodels.ScriptAnswer},
	} {
		toks, err := m.Tokenize(c.prompt, true, true)
		if err != nil {
			t.Fatal(err)
		}
		if text, _ := greedy(t, m, toks, 40); text != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.prompt, text, c.want)
		}
	}
}

// A variant of the scripted model plays the script it was generated
// with (a tool of the test's choosing, its arguments, its answer) the
// same way, greedy and sampled at temperature 1 over its large
// vocabulary.
func TestScriptVariantModel(t *testing.T) {
	script := testmodels.ToolScript{Tool: "Read", Arguments: `{"file_path": "/tmp/a b/note.txt"}`, Answer: "The note has been read. The end."}
	path := filepath.Join(t.TempDir(), "variant.gguf")
	if err := testmodels.WriteScriptVariant(path, script); err != nil {
		t.Fatal(err)
	}
	m, err := LoadModel(path, ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const ask = "<|im_start|>system\nYou read files. Reply in JSON: {\"ok\": true}.<|im_end|>\n<|im_start|>user\nWhat does note.txt say?<|im_end|>\n<|im_start|>assistant\n"
	call := "<|im_start|>assistant\n" + script.Call() + "<|im_end|>\n"
	for _, c := range []struct{ prompt, want string }{
		{ask, "<think>" + testmodels.ScriptThinking + "</think>" + script.Call()},
		{ask + "<think>\n\n</think>\n\n", script.Call()},
		{ask[:len(ask)-len("<|im_start|>assistant\n")] + call + "<|im_start|>user\n<tool_response>\nhello\n</tool_response><|im_end|>\n<|im_start|>assistant\n", script.Answer},
	} {
		toks, err := m.Tokenize(c.prompt, true, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []SamplerParams{{}, {Temperature: 1, Seed: 7}} {
			if text, _ := generate(t, m, toks, 60, p); text != c.want {
				t.Errorf("%q at temperature %v:\n got %q\nwant %q", c.prompt, p.Temperature, text, c.want)
			}
		}
	}
}

// The engine refuses values llama.cpp would assert on or truncate, with
// an error naming the value (engine/limits.go), instead of handing them
// on.
func TestEngineContract(t *testing.T) {
	m := loadStories(t)
	for _, p := range []ContextParams{
		{NumCtx: 1 << 40}, {NumBatch: -1}, {NumSeqMax: MaxSeq + 1}, {Threads: 100000}, {ThreadsBatch: MaxThreads + 1},
	} {
		var re *RangeError
		if _, err := m.NewContext(p); !errors.As(err, &re) {
			t.Errorf("%+v: %v", p, err)
		}
	}
	for _, n := range []int{0, -1, MaxContext + 1} {
		if _, err := NewBatch(n); err == nil {
			t.Errorf("batch of %d accepted", n)
		}
	}
	for _, p := range []SamplerParams{
		{TopK: 1 << 40}, {RepeatLastN: MaxRepeatLastN + 1, Temperature: 1}, {RepeatLastN: -2}, {Mirostat: 3},
		{Temperature: float32(math.Inf(1))}, {TopP: float32(math.NaN())},
		{LogitBias: map[Token]float32{1: float32(math.NaN())}},
	} {
		if _, err := m.NewSampler(p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	// A batch larger than the context's real n_batch (llama.cpp clamps
	// n_batch to n_ctx, padded to 256) is refused, not asserted on.
	ctx, err := m.NewContext(ContextParams{NumCtx: 100, NumBatch: 100, NumUBatch: 100, Threads: 1, Embeddings: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	b, err := NewBatch(300)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := 0; i < 200; i++ {
		b.Add(Token(10+i%50), i, 0, true)
	}
	if err := ctx.Decode(b); err == nil || !strings.Contains(err.Error(), "batch size") {
		t.Fatalf("oversized batch: %v", err)
	}
}

// Ids outside the vocabulary render as nothing rather than reaching
// llama.cpp's std::vector::at (an uncaught exception terminates).
func TestTokenPieceOutOfVocabulary(t *testing.T) {
	m := loadStories(t)
	for _, id := range []Token{-1, Token(m.VocabSize()), 1 << 30} {
		if p := m.TokenPiece(id, true); p != nil {
			t.Fatalf("token %d: %q", id, p)
		}
	}
	if m.Detokenize([]Token{1 << 30, -5}, false) != "" {
		t.Fatal("out-of-vocabulary ids detokenized")
	}
}
