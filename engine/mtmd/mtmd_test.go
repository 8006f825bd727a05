package mtmd_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/mtmd"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// The generated vision model (testmodels.WriteVision), written once.
var (
	dir       string
	textPath  string
	projPath  string
	writeOnce sync.Once
	writeErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

func files(t testing.TB) {
	t.Helper()
	writeOnce.Do(func() {
		dir, writeErr = os.MkdirTemp("", "mtmd-test-")
		if writeErr != nil {
			return
		}
		textPath = filepath.Join(dir, "vision.gguf")
		projPath = filepath.Join(dir, "vision.mmproj.gguf")
		writeErr = testmodels.WriteVision(textPath, projPath)
	})
	if writeErr != nil {
		t.Fatal(writeErr)
	}
}

func loadText(t testing.TB) *engine.Model {
	t.Helper()
	files(t)
	m, err := engine.LoadModel(textPath, engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// load gives the text model and its projector, closed at the end of the
// test (projector first).
func load(t testing.TB) (*engine.Model, *mtmd.Projector) {
	t.Helper()
	m := loadText(t)
	p, err := mtmd.Load(projPath, m, mtmd.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return m, p
}

// image is a w×h RGB image whose pixels depend on seed.
func image(t testing.TB, w, h int, seed byte) *mtmd.Media {
	t.Helper()
	rgb := make([]byte, 3*w*h)
	for i := range rgb {
		rgb[i] = byte(i*7) ^ seed*31 + byte(i/(3*w))*seed
	}
	img, err := mtmd.NewImage(rgb, w, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(img.Close)
	return img
}

func tokenize(t testing.TB, p *mtmd.Projector, text string, media ...*mtmd.Media) []mtmd.Chunk {
	t.Helper()
	chunks, err := p.Tokenize(text, media, true, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mtmd.CloseChunks(chunks) })
	return chunks
}

func TestLoad(t *testing.T) {
	m, p := load(t)
	if !p.Vision() || p.Audio() || p.AudioRate() != 0 || p.NonCausal() || p.MRoPE() {
		t.Errorf("vision %v audio %v rate %d non-causal %v mrope %v, want a vision-only causal projector",
			p.Vision(), p.Audio(), p.AudioRate(), p.NonCausal(), p.MRoPE())
	}
	if p.EmbdSize() != m.EmbdSize() || p.EmbdSize() != testmodels.VisionText.Embd {
		t.Errorf("EmbdSize %d, model %d, want %d", p.EmbdSize(), m.EmbdSize(), testmodels.VisionText.Embd)
	}
	if p.Type() != "mlp" {
		t.Errorf("Type %q, want mlp", p.Type())
	}
	if mtmd.Marker() != "<__media__>" {
		t.Errorf("Marker %q", mtmd.Marker())
	}
	// GPU: the first GPU backend when one is loaded, else the CPU.
	g, err := mtmd.Load(projPath, m, mtmd.Options{GPU: true})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	info, err := os.Stat(projPath)
	if err != nil || info.Size() == 0 {
		t.Fatalf("projector file: %v", err)
	}
}

func checkText(t *testing.T, m *engine.Model, c mtmd.Chunk, want string, bos bool) {
	t.Helper()
	if c.Media != nil {
		t.Fatalf("chunk is media, want text %q", want)
	}
	toks, err := m.Tokenize(want, bos, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(toks) == 0 || len(toks) != len(c.Text) {
		t.Fatalf("text chunk %v, want %q = %v", c.Text, want, toks)
	}
	for i := range toks {
		if toks[i] != c.Text[i] {
			t.Fatalf("text chunk %v, want %q = %v", c.Text, want, toks)
		}
	}
}

func checkMedia(t *testing.T, c mtmd.Chunk, img *mtmd.Media) {
	t.Helper()
	mc := c.Media
	if mc == nil || c.Text != nil {
		t.Fatalf("chunk %+v, want a media chunk", c)
	}
	n := testmodels.VisionTokens
	if mc.NTokens != n || mc.NPos != n || mc.NX != n || mc.NY != 1 || mc.Audio {
		t.Errorf("media chunk %d tokens, %d positions, %d×%d, audio %v; want %d tokens and positions (%d×1), image",
			mc.NTokens, mc.NPos, mc.NX, mc.NY, mc.Audio, n, n)
	}
	if mc.Hash != img.Hash() {
		t.Errorf("media chunk hash %x, want the image's %x", mc.Hash, img.Hash())
	}
}

// TestTokenize: the prompt splits at each marker into text, media, text;
// an image takes (image size / patch size)² tokens and as many positions;
// the text chunks are the model's own tokens of the text between (BOS on
// the first).
func TestTokenize(t *testing.T) {
	m, p := load(t)
	a, b := image(t, 40, 24, 1), image(t, 8, 8, 2)

	chunks := tokenize(t, p, "look at "+mtmd.Marker()+" and tell", a)
	if len(chunks) != 3 {
		t.Fatalf("%d chunks, want text, image, text", len(chunks))
	}
	checkText(t, m, chunks[0], "look at ", true)
	checkMedia(t, chunks[1], a)
	// The text after a marker is tokenized on its own (no BOS).
	toks, _ := m.Tokenize(" and tell", false, true)
	if len(chunks[2].Text) != len(toks) {
		t.Errorf("last chunk %v, want %v", chunks[2].Text, toks)
	}

	chunks = tokenize(t, p, "one "+mtmd.Marker()+" two <__image__> three", a, b)
	if len(chunks) != 5 {
		t.Fatalf("%d chunks, want text, image, text, image, text", len(chunks))
	}
	checkText(t, m, chunks[0], "one ", true)
	checkMedia(t, chunks[1], a)
	checkMedia(t, chunks[3], b)
	if chunks[2].Media != nil || chunks[4].Media != nil {
		t.Error("chunks 2 and 4 should be text")
	}

	// A marker first: BOS comes in a text chunk of its own.
	chunks = tokenize(t, p, mtmd.Marker(), a)
	if len(chunks) != 2 || len(chunks[0].Text) != 1 || chunks[0].Text[0] != m.BOS() {
		t.Fatalf("chunks %+v, want [BOS] then the image", chunks)
	}
	checkMedia(t, chunks[1], a)
	// Without special tokens, only the image.
	plain, err := p.Tokenize(mtmd.Marker(), []*mtmd.Media{a}, false, true)
	if err != nil {
		t.Fatal(err)
	}
	defer mtmd.CloseChunks(plain)
	if len(plain) != 1 || plain[0].Media == nil {
		t.Fatalf("chunks %+v, want the image alone", plain)
	}
}

func encode(t *testing.T, p *mtmd.Projector, img *mtmd.Media) []float32 {
	t.Helper()
	chunks := tokenize(t, p, mtmd.Marker(), img)
	mc := chunks[len(chunks)-1].Media
	e, err := p.Encode(mc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(e) != mc.NTokens*p.EmbdSize() {
		t.Fatalf("%d floats, want %d×%d", len(e), mc.NTokens, p.EmbdSize())
	}
	for i, v := range e {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("embedding value %d is %v", i, v)
		}
	}
	return e
}

// near: a and b are equal within tol of the largest magnitude.
func near(a, b []float32, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	var big float64
	for _, v := range a {
		big = max(big, math.Abs(float64(v)))
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > tol*big {
			return false
		}
	}
	return true
}

func same(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEncode: an image encodes to NTokens × EmbdSize finite floats; the
// same pixels (another Media) give the same hash and the same embeddings,
// other pixels other ones.
func TestEncode(t *testing.T) {
	_, p := load(t)
	a1, a2, b := image(t, 32, 32, 1), image(t, 32, 32, 1), image(t, 32, 32, 2)
	if a1.Hash() != a2.Hash() || a1.Hash() == b.Hash() {
		t.Fatalf("hashes %x %x %x: want the first two equal, the third different", a1.Hash(), a2.Hash(), b.Hash())
	}
	e1, e2, eb := encode(t, p, a1), encode(t, p, a2), encode(t, p, b)
	if !same(e1, e2) {
		t.Error("the same image encoded twice gives different embeddings")
	}
	if same(e1, eb) {
		t.Error("different images give the same embeddings")
	}
	// The thread count changes how the work is split, not the result.
	chunks := tokenize(t, p, mtmd.Marker(), a1)
	e3, err := p.Encode(chunks[len(chunks)-1].Media, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !near(e1, e3, 1e-5) {
		t.Error("the same image encoded with 3 threads gives other embeddings than with 1")
	}
	if n := p.LastEncodeNice(); n != mtmd.EncodeNice {
		t.Errorf("the encode ran at nice %d, want %d", n, mtmd.EncodeNice)
	}
	var norm float64
	for _, v := range e1 {
		norm += float64(v) * float64(v)
	}
	if rms := math.Sqrt(norm / float64(len(e1))); rms < 0.05 || rms > 20 {
		t.Errorf("embedding RMS %.3g, want order 1", rms)
	}
	// Same bytes, other shape: another hash.
	rgb := make([]byte, 3*12)
	x, err := mtmd.NewImage(rgb, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	y, err := mtmd.NewImage(rgb, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	if x.Hash() == y.Hash() {
		t.Error("a 3×4 and a 4×3 image of the same bytes have the same hash")
	}
}

// decodeWithImage decodes "describe <image> please" (text tokens, the
// image's embeddings, text tokens) into a fresh context and returns the
// logits after the last token.
func decodeWithImage(t *testing.T, m *engine.Model, p *mtmd.Projector, img *mtmd.Media) []float32 {
	t.Helper()
	chunks := tokenize(t, p, "<|im_start|>user\ndescribe "+mtmd.Marker()+" please<|im_end|>\n<|im_start|>assistant\n", img)
	ctx, err := m.NewContext(engine.ContextParams{NumCtx: 256, NumBatch: 64, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	batch, err := engine.NewBatch(64)
	if err != nil {
		t.Fatal(err)
	}
	defer batch.Close()
	eb, err := m.NewEmbdBatch(64)
	if err != nil {
		t.Fatal(err)
	}
	defer eb.Close()
	pos, last := 0, -1
	for ci, c := range chunks {
		if c.Media != nil {
			e, err := p.Encode(c.Media, 0)
			if err != nil {
				t.Fatal(err)
			}
			eb.Clear()
			w := p.EmbdSize()
			for i := range c.Media.NTokens {
				if _, err := eb.Add(e[i*w:(i+1)*w], pos+i, 0, false); err != nil {
					t.Fatal(err)
				}
			}
			if err := ctx.DecodeEmbd(eb); err != nil {
				t.Fatal(err)
			}
			pos += c.Media.NPos
			continue
		}
		batch.Clear()
		for i, tok := range c.Text {
			idx := batch.Add(tok, pos, 0, ci == len(chunks)-1 && i == len(c.Text)-1)
			if ci == len(chunks)-1 && i == len(c.Text)-1 {
				last = idx
			}
			pos++
		}
		if err := ctx.Decode(batch); err != nil {
			t.Fatal(err)
		}
	}
	if last < 0 {
		t.Fatal("the prompt does not end with text")
	}
	logits := append([]float32(nil), ctx.Logits(last)...)
	if len(logits) != m.VocabSize() {
		t.Fatalf("%d logits, want %d", len(logits), m.VocabSize())
	}
	for _, v := range logits {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("logit %v", v)
		}
	}
	return logits
}

// TestDecodeImage: the embeddings are usable input of the text model:
// decoded between text tokens they give finite logits, the same for the
// same image and different ones for another image.
func TestDecodeImage(t *testing.T) {
	m, p := load(t)
	a, a2, b := image(t, 32, 32, 1), image(t, 32, 32, 1), image(t, 64, 48, 9)
	la, la2, lb := decodeWithImage(t, m, p, a), decodeWithImage(t, m, p, a2), decodeWithImage(t, m, p, b)
	if !same(la, la2) {
		t.Error("the same image gives different logits")
	}
	if same(la, lb) {
		t.Error("another image gives the same logits: the image does not reach the model")
	}
}

// TestWorstValues: bad media and prompts are errors, not aborts.
func TestWorstValues(t *testing.T) {
	_, p := load(t)
	img := image(t, 4, 4, 1)
	M := mtmd.Marker()
	for _, c := range []struct {
		name  string
		text  string
		media []*mtmd.Media
	}{
		{"no marker", "hello", []*mtmd.Media{img}},
		{"marker without media", "hello " + M, nil},
		{"two markers, one image", M + M, []*mtmd.Media{img}},
		{"legacy marker counts", M + "<__image__>", []*mtmd.Media{img}},
		{"nil media", M, []*mtmd.Media{nil}},
		{"NUL byte", "a\x00" + M, []*mtmd.Media{img}},
	} {
		if chunks, err := p.Tokenize(c.text, c.media, true, true); err == nil {
			mtmd.CloseChunks(chunks)
			t.Errorf("%s: no error", c.name)
		}
	}
	closed := image(t, 4, 4, 3)
	closed.Close()
	if _, err := p.Tokenize(M, []*mtmd.Media{closed}, true, true); err == nil {
		t.Error("closed media: no error")
	}

	for _, c := range []struct {
		name string
		n    int
		w, h int
	}{
		{"0×0", 0, 0, 0},
		{"negative", 3, -1, -1},
		{"width 0", 0, 0, 5},
		{"side too large", 3 * (mtmd.MaxImageSide + 1), mtmd.MaxImageSide + 1, 1},
		{"too many pixels", 0, mtmd.MaxImageSide, mtmd.MaxImageSide},
		{"huge", 0, math.MaxInt32, math.MaxInt32},
		{"overflowing", 0, 1 << 62, 1 << 62},
		{"short rgb", 3*4*4 - 1, 4, 4},
		{"long rgb", 3*4*4 + 1, 4, 4},
		{"rgb for 2D, not 3 channels", 4 * 4, 4, 4},
	} {
		if m, err := mtmd.NewImage(make([]byte, c.n), c.w, c.h); err == nil {
			m.Close()
			t.Errorf("NewImage %s: no error", c.name)
		}
	}
	for name, pcm := range map[string][]float32{
		"empty": nil,
		"NaN":   {0, float32(math.NaN())},
		"Inf":   {float32(math.Inf(1))},
	} {
		if m, err := mtmd.NewAudio(pcm); err == nil {
			m.Close()
			t.Errorf("NewAudio %s: no error", name)
		}
	}
	// Audio to a vision-only projector.
	clip, err := mtmd.NewAudio(make([]float32, 1600))
	if err != nil {
		t.Fatal(err)
	}
	defer clip.Close()
	if !clip.Audio() {
		t.Error("NewAudio gives a non-audio media")
	}
	if chunks, err := p.Tokenize(M, []*mtmd.Media{clip}, true, true); err == nil {
		mtmd.CloseChunks(chunks)
		t.Error("audio to a vision projector: no error")
	}

	// Encode: nil, closed, another projector's chunk, a closed projector.
	if _, err := p.Encode(nil, 0); err == nil {
		t.Error("Encode(nil): no error")
	}
	chunks, err := p.Tokenize(M, []*mtmd.Media{img}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	mc := chunks[0].Media
	m2 := loadText(t)
	p2, err := mtmd.Load(projPath, m2, mtmd.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p2.Encode(mc, 0); err == nil {
		t.Error("Encode of another projector's chunk: no error")
	}
	// Thread counts out of range are refused before llama.cpp sees them.
	for _, n := range []int{-1, math.MinInt, engine.ThreadLimit() + 1, math.MaxInt} {
		if _, err := p.Encode(mc, n); err == nil {
			t.Errorf("Encode with %d threads: no error", n)
		}
	}
	p2.Close()
	p2.Close() // twice is harmless
	if _, err := p2.Encode(mc, 0); err == nil {
		t.Error("Encode on a closed projector: no error")
	}
	if _, err := p2.Tokenize(M, []*mtmd.Media{img}, true, true); !errors.Is(err, mtmd.ErrClosed) {
		t.Errorf("Tokenize on a closed projector: %v, want ErrClosed", err)
	}
	mc.Close()
	mc.Close()
	if _, err := p.Encode(mc, 0); err == nil {
		t.Error("Encode of a closed chunk: no error")
	}
	// The smallest image and extreme shapes are fine.
	for _, wh := range [][2]int{{1, 1}, {1000, 1}, {1, 777}} {
		encode(t, p, image(t, wh[0], wh[1], 4))
	}
}

// badProjector writes the test projector with edits to its metadata and
// tensors.
func badProjector(t *testing.T, name string, projDim int, editKV func([]gguf.KV) []gguf.KV, editT func([]gguf.Tensor) []gguf.Tensor) string {
	t.Helper()
	kvs, tensors := testmodels.VisionProjector(projDim)
	if editKV != nil {
		kvs = editKV(kvs)
	}
	if editT != nil {
		tensors = editT(tensors)
	}
	path := filepath.Join(t.TempDir(), name+".gguf")
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		t.Fatal(err)
	}
	return path
}

func setKV(key string, v any) func([]gguf.KV) []gguf.KV {
	return func(kvs []gguf.KV) []gguf.KV { return gguf.SetKV(kvs, key, v) }
}

func delKV(key string) func([]gguf.KV) []gguf.KV {
	return func(kvs []gguf.KV) []gguf.KV { return gguf.DeleteKV(kvs, key) }
}

func dropTensor(name string) func([]gguf.Tensor) []gguf.Tensor {
	return func(ts []gguf.Tensor) []gguf.Tensor {
		var out []gguf.Tensor
		for _, x := range ts {
			if x.Name != name {
				out = append(out, x)
			}
		}
		return out
	}
}

// reshape gives a tensor other dims of the same element count.
func reshape(name string, dims ...uint64) func([]gguf.Tensor) []gguf.Tensor {
	return func(ts []gguf.Tensor) []gguf.Tensor {
		for i := range ts {
			if ts[i].Name == name {
				ts[i].Dims = dims
			}
		}
		return ts
	}
}

// TestBadProjector: a missing, corrupt or truncated file, a header
// clip.cpp would assert on, tensors its graph cannot use and a projector
// made for another model are all load errors; the process goes on.
func TestBadProjector(t *testing.T) {
	m := loadText(t)
	tmp := t.TempDir()
	data, err := os.ReadFile(projPath)
	if err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(tmp, "garbage.gguf")
	os.WriteFile(garbage, []byte("this is not a GGUF file at all, just text"), 0o644)
	truncated := filepath.Join(tmp, "truncated.gguf")
	os.WriteFile(truncated, data[:len(data)/2], 0o644)
	header := filepath.Join(tmp, "header.gguf")
	os.WriteFile(header, data[:200], 0o644)
	empty := filepath.Join(tmp, "empty.gguf")
	os.WriteFile(empty, nil, 0o644)
	corrupt := filepath.Join(tmp, "corrupt.gguf")
	bad := append([]byte(nil), data...)
	for i := 24; i < 64; i++ { // the tensor and metadata counts and the first key
		bad[i] = 0xff
	}
	os.WriteFile(corrupt, bad, 0o644)

	cases := []struct {
		name, path string
		want       error
		text       string // in the message
	}{
		{"missing", filepath.Join(tmp, "nope.gguf"), mtmd.ErrNotFound, ""},
		{"garbage", garbage, nil, ""},
		{"empty", empty, nil, ""},
		{"truncated data", truncated, nil, "past the end"},
		{"truncated header", header, nil, ""},
		{"corrupt counts", corrupt, nil, ""},
		{"image_size a string", badProjector(t, "a", 64, setKV("clip.vision.image_size", "32"), nil), gguf.ErrInvalid, "image_size"},
		{"image_size int32", badProjector(t, "b", 64, setKV("clip.vision.image_size", int32(32)), nil), gguf.ErrInvalid, "image_size"},
		{"image_size 0", badProjector(t, "c", 64, setKV("clip.vision.image_size", uint32(0)), nil), gguf.ErrInvalid, "image_size"},
		{"patch larger than image", badProjector(t, "d", 64, setKV("clip.vision.patch_size", uint32(64)), nil), gguf.ErrInvalid, "patch_size"},
		{"no image_mean", badProjector(t, "e", 64, delKV("clip.vision.image_mean"), nil), gguf.ErrInvalid, "image_mean"},
		{"image_mean of 2", badProjector(t, "f", 64, setKV("clip.vision.image_mean", []float32{0.5, 0.5}), nil), gguf.ErrInvalid, "image_mean"},
		{"image_std ints", badProjector(t, "g", 64, setKV("clip.vision.image_std", []int32{1, 1, 1}), nil), gguf.ErrInvalid, "image_std"},
		{"image_std 0", badProjector(t, "h", 64, setKV("clip.vision.image_std", []float32{0.5, 0, 0.5}), nil), gguf.ErrInvalid, "image_std"},
		{"no encoder", badProjector(t, "i", 64, setKV("clip.has_vision_encoder", false), nil), gguf.ErrInvalid, "encoder"},
		{"encoder flag a number", badProjector(t, "j", 64, setKV("clip.has_vision_encoder", uint32(1)), nil), gguf.ErrInvalid, "has_vision_encoder"},
		{"unknown type", badProjector(t, "k", 64, setKV("clip.projector_type", "nonsense"), nil), gguf.ErrInvalid, "nonsense"},
		{"audio type glma", badProjector(t, "l", 64, func(kvs []gguf.KV) []gguf.KV {
			kvs = gguf.SetKV(kvs, "clip.has_audio_encoder", true)
			kvs = gguf.DeleteKV(kvs, "clip.projector_type")
			kvs = gguf.SetKV(kvs, "clip.vision.projector_type", "mlp")
			return gguf.SetKV(kvs, "clip.audio.projector_type", "glma")
		}, nil), gguf.ErrInvalid, "glma"},
		{"heads do not divide", badProjector(t, "m", 64, setKV("clip.vision.attention.head_count", uint32(5)), nil), gguf.ErrInvalid, "head"},
		{"no block count", badProjector(t, "n", 64, delKV("clip.vision.block_count"), nil), gguf.ErrInvalid, "block_count"},
		{"epsilon NaN", badProjector(t, "o", 64, setKV("clip.vision.attention.layer_norm_epsilon", float32(math.NaN())), nil), gguf.ErrInvalid, "epsilon"},
		{"feature layer past the blocks", badProjector(t, "p", 64, setKV("clip.vision.feature_layer", []int32{9}), nil), gguf.ErrInvalid, "feature"},
		{"odd pinpoints", badProjector(t, "q", 64, setKV("clip.vision.image_grid_pinpoints", []int32{32}), nil), gguf.ErrInvalid, "pinpoints"},
		{"no mm.2", badProjector(t, "r", 64, nil, dropTensor("mm.2.weight")), gguf.ErrInvalid, "mm.2.weight"},
		{"no mm.2 bias", badProjector(t, "s", 64, nil, dropTensor("mm.2.bias")), gguf.ErrInvalid, "mm.2.bias"},
		{"no attn_q", badProjector(t, "u", 64, nil, dropTensor("v.blk.0.attn_q.weight")), gguf.ErrInvalid, "attn_q"},
		{"no position embedding", badProjector(t, "v", 64, nil, dropTensor("v.position_embd.weight")), gguf.ErrInvalid, "position_embd"},
		{"too few positions", badProjector(t, "w", 64, nil, func(ts []gguf.Tensor) []gguf.Tensor {
			for i := range ts {
				if ts[i].Name == "v.position_embd.weight" {
					ts[i].Dims = []uint64{32, testmodels.VisionTokens} // one short: the class embedding
					ts[i].Data = ts[i].Data[:4*32*testmodels.VisionTokens]
				}
			}
			return ts
		}), gguf.ErrInvalid, "positions needed"},
		{"patch embedding shape", badProjector(t, "x", 64, nil, reshape("v.patch_embd.weight", 8, 8, 32, 3)), gguf.ErrInvalid, "patch_embd"},
		{"ffn shape", badProjector(t, "y", 64, nil, reshape("v.blk.1.ffn_up.weight", 48, 32)), gguf.ErrInvalid, "ffn"},
		{"mm.0 shape", badProjector(t, "z", 64, nil, reshape("mm.0.weight", 64, 32)), gguf.ErrInvalid, "mm.0"},
		{"projection for another model", badProjector(t, "other", 32, nil, nil), gguf.ErrInvalid, "not this model's"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := mtmd.Load(c.path, m, mtmd.Options{Threads: 1})
			if err == nil {
				p.Close()
				t.Fatal("loaded")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %v, want %v", err, c.want)
			}
			if c.text != "" && !strings.Contains(err.Error(), c.text) {
				t.Errorf("error %q does not mention %q", err, c.text)
			}
		})
	}
	// No model, a closed model, bad threads.
	if _, err := mtmd.Load(projPath, nil, mtmd.Options{}); err == nil {
		t.Error("nil model: no error")
	}
	closed, err := engine.LoadModel(textPath, engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if _, err := mtmd.Load(projPath, closed, mtmd.Options{}); err == nil {
		t.Error("closed model: no error")
	}
	for _, n := range []int{-1, engine.ThreadLimit() + 1} {
		if _, err := mtmd.Load(projPath, m, mtmd.Options{Threads: n}); err == nil {
			t.Errorf("threads %d: no error", n)
		}
	}
	// After all that, the good projector still loads and encodes.
	p, err := mtmd.Load(projPath, m, mtmd.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	encode(t, p, image(t, 16, 16, 5))
}

// TestConcurrent: Tokenize and Encode from several goroutines (the race
// detector watches), then Close.
func TestConcurrent(t *testing.T) {
	_, p := load(t)
	imgs := []*mtmd.Media{image(t, 32, 32, 1), image(t, 20, 30, 2)}
	want := make([][]float32, len(imgs))
	for i, img := range imgs {
		want[i] = encode(t, p, img)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i := g % len(imgs)
			chunks, err := p.Tokenize(mtmd.Marker(), imgs[i:i+1], false, false)
			if err != nil {
				errs <- err
				return
			}
			defer mtmd.CloseChunks(chunks)
			e, err := p.Encode(chunks[0].Media, 0)
			if err != nil {
				errs <- err
				return
			}
			if !same(e, want[i]) {
				errs <- errors.New("concurrent encode differs")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A prompt with a long text part is tokenized part by part (the model's
// Tokenize, which cuts long texts into pieces) into the chunks one
// mtmd_tokenize call makes of it: the same text tokens, BOS and media
// chunks in the same places, with markers first, last and side by side.
// A megabyte of newlines beside an image is tokenized.
func TestTokenizeLongParts(t *testing.T) {
	_, p := load(t)
	a, b := image(t, 40, 24, 1), image(t, 8, 8, 2)
	M := mtmd.Marker()
	long := strings.Repeat("Once upon a time there was a little girl. \n", 200)
	for i, text := range []string{
		long + M + " and tell",
		"look at " + M + long + M + long,
		M + long + M,
		long + M + M + "<|im_end|>" + long,
	} {
		media := []*mtmd.Media{a, b}[:strings.Count(text, M)]
		for _, special := range []bool{true, false} {
			got, err := p.TokenizeParts(text, media, special, true)
			if err != nil {
				t.Fatal(err)
			}
			want, err := p.TokenizeWhole(text, media, special, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("text %d: %d chunks by parts, %d whole", i, len(got), len(want))
			}
			for j := range got {
				g, w := got[j], want[j]
				if (g.Media == nil) != (w.Media == nil) || g.Media != nil && (g.Media.NTokens != w.Media.NTokens || g.Media.Hash != w.Media.Hash) || !slices.Equal(g.Text, w.Text) {
					t.Fatalf("text %d, chunk %d differs (add special %v)", i, j, special)
				}
			}
			mtmd.CloseChunks(got)
			mtmd.CloseChunks(want)
		}
	}
	chunks := tokenize(t, p, strings.Repeat("\n", 1<<20)+M, a)
	if len(chunks) != 2 || chunks[1].Media == nil || len(chunks[0].Text) < 1<<20 {
		t.Fatalf("a megabyte of newlines and an image: %d chunks", len(chunks))
	}
}
