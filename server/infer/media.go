package infer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/server/chatparse"
	"github.com/tadpole-llm/tadpole/server/media"
)

// DefaultMaxImages is the default bound on the images and audio clips of
// one request (--max-images).
const DefaultMaxImages = 8

// DefaultAudioRate is the sample rate audio is decoded at when
// MediaLimits.AudioRate is 0: that of the Whisper-style encoders of
// llama.cpp's audio projectors.
const DefaultAudioRate = 16000

// Media is one image or audio clip of a request, as the client sent it.
// The dialects fill Data, Audio and Field; CheckMedia decodes it.
type Media struct {
	// Data is the file: JPEG, PNG, GIF or WebP for an image, WAV for
	// audio (a dialect has already undone its wire encoding: base64,
	// data URL).
	Data  []byte
	Audio bool
	// Field is where the request carried it, in the dialect's terms
	// ("images[1]", "messages[0].content[2]"), for errors about it.
	Field string

	// Set by CheckMedia: an image as packed 8-bit RGB (3 × Width ×
	// Height bytes), an audio clip as mono samples at the checked
	// MediaLimits.AudioRate.
	RGB           []byte
	Width, Height int
	PCM           []float32
	// decoded: RGB or PCM hold this medium, decoded (PrepareMedia, or a
	// Start's own decoding, which drops them when it returns).
	decoded bool
}

// MediaRef places one of a request's media in a chat message.
type MediaRef struct {
	// Index is the media's index in Request.Media.
	Index int
	// Offset is the byte offset in the message's Content where the media
	// goes (0: before the text; len(Content): after it). A message's
	// refs are in order of Offset, and of Index at the same Offset.
	Offset int
}

// MediaInput is what a request carries of images and audio; Request
// embeds it.
//
// A chat request's media each belong to one message: MessageMedia[i]
// places Messages[i]'s (MessageMedia may be shorter than Messages: the
// rest have none). A generate request's media (no Messages) all go
// before the prompt, as Ollama places the images of /api/generate.
type MediaInput struct {
	Media        []Media
	MessageMedia [][]MediaRef
	// shared is the prompt that copies of one request (OpenAI's n
	// choices) render, tokenize and encode once (PrepareMedia).
	shared *sharedPrompt
}

// AddMessageMedia appends m to the request's media and places it in
// message msg at byte offset of its content.
func (mi *MediaInput) AddMessageMedia(msg, offset int, m Media) {
	for len(mi.MessageMedia) <= msg {
		mi.MessageMedia = append(mi.MessageMedia, nil)
	}
	mi.MessageMedia[msg] = append(mi.MessageMedia[msg], MediaRef{Index: len(mi.Media), Offset: offset})
	mi.Media = append(mi.Media, m)
}

// MediaLimits are the operator's bounds on a request's media.
type MediaLimits struct {
	// MaxImages bounds the images and audio clips of one request (0:
	// DefaultMaxImages).
	MaxImages int
	// MaxImagePixels bounds each image's width × height (0:
	// media.DefaultMaxPixels; never more than the encoder's
	// media.MaxPixels).
	MaxImagePixels int
	// Budget bounds the memory and CPU of decoding over every request at
	// once (nil: a process-wide budget of DefaultMaxDecodeMemory).
	Budget *DecodeBudget
	// AudioRate is the sample rate audio is decoded at (0:
	// DefaultAudioRate); the projector's own rate when it is known.
	AudioRate int
	// Fetcher fetches the images requests name by http(s) URL
	// (--allow-image-urls); nil: such URLs are refused. The dialects
	// read every image URL through Fetcher.Reader.
	Fetcher *media.Fetcher
}

// CheckMedia checks a request's media against the model and the limits,
// and decodes them (Media.RGB, Width, Height, PCM) under the decode
// budget, before anything of them reaches the engine; release drops them
// and gives the budget back. Every error about the media is a 400: more
// media than MaxImages; a model without a projector, or whose projector
// lacks the encoder for an image or an audio clip ("model X does not
// support images"); a message ref out of range; a file that does not
// decode or is over a limit (naming which, by its Field). A request
// without media passes whatever the model.
func (r *Request) CheckMedia(ctx context.Context, e models.Entry, lim MediaLimits) (release func(), err error) {
	if len(r.Media) == 0 {
		return func() {}, nil
	}
	enc, err := entryEncoders(e, r.Model)
	if err != nil {
		return nil, err
	}
	return r.checkMedia(ctx, enc, lim)
}

// encoders are what a model's projector can encode.
type encoders struct {
	projector, vision, audio bool
	model                    string // the model's canonical name, for errors about a request that names none
}

// entryEncoders reads them from the header of a stored model's projector
// file (before the model is loaded).
func entryEncoders(e models.Entry, name string) (encoders, error) {
	enc := encoders{model: e.Name.String()}
	if e.Projector() == "" {
		return enc, nil
	}
	pi, err := models.ReadProjector(e.Projector())
	if err != nil {
		if name == "" {
			name = enc.model
		}
		return enc, Errorf(LoadFailed, "model %q: %v", name, err)
	}
	enc.projector, enc.vision, enc.audio = true, pi.Vision, pi.Audio
	return enc, nil
}

// checkMedia is CheckMedia with the projector's encoders known (from its
// file, or from the loaded projector: Start reads no file). It decodes
// into a copy of the media (the slice may be shared with copies of this
// request: OpenAI's n choices) unless PrepareMedia has decoded them;
// release drops what it decoded and gives its budget back.
func (r *Request) checkMedia(ctx context.Context, enc encoders, lim MediaLimits) (release func(), err error) {
	if len(r.Media) == 0 {
		return func() {}, nil
	}
	if err := r.checkMediaModel(enc, lim); err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(r.Media, func(m Media) bool { return !m.decoded }) {
		return func() {}, nil // PrepareMedia's: its caller releases them
	}
	r.Media = slices.Clone(r.Media)
	return r.decodeMedia(ctx, lim)
}

// decodeMedia decodes r.Media in place: their headers are checked (a 400
// naming the medium and the limit), the memory they need is taken from
// the decode budget (Media.decodeCost), then each is decoded. release
// drops the decoded media and gives the memory back.
func (r *Request) decodeMedia(ctx context.Context, lim MediaLimits) (release func(), err error) {
	rate := lim.AudioRate
	if rate <= 0 {
		rate = DefaultAudioRate
	}
	var need int64
	for i := range r.Media {
		n, err := r.Media[i].decodeCost(i, lim)
		if err != nil {
			return nil, err
		}
		need += n
	}
	budget := lim.Budget
	if budget == nil {
		budget = defaultBudget()
	}
	give, err := budget.acquire(ctx, need)
	switch {
	case errors.Is(err, errOverBudget):
		return nil, Errorf(BadRequest, "the request's %d images and audio clips need %d bytes of memory to decode, more than the server's whole budget of %d bytes (--max-image-decode-memory): send fewer or smaller images", len(r.Media), need, budget.Limit())
	case errors.Is(err, errBudgetQueue):
		return nil, Errorf(Unavailable, "server busy: %d requests already wait to decode their images (the queue bound, --max-queue)", budget.maxWaiters)
	case err != nil:
		return nil, &Error{Kind: BadRequest, Err: fmt.Errorf("request cancelled while waiting to decode its images: %w", err)}
	}
	release = func() {
		for i := range r.Media {
			m := &r.Media[i]
			m.RGB, m.PCM, m.decoded = nil, nil, false
		}
		give()
	}
	for i := range r.Media {
		m := &r.Media[i]
		if m.decoded {
			continue
		}
		var derr error
		if err := budget.decode(ctx, func() {
			if m.Audio {
				m.PCM, derr = media.DecodeWAV(m.Data, rate)
			} else {
				m.RGB, m.Width, m.Height, derr = media.Decode(m.Data, lim.MaxImagePixels)
			}
		}); err != nil {
			release()
			return nil, &Error{Kind: BadRequest, Err: fmt.Errorf("request cancelled while waiting to decode its images: %w", err)}
		}
		if derr != nil {
			release()
			return nil, &ParamError{Param: m.Field, Message: fmt.Sprintf("%s: %v", mediaName(*m, i), derr)}
		}
		m.decoded = true
	}
	return release, nil
}

// decodeCost is the memory decoding m takes until its request is
// encoded, from its header (checked: a 400 over a limit): an image's
// decoder buffer and packed RGB (media.Header.DecodeMemory) and mtmd's
// copy of the RGB; a WAV clip at most 4 bytes per byte of file (16-bit
// samples as float32, resampled to at most twice their number).
func (m *Media) decodeCost(i int, lim MediaLimits) (int64, error) {
	if m.Audio {
		return 4 * int64(len(m.Data)), nil
	}
	h, err := media.ReadHeader(m.Data, lim.MaxImagePixels)
	if err != nil {
		return 0, &ParamError{Param: m.Field, Message: fmt.Sprintf("%s: %v", mediaName(*m, i), err)}
	}
	return h.DecodeMemory() + 3*h.Pixels(), nil
}

// defaultBudget is the budget of a Service whose MediaLimits name none.
var defaultBudget = sync.OnceValue(func() *DecodeBudget { return NewDecodeBudget(0, 0) })

// PrepareMedia decodes the media of choices, copies of one request that
// differ only in their sampling options and share its Media slice
// (OpenAI's n choices), once for all of them; their Start then decodes
// nothing, and renders, tokenizes and encodes the media prompt once, the
// others taking the same tokens and embeddings. The caller calls release
// once every choice has started.
func (s *Service) PrepareMedia(ctx context.Context, in *Instance, choices ...*Request) (release func(), err error) {
	if len(choices) == 0 || len(choices[0].Media) == 0 {
		return func() {}, nil
	}
	req := choices[0]
	enc, lim, err := s.mediaEncoders(in, req)
	if err != nil {
		return nil, err
	}
	if err := req.checkMediaModel(enc, lim); err != nil {
		return nil, err
	}
	release, err = req.decodeMedia(ctx, lim)
	if err != nil {
		return nil, err
	}
	sp := &sharedPrompt{in: in}
	for _, c := range choices {
		c.Media, c.shared = req.Media, sp
	}
	return release, nil
}

// sharedPrompt is the media prompt of the choices of one request: made
// by the first that starts, reused by the others.
type sharedPrompt struct {
	in     *Instance
	mu     sync.Mutex
	done   bool
	tokens []engine.Token
	embeds []runner.Embeds // their Data are only read: shared
	out    chatparse.Options
}

// prompt is mediaPrompt for req, made once for every request sharing sp
// (nil: made for req alone).
func (sp *sharedPrompt) prompt(ctx context.Context, in *Instance, req *Request) ([]engine.Token, []runner.Embeds, chatparse.Options, error) {
	if sp == nil || sp.in != in {
		return mediaPrompt(ctx, in, req)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if !sp.done {
		tokens, embeds, out, err := mediaPrompt(ctx, in, req)
		if err != nil {
			return nil, nil, out, err
		}
		sp.tokens, sp.embeds, sp.out, sp.done = tokens, embeds, out, true
	}
	return slices.Clone(sp.tokens), slices.Clone(sp.embeds), sp.out, nil
}

// AcquireFor is Acquire for req's model, options and keep_alive, with
// the checks of req's media that need no decoding (their count, the
// model's projector) made first, so that a text-only model is not loaded
// only to refuse an image. The dialects call it instead of Acquire for
// generation requests.
func (s *Service) AcquireFor(ctx context.Context, req *Request) (*Instance, error) {
	if len(req.Media) > 0 {
		e, err := s.resolve(req.Model)
		if err != nil {
			return nil, err
		}
		enc, err := entryEncoders(e, req.Model)
		if err != nil {
			return nil, err
		}
		if err := req.checkMediaModel(enc, s.MediaLimits); err != nil {
			return nil, err
		}
		for i := range req.Media { // a bomb is refused before the model loads
			if _, err := req.Media[i].decodeCost(i, s.MediaLimits); err != nil {
				return nil, err
			}
		}
	}
	return s.Acquire(ctx, req.Model, req.Options, req.KeepAlive)
}

// checkMediaModel is what CheckMedia checks before decoding: the count,
// the model's projector and its encoders, the message refs.
func (r *Request) checkMediaModel(enc encoders, lim MediaLimits) error {
	maxImages := lim.MaxImages
	if maxImages <= 0 {
		maxImages = DefaultMaxImages
	}
	if len(r.Media) > maxImages {
		return Errorf(BadRequest, "too many images: the request has %d images and audio clips, at most %d are allowed (--max-images)", len(r.Media), maxImages)
	}
	name := r.Model
	if name == "" {
		name = enc.model
	}
	var images, audio bool
	for _, m := range r.Media {
		images = images || !m.Audio
		audio = audio || m.Audio
	}
	if !enc.projector {
		if images {
			return Errorf(BadRequest, "model %q does not support images: it has no projector (a vision model's mmproj file)", name)
		}
		return Errorf(BadRequest, "model %q does not support audio: it has no projector (an audio model's mmproj file)", name)
	}
	if images && !enc.vision {
		return Errorf(BadRequest, "model %q does not support images: its projector has no vision encoder", name)
	}
	if audio && !enc.audio {
		return Errorf(BadRequest, "model %q does not support audio: its projector has no audio encoder", name)
	}
	seen := make([]bool, len(r.Media))
	for i, refs := range r.MessageMedia {
		if i >= len(r.Messages) && len(refs) > 0 {
			return Errorf(Internal, "media placed in message %d of %d", i, len(r.Messages))
		}
		last := 0
		for _, ref := range refs {
			if ref.Index < 0 || ref.Index >= len(r.Media) || seen[ref.Index] || ref.Offset < last || ref.Offset > len(r.Messages[i].Content) {
				return Errorf(Internal, "message %d: media ref %+v out of range or out of order", i, ref)
			}
			seen[ref.Index], last = true, ref.Offset
		}
	}
	return nil
}
