package testmodels

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// spmTokenize is llama.cpp's SentencePiece merge loop: repeatedly merge
// the adjacent pair whose concatenation is the best-scoring token (leftmost
// on ties), then fall back to byte tokens for unknown symbols. text is one
// raw-text fragment; like llama.cpp with add_space_prefix, a space is
// prepended.
func spmTokenize(tokens []string, scores []float32, text string) []string {
	ids := map[string]int{}
	for i, t := range tokens {
		ids[t] = i
	}
	text = strings.ReplaceAll(" "+text, " ", spaceMark)
	var syms []string
	for _, r := range text {
		syms = append(syms, string(r))
	}
	for {
		best, bestScore := -1, float32(0)
		for i := 0; i+1 < len(syms); i++ {
			if id, ok := ids[syms[i]+syms[i+1]]; ok && (best < 0 || scores[id] > bestScore) {
				best, bestScore = i, scores[id]
			}
		}
		if best < 0 {
			break
		}
		syms[best] += syms[best+1]
		syms = append(syms[:best+1], syms[best+2:]...)
	}
	var out []string
	for _, s := range syms {
		if _, ok := ids[s]; ok {
			out = append(out, s)
			continue
		}
		for _, b := range []byte(s) {
			out = append(out, fmt.Sprintf("<0x%02X>", b))
		}
	}
	return out
}

func f32s(t *testing.T, data []byte, ti gguf.TensorInfo, f *gguf.File) []float32 {
	t.Helper()
	if ti.Type != gguf.F32 {
		t.Fatalf("%s is %s", ti.Name, ti.Type)
	}
	b := data[f.DataOffset+int64(ti.Offset):][:ti.Size()]
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// bigramNext computes the model's greedy next token for token i from the
// file's weights: the block adds nothing (checked), so the logits are
// output · rmsnorm(token_embd[i]).
type bigramModel struct {
	nEmbd, nVocab int
	embd, out     []float32
}

func (m *bigramModel) next(i int) int {
	x := m.embd[i*m.nEmbd : (i+1)*m.nEmbd]
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scale := 1 / math.Sqrt(ss/float64(m.nEmbd)+1e-5)
	best, bestLogit := -1, math.Inf(-1)
	for j := range m.nVocab {
		var l float64
		for k, v := range x {
			l += float64(m.out[j*m.nEmbd+k]) * float64(v) * scale
		}
		if l > bestLogit {
			best, bestLogit = j, l
		}
	}
	return best
}

func TestBigram(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bigram.gguf")
	if err := WriteBigram(p); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Architecture() != "llama" || f.Name() != BigramName || f.ContextLength() != BigramContextLength {
		t.Errorf("arch %q name %q context %d", f.Architecture(), f.Name(), f.ContextLength())
	}
	if tmpl, _ := f.String("tokenizer.chat_template"); tmpl != ChatMLTemplate || !strings.Contains(tmpl, "<|im_start|>") {
		t.Errorf("chat template %q", tmpl)
	}
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	if !reflect.DeepEqual(tokens, BigramTokens()) {
		t.Error("tokens differ from BigramTokens")
	}
	scoresV, _ := f.Get("tokenizer.ggml.scores")
	scores := scoresV.([]float32)
	typesV, _ := f.Get("tokenizer.ggml.token_type")
	types := typesV.([]int32)
	if len(scores) != len(tokens) || len(types) != len(tokens) {
		t.Fatalf("%d tokens, %d scores, %d types", len(tokens), len(scores), len(types))
	}
	for id, want := range map[int]string{UnkID: "<unk>", BOSID: "<s>", EOSID: "</s>", firstByte + 10: "<0x0A>", ImStartID: "<|im_start|>", ImEndID: "<|im_end|>"} {
		if tokens[id] != want {
			t.Errorf("token %d = %q, want %q", id, tokens[id], want)
		}
	}
	if types[ImEndID] != tokControl || types[firstByte] != tokByte || types[UnkID] != tokUnknown {
		t.Error("token types")
	}
	for key, want := range map[string]uint64{
		"tokenizer.ggml.bos_token_id": BOSID, "tokenizer.ggml.eos_token_id": EOSID,
		"tokenizer.ggml.eot_token_id": ImEndID, "llama.block_count": 1, "llama.vocab_size": uint64(len(tokens)),
	} {
		if got, ok := f.Uint(key); !ok || got != want {
			t.Errorf("%s = %d, want %d", key, got, want)
		}
	}
	nEmbd, _ := f.ArchUint("embedding_length")
	heads, _ := f.ArchUint("attention.head_count")
	rope, _ := f.ArchUint("rope.dimension_count")
	if int(nEmbd) < len(tokens) || nEmbd%heads != 0 || rope != nEmbd/heads {
		t.Errorf("n_embd %d, %d tokens, %d heads, rope %d", nEmbd, len(tokens), heads, rope)
	}
	if len(f.Tensors) != 12 {
		t.Errorf("%d tensors", len(f.Tensors))
	}
	for _, ti := range f.Tensors {
		if ti.Type != gguf.F32 {
			t.Errorf("%s is %s", ti.Name, ti.Type)
		}
		if strings.HasSuffix(ti.Name, "attn_output.weight") || strings.HasSuffix(ti.Name, "ffn_down.weight") {
			for _, v := range f32s(t, data, ti, f) {
				if v != 0 {
					t.Fatalf("%s is not all zero", ti.Name)
				}
			}
		}
		if strings.HasSuffix(ti.Name, "norm.weight") {
			for _, v := range f32s(t, data, ti, f) {
				if v != 1 {
					t.Fatalf("%s is not all one", ti.Name)
				}
			}
		}
	}
	te, _ := f.Tensor("token_embd.weight")
	out, _ := f.Tensor("output.weight")
	want := []uint64{nEmbd, uint64(len(tokens))}
	if !reflect.DeepEqual(te.Dims, want) || !reflect.DeepEqual(out.Dims, want) {
		t.Errorf("token_embd %v, output %v, want %v", te.Dims, out.Dims, want)
	}
	m := &bigramModel{nEmbd: int(nEmbd), nVocab: len(tokens), embd: f32s(t, data, te, f), out: f32s(t, data, out, f)}

	// generate follows the greedy chain from a prompt's last token.
	generate := func(last string, max int) (text string, stop string) {
		id := -1
		for i, tok := range tokens {
			if tok == last {
				id = i
			}
		}
		if id < 0 {
			t.Fatalf("no token %q", last)
		}
		var b strings.Builder
		for range max {
			id = m.next(id)
			if id == EOSID || id == ImEndID {
				return b.String(), tokens[id]
			}
			b.WriteString(strings.ReplaceAll(tokens[id], spaceMark, " "))
		}
		return b.String(), "limit"
	}
	lastToken := func(prompt string) string {
		toks := spmTokenize(tokens, scores, prompt)
		return toks[len(toks)-1]
	}
	for _, c := range []struct {
		prompt, answer, stop string
		max                  int
	}{
		{CountPrompt, CountAnswer, EOSToken, 12},
		{HelloPrompt, HelloAnswer, ImEndToken, 12},
		{ColorPrompt, ColorAnswer, EOSToken, 12},
		{"Once upon a time", "", EOSToken, 12},
		{"Hello from Tadpole", ".", ImEndToken, 12},
		{LoopPrompt, LoopAnswer(9), "limit", 9},
	} {
		text, stop := generate(lastToken(c.prompt), c.max)
		if text != c.answer || stop != c.stop {
			t.Errorf("%q: %q then %s, want %q then %s", c.prompt, text, stop, c.answer, c.stop)
		}
	}
	// The chat prompt ends in a newline byte token.
	if !strings.HasSuffix(BigramChatPrompt, "<|im_start|>assistant\n") {
		t.Error("BigramChatPrompt")
	}
	if text, stop := generate("<0x0A>", 20); text != BigramAnswer || stop != ImEndToken {
		t.Errorf("chat: %q then %s, want %q then <|im_end|>", text, stop, BigramAnswer)
	}
	// Words tokenize whole.
	for in, want := range map[string][]string{
		"one two three four five six seven eight nine ten": {"▁one", "▁two", "▁three", "▁four", "▁five", "▁six", "▁seven", "▁eight", "▁nine", "▁ten"},
		"Hello from Tadpole.":                              {"▁Hello", "▁from", "▁Tadpole", "."},
		"assistant":                                        {"▁assistant"},
		"red green blue ping":                              {"▁red", "▁green", "▁blue", "▁ping"},
	} {
		if got := spmTokenize(tokens, scores, in); !reflect.DeepEqual(got, want) {
			t.Errorf("tokenize %q = %q, want %q", in, got, want)
		}
	}
	// Deterministic: the same bytes every time.
	var b bytes.Buffer
	kvs, tensors := Bigram()
	if err := gguf.Write(&b, kvs, tensors); err != nil || !bytes.Equal(b.Bytes(), data) {
		t.Errorf("second bigram model differs (%v)", err)
	}
}

func TestLoopAnswer(t *testing.T) {
	if LoopAnswer(0) != "" || LoopAnswer(3) != " pong ping pong" {
		t.Error(LoopAnswer(3))
	}
}

func TestRandomLlama(t *testing.T) {
	dir := t.TempDir()
	for _, typ := range []gguf.TensorType{gguf.F32, gguf.F16, gguf.Q8_0, gguf.Q4_0} {
		s := Tiny
		p := filepath.Join(dir, typ.String()+".gguf")
		if err := WriteRandomLlama(p, s, typ, 42); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		ft, _ := f.FileType()
		wantFT, _ := gguf.FileTypeOf(typ)
		if f.Architecture() != "llama" || ft != wantFT || f.ContextLength() != uint64(s.Context) {
			t.Errorf("%s: arch %q, file type %v, context %d", typ, f.Architecture(), ft, f.ContextLength())
		}
		if !strings.Contains(f.Name(), "tiny") {
			t.Errorf("name %q", f.Name())
		}
		for key, want := range map[string]int{
			"llama.embedding_length": s.Embd, "llama.block_count": s.Layers, "llama.feed_forward_length": s.FF,
			"llama.attention.head_count": s.Heads, "llama.attention.head_count_kv": s.HeadsKV,
			"llama.rope.dimension_count": s.HeadDim(), "llama.vocab_size": s.Vocab,
		} {
			if got, _ := f.Uint(key); got != uint64(want) {
				t.Errorf("%s: %s = %d, want %d", typ, key, got, want)
			}
		}
		tokens, _ := f.Strings("tokenizer.ggml.tokens")
		if len(tokens) != s.Vocab {
			t.Errorf("%d tokens, want %d", len(tokens), s.Vocab)
		}
		if len(f.Tensors) != 3+9*s.Layers || f.ParameterCount() != s.Params() {
			t.Errorf("%d tensors, %d parameters (want %d)", len(f.Tensors), f.ParameterCount(), s.Params())
		}
		kv := uint64(s.HeadsKV * s.HeadDim())
		e := uint64(s.Embd)
		for name, dims := range map[string][]uint64{
			"token_embd.weight": {e, uint64(s.Vocab)}, "output.weight": {e, uint64(s.Vocab)},
			"output_norm.weight": {e}, "blk.1.attn_k.weight": {e, kv}, "blk.0.ffn_down.weight": {uint64(s.FF), e},
			"blk.1.ffn_up.weight": {e, uint64(s.FF)}, "blk.0.attn_q.weight": {e, e},
		} {
			ti, ok := f.Tensor(name)
			wantType := typ
			if len(dims) == 1 {
				wantType = gguf.F32
			}
			if !ok || !reflect.DeepEqual(ti.Dims, dims) || ti.Type != wantType {
				t.Errorf("%s: %s = %+v, want %v %s", typ, name, ti, dims, wantType)
			}
		}
		var sum uint64
		for _, ti := range f.Tensors {
			sum += (ti.Size() + 31) / 32 * 32
		}
		if f.DataOffset+int64(sum) != f.Size {
			t.Errorf("%s: data %d + %d bytes, file %d", typ, f.DataOffset, sum, f.Size)
		}
		checkWeights(t, p, f, typ)
	}
}

// checkWeights decodes blk.0.attn_q.weight and checks its values are
// finite with roughly the intended spread 1/sqrt(n_embd).
func checkWeights(t *testing.T, path string, f *gguf.File, typ gguf.TensorType) {
	ti, _ := f.Tensor("blk.0.attn_q.weight")
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b := make([]byte, ti.Size())
	if _, err := r.ReadAt(b, f.DataOffset+int64(ti.Offset)); err != nil {
		t.Fatal(err)
	}
	var vals []float32
	le := binary.LittleEndian
	switch typ {
	case gguf.F32:
		for i := 0; i < len(b); i += 4 {
			vals = append(vals, math.Float32frombits(le.Uint32(b[i:])))
		}
	case gguf.F16:
		for i := 0; i < len(b); i += 2 {
			vals = append(vals, f16ToF32(le.Uint16(b[i:])))
		}
	case gguf.Q8_0:
		for i := 0; i < len(b); i += 34 {
			d := f16ToF32(le.Uint16(b[i:]))
			for _, q := range b[i+2 : i+34] {
				vals = append(vals, float32(int8(q))*d)
			}
		}
	case gguf.Q4_0:
		for i := 0; i < len(b); i += 18 {
			d := f16ToF32(le.Uint16(b[i:]))
			for _, q := range b[i+2 : i+18] {
				vals = append(vals, float32(int(q&15)-8)*d, float32(int(q>>4)-8)*d)
			}
		}
	}
	var sum, ss float64
	for _, v := range vals {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("%s: non-finite weight", typ)
		}
		sum += float64(v)
		ss += float64(v) * float64(v)
	}
	n := float64(len(vals))
	mean, std := sum/n, math.Sqrt(ss/n)
	want := 1 / math.Sqrt(float64(Tiny.Embd))
	if math.Abs(mean) > want/10 || std < want*0.8 || std > want*1.2 {
		t.Errorf("%s: mean %g, std %g, want about 0 and %g", typ, mean, std, want)
	}
}

func TestRandomLlamaDeterministic(t *testing.T) {
	hash := func(seed int64) [32]byte {
		kvs, tensors, err := RandomLlama(Tiny, gguf.Q4_0, seed)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if err := gguf.Write(h, kvs, tensors); err != nil {
			t.Fatal(err)
		}
		// Writing the same tensors again gives the same bytes.
		h2 := sha256.New()
		if err := gguf.Write(h2, kvs, tensors); err != nil || !bytes.Equal(h.Sum(nil), h2.Sum(nil)) {
			t.Errorf("second write differs (%v)", err)
		}
		return [32]byte(h.Sum(nil))
	}
	if hash(1) != hash(1) {
		t.Error("same seed, different files")
	}
	if hash(1) == hash(2) {
		t.Error("different seeds, same file")
	}
}

func TestRandomLlama1BLayout(t *testing.T) {
	kvs, tensors, err := RandomLlama(Llama1B, gguf.Q4_0, 1)
	if err != nil {
		t.Fatal(err)
	}
	var size, params uint64
	for _, ti := range tensors {
		s, err := ti.Size()
		if err != nil {
			t.Fatal(err)
		}
		size += s
		n, _, _ := gguf.TensorSize(ti.Type, ti.Dims)
		params += n
	}
	if params != Llama1B.Params() || params < 1_000_000_000 || params > 1_200_000_000 {
		t.Errorf("%d parameters", params)
	}
	if size < 550<<20 || size > 700<<20 {
		t.Errorf("%d bytes of tensor data", size)
	}
	for _, kv := range kvs {
		if kv.Key == "tokenizer.ggml.tokens" {
			toks := kv.Value.([]string)
			seen := map[string]bool{}
			for _, tok := range toks {
				if seen[tok] {
					t.Fatalf("duplicate token %q", tok)
				}
				seen[tok] = true
			}
			if len(toks) != Llama1B.Vocab {
				t.Errorf("%d tokens", len(toks))
			}
			// Every piece's prefixes are tokens, so merging can reach it.
			for _, tok := range toks[firstPiece:] {
				for i := range tok {
					if i > 0 && !seen[tok[:i]] {
						t.Fatalf("prefix %q of %q is not a token", tok[:i], tok)
					}
				}
			}
		}
	}
}

func TestShapeValidate(t *testing.T) {
	for _, s := range []Shape{Llama1B, Small, Tiny} {
		for _, typ := range []gguf.TensorType{gguf.F32, gguf.F16, gguf.Q8_0, gguf.Q4_0} {
			if err := s.Validate(typ); err != nil {
				t.Errorf("%+v %s: %v", s, typ, err)
			}
		}
	}
	bad := Tiny
	bad.FF = 100
	if err := bad.Validate(gguf.Q4_0); err == nil {
		t.Error("FF 100 accepted for Q4_0")
	}
	if err := bad.Validate(gguf.F16); err != nil {
		t.Errorf("FF 100 refused for F16: %v", err)
	}
	if err := Tiny.Validate(gguf.Q4_K); err == nil {
		t.Error("Q4_K accepted")
	}
	bad = Tiny
	bad.HeadsKV = 3
	if err := bad.Validate(gguf.F32); err == nil {
		t.Error("3 KV heads of 4 accepted")
	}
	bad = Tiny
	bad.Vocab = 100
	if _, _, err := RandomLlama(bad, gguf.F32, 1); err == nil {
		t.Error("vocabulary of 100 accepted")
	}
}

func TestSyntheticVocabTokenizes(t *testing.T) {
	v, err := syntheticVocab(Small.Vocab)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.tokens) != Small.Vocab {
		t.Fatalf("%d tokens", len(v.tokens))
	}
	for _, text := range []string{"the quick brown fox", "Hello, World! 123", "naïve café ☕"} {
		toks := spmTokenize(v.tokens, v.scores, text)
		var b []byte
		for _, tok := range toks {
			var x byte
			if _, err := fmt.Sscanf(tok, "<0x%02X>", &x); err == nil && len(tok) == 6 {
				b = append(b, x)
			} else {
				b = append(b, strings.ReplaceAll(tok, spaceMark, " ")...)
			}
		}
		if string(b) != " "+text || !utf8.Valid(b) {
			t.Errorf("%q round trips to %q via %q", text, b, toks)
		}
	}
}

func TestF16(t *testing.T) {
	for _, c := range []struct {
		f float32
		h uint16
	}{
		{0, 0}, {1, 0x3C00}, {-2, 0xC000}, {0.5, 0x3800}, {65504, 0x7BFF}, {65520, 0x7C00},
		{1e9, 0x7C00}, {float32(math.Inf(-1)), 0xFC00}, {6.1035156e-05, 0x0400},
		{5.9604645e-08, 0x0001}, {1e-7, 0x0002}, {2e-8, 0}, {1.0009765625, 0x3C01},
		{1.00048828125, 0x3C00}, // halfway: rounds to even
		{1.00146484375, 0x3C02}, // halfway: rounds to even
	} {
		if got := f16(c.f); got != c.h {
			t.Errorf("f16(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	if h := f16(float32(math.NaN())); h&0x7C00 != 0x7C00 || h&0x3FF == 0 {
		t.Errorf("NaN = %#04x", h)
	}
	// Every finite half survives a round trip through float32.
	for h := 0; h < 1<<16; h++ {
		if h&0x7C00 == 0x7C00 {
			continue
		}
		if got := f16(f16ToF32(uint16(h))); got != uint16(h) && !(h == 0x8000 && got == 0x8000) {
			t.Fatalf("round trip %#04x -> %g -> %#04x", h, f16ToF32(uint16(h)), got)
		}
	}
}
