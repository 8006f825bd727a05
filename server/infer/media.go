package infer

import (
	"context"
	"fmt"
	"slices"

	"github.com/tadpole-llm/tadpole/models"
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
	// media.DefaultMaxPixels).
	MaxImagePixels int
	// AudioRate is the sample rate audio is decoded at (0:
	// DefaultAudioRate); the projector's own rate when it is known.
	AudioRate int
	// Fetcher fetches the images requests name by http(s) URL
	// (--allow-image-urls); nil: such URLs are refused. The dialects
	// read every image URL through Fetcher.Reader.
	Fetcher *media.Fetcher
}

// CheckMedia checks a request's media against the model and the limits,
// and decodes them (Media.RGB, Width, Height, PCM), before anything of
// them reaches the engine. Every error is a 400: more media than
// MaxImages; a model without a projector, or whose projector lacks the
// encoder for an image or an audio clip ("model X does not support
// images"); a message ref out of range; a file that does not decode or is
// over the pixel limit (naming which, by its Field). A request without
// media passes whatever the model.
func (r *Request) CheckMedia(e models.Entry, lim MediaLimits) error {
	if len(r.Media) == 0 {
		return nil
	}
	enc, err := entryEncoders(e, r.Model)
	if err != nil {
		return err
	}
	return r.checkMedia(enc, lim)
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
// file, or from the loaded projector: Start reads no file).
func (r *Request) checkMedia(enc encoders, lim MediaLimits) error {
	if len(r.Media) == 0 {
		return nil
	}
	if err := r.checkMediaModel(enc, lim); err != nil {
		return err
	}
	rate := lim.AudioRate
	if rate <= 0 {
		rate = DefaultAudioRate
	}
	// The slice may be shared with copies of this request (OpenAI's n
	// choices): decode into a copy of it.
	r.Media = slices.Clone(r.Media)
	for i := range r.Media {
		m := &r.Media[i]
		field := mediaName(*m, i)
		var err error
		if m.Audio {
			m.PCM, err = media.DecodeWAV(m.Data, rate)
		} else {
			m.RGB, m.Width, m.Height, err = media.Decode(m.Data, lim.MaxImagePixels)
		}
		if err != nil {
			return &ParamError{Param: m.Field, Message: fmt.Sprintf("%s: %v", field, err)}
		}
	}
	return nil
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
