package mtmd

// #cgo CXXFLAGS: -std=c++17
// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/models/gguf"
)

// Errors. Each failure to load a projector wraps one of these (or
// gguf.ErrInvalid / gguf.ErrNotGGUF for a file refused by its header).
var (
	ErrNotFound   = errors.New("projector file not found")
	ErrLoadFailed = errors.New("llama.cpp could not load the projector")
	ErrClosed     = errors.New("projector is closed")
)

// Options are a projector's load-time settings.
type Options struct {
	// Threads encode with this many CPU threads (0: engine.DefaultThreads;
	// at most engine.ThreadLimit).
	Threads int
	// GPU runs the encoder on the first GPU backend when there is one.
	GPU bool
}

// Projector is a loaded multimodal projector (mmproj) bound to its text
// model. It is safe for concurrent use: Tokenize calls run in parallel,
// Encode calls one at a time (llama.cpp keeps one output buffer), Close
// waits for both. The text model must outlive it.
type Projector struct {
	mu        sync.RWMutex
	c         *C.mtmd_context
	model     *engine.Model
	embd      int
	vision    bool
	audio     bool
	nonCausal bool
	mrope     bool
	audioRate int
	typ       string
	threads   int // Options.Threads, resolved
	lastNice  int // the nice value the last encode ran at (tests)
}

var logOnce sync.Once

// Load loads the projector at path for model. The file's header is
// checked first (see validate.go): a file llama.cpp would abort on is
// refused with an error, as is a projector whose embeddings do not fit
// the model.
func Load(path string, model *engine.Model, o Options) (*Projector, error) {
	engine.Init("")
	logOnce.Do(func() { C.tp_mtmd_log_init() })
	cm := nativeModel(model)
	if cm == nil {
		return nil, fmt.Errorf("projector %s: the text model is not loaded", path)
	}
	threads := o.Threads
	if threads == 0 {
		threads = engine.DefaultThreads()
	}
	if err := engine.CheckRange("projector threads", int64(threads), 1, int64(engine.ThreadLimit())); err != nil {
		return nil, fmt.Errorf("projector %s: %w", path, err)
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("projector %s: %w", path, ErrNotFound)
		}
		return nil, fmt.Errorf("projector %s: %w", path, err)
	}
	f, err := gguf.ValidateFile(path)
	if err != nil {
		return nil, fmt.Errorf("projector: %w", err)
	}
	if err := checkProjector(f, model.EmbdSize()); err != nil {
		return nil, fmt.Errorf("projector %s: %w", path, err)
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	takeLogErrors()
	c := C.tp_mtmd_init(cpath, (*C.struct_llama_model)(cm), C.bool(o.GPU), C.int(threads))
	if c == nil {
		detail := strings.Join(takeLogErrors(), "; ")
		if detail == "" {
			detail = "see the server log"
		}
		return nil, fmt.Errorf("projector %s: %w: %s", path, ErrLoadFailed, detail)
	}
	p := &Projector{c: c, model: model, embd: model.EmbdSize(), threads: threads}
	p.vision = bool(C.mtmd_support_vision(c))
	p.audio = bool(C.mtmd_support_audio(c))
	p.nonCausal = bool(C.mtmd_decode_use_non_causal(c, nil)) // nil: an image chunk
	p.mrope = bool(C.mtmd_decode_use_mrope(c))
	if p.audio {
		p.audioRate = max(int(C.mtmd_get_audio_sample_rate(c)), 0)
	}
	if p.vision {
		p.typ = projectorType(f, "vision")
	} else {
		p.typ = projectorType(f, "audio")
	}
	return p, nil
}

// nativeModel is the model's llama_model pointer (engine.Model.Native),
// nil for a nil or closed model, cross-checked against the model's own
// answers before use.
func nativeModel(m *engine.Model) unsafe.Pointer {
	ptr := m.Native()
	if ptr == nil {
		return nil
	}
	cm := (*C.struct_llama_model)(ptr)
	if int(C.llama_model_n_embd_inp(cm)) != m.EmbdSize() ||
		int(C.llama_vocab_n_tokens(C.llama_model_get_vocab(cm))) != m.VocabSize() {
		return nil
	}
	return ptr
}

// Close frees the projector. It waits for Tokenize and Encode calls in
// flight; later calls return ErrClosed. Media chunks from it must be
// closed too (they hold no reference to it).
func (p *Projector) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c != nil {
		C.mtmd_free(p.c)
		p.c = nil
	}
}

// Vision reports whether the projector encodes images.
func (p *Projector) Vision() bool { return p.vision }

// Audio reports whether the projector encodes audio.
func (p *Projector) Audio() bool { return p.audio }

// NonCausal reports whether a media chunk's embeddings must be decoded
// with causal attention off (engine.Context.SetCausal(false); Gemma 3).
func (p *Projector) NonCausal() bool { return p.nonCausal }

// MRoPE reports whether the text model takes 2-D positions for images
// (Qwen2-VL): a media chunk then spans NPos positions, not NTokens.
func (p *Projector) MRoPE() bool { return p.mrope }

// AudioRate is the sample rate NewAudio's PCM must have, 0 without audio.
func (p *Projector) AudioRate() int { return p.audioRate }

// EmbdSize is the width of the embeddings Encode returns: the text
// model's input width.
func (p *Projector) EmbdSize() int { return p.embd }

// Type is the projector type clip.cpp runs (clip.projector_type, e.g.
// "mlp", "gemma3").
func (p *Projector) Type() string { return p.typ }

// Marker is the text that stands for one media item in Tokenize's text.
func Marker() string { return C.GoString(C.mtmd_default_marker()) }

// legacyMarker is mtmd's old image marker, which mtmd_tokenize still
// turns into Marker(): Tokenize counts it as one.
const legacyMarker = "<__image__>"

// MaxTextBytes bounds Tokenize's text (llama_tokenize takes an int32
// length).
const MaxTextBytes = 1 << 30

// Chunk is one piece of a tokenized prompt: text tokens or one media
// chunk, never both.
type Chunk struct {
	Text  []engine.Token
	Media *MediaChunk
}

// MediaChunk is an image or audio chunk of a prompt, preprocessed and
// ready to Encode. It owns a copy of mtmd's chunk: Close frees it. It must
// not be used concurrently with its Close.
type MediaChunk struct {
	// NTokens is the number of embeddings Encode gives (rows of EmbdSize
	// floats).
	NTokens int
	// NPos is the number of positions the chunk takes in the sequence:
	// NTokens, except with M-RoPE where an image takes max(NX, NY).
	NPos int
	// NX and NY are an image's token grid (NX = NTokens, NY = 1 for
	// projectors without M-RoPE); 0 for audio.
	NX, NY int
	// Hash is the Hash of the Media it came from.
	Hash  [32]byte
	Audio bool

	c *C.mtmd_input_chunk
	p *Projector
}

// Close frees the chunk.
func (c *MediaChunk) Close() {
	if c != nil && c.c != nil {
		C.mtmd_input_chunk_free(c.c)
		c.c = nil
	}
}

// CloseChunks closes the media chunks of a Tokenize result.
func CloseChunks(chunks []Chunk) {
	for _, c := range chunks {
		c.Media.Close()
	}
}

// Tokenize splits text at each Marker() and tokenizes the text between
// (addSpecial: BOS/EOS as the vocabulary asks; parseSpecial: control
// tokens written in the text become their ids), with one media chunk (or
// several: audio longer than the encoder's window, sliced images) for each
// media item in order. The number of markers must equal len(media); each
// item must be of a kind the projector encodes. The caller closes the
// returned media chunks (CloseChunks).
func (p *Projector) Tokenize(text string, media []*Media, addSpecial, parseSpecial bool) ([]Chunk, error) {
	if len(text) > MaxTextBytes {
		return nil, fmt.Errorf("tokenize: text of %d bytes is too long (at most %d)", len(text), MaxTextBytes)
	}
	if strings.IndexByte(text, 0) >= 0 {
		return nil, errors.New("tokenize: the text holds a NUL byte")
	}
	text = strings.ReplaceAll(text, legacyMarker, Marker())
	if n := strings.Count(text, Marker()); n != len(media) {
		return nil, fmt.Errorf("tokenize: the text has %d media markers for %d media items", n, len(media))
	}
	for _, part := range strings.Split(text, Marker()) {
		if len(part) > longText {
			return p.tokenizeParts(text, media, addSpecial, parseSpecial, nil)
		}
	}
	return p.tokenize(text, media, addSpecial, parseSpecial)
}

// longText is the text part past which Tokenize tokenizes the parts
// itself, with the model's Tokenize: mtmd hands each part to
// llama_tokenize whole, and llama.cpp's tokenizers cost quadratic time
// on some long texts and overflow the stack on others (engine.Tokenize
// cuts them into pieces; see engine/tokcut.go).
const longText = 4 << 10

// tokenizeParts is Tokenize as mtmd does it (each text part tokenized
// alone, without BOS or EOS; each media item with its begin and end
// text; BOS before the first chunk and EOS after the last when
// addSpecial and the vocabulary asks; text tokens side by side in one
// chunk), with the text parts tokenized by the model's Tokenize.
//
// literal (with parseSpecial) are spans of text tokenized without special
// parsing (engine.Model.TokenizeLiteral).
func (p *Projector) tokenizeParts(text string, media []*Media, addSpecial, parseSpecial bool, literal [][2]int) ([]Chunk, error) {
	var out []Chunk
	addText := func(toks []engine.Token) {
		if len(toks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Media == nil {
			out[n-1].Text = append(out[n-1].Text, toks...)
			return
		}
		out = append(out, Chunk{Text: append([]engine.Token(nil), toks...)})
	}
	parts, starts := splitMarkers(text, literal)
	for i, part := range parts {
		var toks []engine.Token
		var err error
		if spans := within(literal, starts[i], starts[i]+len(part)); parseSpecial && len(spans) > 0 {
			toks, err = p.model.TokenizeLiteral(part, false, spans)
		} else {
			toks, err = p.model.Tokenize(part, false, parseSpecial)
		}
		if err != nil {
			CloseChunks(out)
			return nil, err
		}
		addText(toks)
		if i == len(media) {
			break
		}
		one, err := p.tokenize(Marker(), media[i:i+1], false, parseSpecial)
		if err != nil {
			CloseChunks(out)
			return nil, err
		}
		for _, c := range one {
			if c.Media != nil {
				out = append(out, c)
			} else {
				addText(c.Text)
			}
		}
	}
	if addSpecial && p.model.AddBOS() {
		bos := p.model.BOS()
		if len(out) > 0 && out[0].Media == nil {
			out[0].Text = append([]engine.Token{bos}, out[0].Text...)
		} else {
			out = append([]Chunk{{Text: []engine.Token{bos}}}, out...)
		}
	}
	if addSpecial && p.model.AddEOS() {
		addText([]engine.Token{p.model.EOS()})
	}
	return out, nil
}

// tokenize is one mtmd_tokenize call.
func (p *Projector) tokenize(text string, media []*Media, addSpecial, parseSpecial bool) ([]Chunk, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.c == nil {
		return nil, ErrClosed
	}
	var bitmaps **C.mtmd_bitmap
	if len(media) > 0 {
		arr := (**C.mtmd_bitmap)(C.calloc(C.size_t(len(media)), C.size_t(unsafe.Sizeof(uintptr(0)))))
		if arr == nil {
			return nil, errors.New("tokenize: out of memory")
		}
		defer C.free(unsafe.Pointer(arr))
		s := unsafe.Slice(arr, len(media))
		for i, m := range media {
			if m == nil || m.c == nil {
				return nil, fmt.Errorf("tokenize: media item %d is missing or closed", i)
			}
			if m.audio && !p.audio {
				return nil, fmt.Errorf("tokenize: media item %d is audio and the projector has no audio encoder", i)
			}
			if !m.audio && !p.vision {
				return nil, fmt.Errorf("tokenize: media item %d is an image and the projector has no vision encoder", i)
			}
			s[i] = m.c
		}
		bitmaps = arr
	}
	ctext := C.CString(text)
	defer C.free(unsafe.Pointer(ctext))
	takeLogErrors()
	var rc C.int32_t
	list := C.tp_mtmd_tokenize(p.c, ctext, C.bool(addSpecial), C.bool(parseSpecial), bitmaps, C.size_t(len(media)), &rc)
	if list == nil {
		detail := strings.Join(takeLogErrors(), "; ")
		switch rc {
		case 1:
			return nil, fmt.Errorf("tokenize: media markers do not match the %d media items: %s", len(media), detail)
		case 2:
			return nil, fmt.Errorf("tokenize: a media item could not be preprocessed: %s", detail)
		default:
			return nil, fmt.Errorf("tokenize: llama.cpp failed (%d): %s", int(rc), detail)
		}
	}
	defer C.mtmd_input_chunks_free(list)
	n := int(C.mtmd_input_chunks_size(list))
	out := make([]Chunk, 0, n)
	for i := 0; i < n; i++ {
		ch := C.mtmd_input_chunks_get(list, C.size_t(i))
		switch C.mtmd_input_chunk_get_type(ch) {
		case C.MTMD_INPUT_CHUNK_TYPE_TEXT:
			var nt C.size_t
			toks := C.mtmd_input_chunk_get_tokens_text(ch, &nt)
			t := make([]engine.Token, int(nt))
			if nt > 0 {
				copy(t, unsafe.Slice((*engine.Token)(unsafe.Pointer(toks)), int(nt)))
			}
			out = append(out, Chunk{Text: t})
		default:
			mc, err := p.mediaChunk(ch)
			if err != nil {
				CloseChunks(out)
				return nil, err
			}
			out = append(out, Chunk{Media: mc})
		}
	}
	return out, nil
}

func (p *Projector) mediaChunk(ch *C.mtmd_input_chunk) (*MediaChunk, error) {
	mc := &MediaChunk{
		NTokens: int(C.mtmd_input_chunk_get_n_tokens(ch)),
		NPos:    int(C.mtmd_input_chunk_get_n_pos(ch)),
		Audio:   C.mtmd_input_chunk_get_type(ch) == C.MTMD_INPUT_CHUNK_TYPE_AUDIO,
		p:       p,
	}
	if img := C.mtmd_input_chunk_get_tokens_image(ch); img != nil && mc.NTokens > 0 {
		// The grid: the last embedding's relative 2-D position under
		// M-RoPE; one row otherwise.
		mc.NX, mc.NY = mc.NTokens, 1
		if p.mrope {
			last := C.mtmd_image_tokens_get_decoder_pos(img, 0, C.size_t(mc.NTokens-1))
			mc.NX, mc.NY = int(last.x)+1, int(last.y)+1
		}
	}
	if id := C.mtmd_input_chunk_get_id(ch); id != nil {
		if b, err := hex.DecodeString(C.GoString(id)); err == nil && len(b) == len(mc.Hash) {
			copy(mc.Hash[:], b)
		}
	}
	if mc.NTokens <= 0 || mc.NPos <= 0 || mc.NTokens > engine.MaxEmbdFloats/max(p.embd, 1) {
		return nil, fmt.Errorf("tokenize: a media chunk of %d tokens (%d positions) cannot be encoded", mc.NTokens, mc.NPos)
	}
	mc.c = C.tp_chunk_copy(ch)
	if mc.c == nil {
		return nil, errors.New("tokenize: out of memory")
	}
	return mc, nil
}

// Threads is the number of CPU threads an encode uses by default
// (Options.Threads).
func (p *Projector) Threads() int { return p.threads }

// EncodeNice is the nice value an encode runs at: the lowest priority of
// Linux's normal policy. A decoding thread (nice 0) weighs about 70 times
// more, so it takes a core back from an encode within a scheduler tick,
// while the encode still progresses when other work keeps the cores busy
// (SCHED_IDLE would not: on a machine shared with other processes it
// starved image requests for good).
const EncodeNice = 19

// Encode runs the encoder on a media chunk of this projector and returns
// its embeddings: NTokens rows of EmbdSize floats, row after row,
// ready for an engine.EmbdBatch.
//
// The encode runs on a thread of its own that Go never sees, at
// EncodeNice (the threads ggml starts for it inherit that), and Encode
// waits for it: decoding threads keep their cores, and the encode takes
// the cycles they leave. Had it run on a Go thread at that priority, the
// thread would hold one of Go's Ps while it waits for a core, and the
// garbage collector's stop-the-world would wait for it.
//
// threads (0: Threads(); at most engine.ThreadLimit) is checked but the
// encode runs with Threads(): mtmd's public API fixes an encoder's thread
// count when the projector loads.
func (p *Projector) Encode(c *MediaChunk, threads int) ([]float32, error) {
	if threads == 0 {
		threads = p.threads
	}
	if err := engine.CheckRange("encode threads", int64(threads), 1, int64(engine.ThreadLimit())); err != nil {
		return nil, err
	}
	if c == nil || c.c == nil {
		return nil, errors.New("encode: the media chunk is missing or closed")
	}
	if c.p != p {
		return nil, errors.New("encode: the media chunk comes from another projector")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil {
		return nil, ErrClosed
	}
	out := make([]float32, c.NTokens*p.embd) // bounded by mediaChunk
	var nice C.int
	var errbuf [1024]C.char
	rc := C.tp_mtmd_encode_on_thread(p.c, c.c, EncodeNice,
		(*C.float)(unsafe.Pointer(&out[0])), C.size_t(len(out)), &nice, &errbuf[0], C.size_t(len(errbuf)))
	p.lastNice = int(nice)
	if rc != 0 {
		detail := strings.TrimSpace(C.GoString(&errbuf[0]))
		if rc == -2 {
			detail = "no thread could be started"
		}
		return nil, fmt.Errorf("encode: llama.cpp failed (%d): %s", int(rc), detail)
	}
	for _, v := range out {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("encode: %w (the projector produced one)", engine.ErrNotFinite)
		}
	}
	return out, nil
}
