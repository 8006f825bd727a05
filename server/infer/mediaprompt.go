package infer

import (
	"context"
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/mtmd"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/chatparse"
)

// mediaPrompt renders and tokenizes a prompt with images or audio (their
// Media already decoded by CheckMedia) through the instance's projector:
//
//  1. mtmd's marker is written into the text where each medium goes (in a
//     chat message at its MediaRef offset, in a completion before the
//     prompt, as Ollama places /api/generate's images), and the text is
//     rendered as any prompt is (template, chat template, thinking);
//  2. mtmd tokenizes it into text chunks and media chunks, each medium
//     replaced by the tokens the model's template family uses around it;
//  3. each media chunk is encoded through runner.Encode: on an idle
//     runner on its loop with all its threads, beside a busy one on a
//     low-priority thread, so that the slots decoding keep their speed.
//     The batching loop then decodes the embeddings: a span of the
//     runner request (runner.Embeds) whose prompt positions hold
//     placeholders derived from the medium's hash, so the prefix cache
//     reuses an image only for the same pixels.
func mediaPrompt(ctx context.Context, in *Instance, req *Request) ([]engine.Token, []runner.Embeds, chatparse.Options, error) {
	tokens, chunks, out, err := tokenizeMedia(in, req)
	if err != nil {
		return nil, nil, out, err
	}
	defer mtmd.CloseChunks(chunks)
	proj := in.si.Projector
	var embeds []runner.Embeds
	for ci, c := range chunks {
		if c.Media == nil {
			tokens = append(tokens, c.Text...)
			continue
		}
		var data []float32
		var encErr error
		if err := in.si.Runner.Encode(ctx, func(threads int) { data, encErr = proj.Encode(c.Media, threads) }); err != nil {
			return nil, nil, out, Errorf(BadRequest, "encode media: %v", err)
		}
		if encErr != nil {
			return nil, nil, out, Errorf(Internal, "encode media: %v", encErr)
		}
		embeds = append(embeds, runner.Embeds{Start: len(tokens), Data: data, N: c.Media.NTokens, NonCausal: proj.NonCausal()})
		for p := range c.Media.NTokens {
			tokens = append(tokens, placeholder(c.Media.Hash, ci, p))
		}
	}
	return tokens, embeds, out, nil
}

// mediaPromptSize is the number of positions mediaPrompt's tokens would
// take, without encoding (count_tokens).
func mediaPromptSize(in *Instance, req *Request) (int, error) {
	tokens, chunks, _, err := tokenizeMedia(in, req)
	if err != nil {
		return 0, err
	}
	defer mtmd.CloseChunks(chunks)
	n := len(tokens)
	for _, c := range chunks {
		if c.Media != nil {
			n += c.Media.NTokens
		} else {
			n += len(c.Text)
		}
	}
	return n, nil
}

// tokenizeMedia is steps 1 and 2 of mediaPrompt: the tokens of the
// request's context (Ollama's, before the prompt) and the chunks of its
// prompt, which the caller closes (mtmd.CloseChunks).
func tokenizeMedia(in *Instance, req *Request) ([]engine.Token, []mtmd.Chunk, chatparse.Options, error) {
	var out chatparse.Options
	proj := in.si.Projector
	if proj == nil { // Start's checkMedia refuses media without one
		return nil, nil, out, Errorf(BadRequest, "model %q does not support images: it has no projector", req.Model)
	}
	if !req.Chat && req.Suffix != "" {
		return nil, nil, out, Errorf(BadRequest, "suffix (fill-in-the-middle) cannot be combined with images")
	}
	if proj.MRoPE() {
		// Qwen2-VL-style projectors place an image on a 2-D grid of
		// positions; the runner's spans take one position per row.
		return nil, nil, out, Errorf(BadRequest, "model %q: its projector (%s) uses M-RoPE image positions, which are not supported yet", req.Model, proj.Type())
	}
	var l *literals
	if !req.Raw {
		l = newLiterals(in.si.Model)
	}
	marked, order := withMarkers(req, l)
	text, literal, out, err := renderLiterals(in.si.Model, marked, l)
	if err != nil {
		return nil, nil, out, err
	}
	media := make([]*mtmd.Media, 0, len(order))
	defer func() { // the chunks keep what they need of the bitmaps
		for _, m := range media {
			m.Close()
		}
	}()
	for _, i := range order {
		m, err := newMedia(&req.Media[i])
		if err != nil {
			return nil, nil, out, &ParamError{Param: req.Media[i].Field, Message: mediaName(req.Media[i], i) + ": " + err.Error()}
		}
		media = append(media, m)
	}
	tokens := contextTokens(req)
	chunks, err := proj.TokenizeLiteral(text, media, len(tokens) == 0, literal)
	if err != nil {
		return nil, nil, out, Errorf(BadRequest, "%v", err)
	}
	return tokens, chunks, out, nil
}

// withMarkers is a copy of req with mtmd's marker written where each of
// its media goes, and the order in which the markers then appear (indices
// into req.Media): message by message, each message's in offset order; a
// completion's all before the prompt. With l, the client's own marker
// texts are guarded first, so that they stay text (literals.media).
func withMarkers(req *Request, l *literals) (*Request, []int) {
	r := *req
	var order []int
	if !r.Chat {
		var b strings.Builder
		for i := range r.Media {
			b.WriteString(mtmd.Marker())
			b.WriteByte('\n')
			order = append(order, i)
		}
		r.Prompt = b.String() + l.media(r.Prompt)
		return &r, order
	}
	r.Messages = append([]Message(nil), r.Messages...)
	for mi := range r.Messages {
		var refs []MediaRef
		if mi < len(r.MessageMedia) {
			refs = r.MessageMedia[mi]
		}
		content := r.Messages[mi].Content
		var b strings.Builder
		last := 0
		for _, ref := range refs {
			b.WriteString(l.media(content[last:ref.Offset]))
			b.WriteString(mtmd.Marker())
			last = ref.Offset
			order = append(order, ref.Index)
		}
		b.WriteString(l.media(content[last:]))
		r.Messages[mi].Content = b.String()
	}
	return &r, order
}

// newMedia is a decoded medium as mtmd takes it.
func newMedia(m *Media) (*mtmd.Media, error) {
	if m.Audio {
		return mtmd.NewAudio(m.PCM)
	}
	return mtmd.NewImage(m.RGB, m.Width, m.Height)
}

func mediaName(m Media, i int) string {
	if m.Field != "" {
		return m.Field
	}
	if m.Audio {
		return "audio clip " + strconv.Itoa(i+1)
	}
	return "image " + strconv.Itoa(i+1)
}

// placeholder is the prompt value standing for position p of media chunk
// ci, hashed h: negative (never a token id, so it can never match text in
// the prefix cache, and Ollama's context leaves it out), and different for
// different pixels, chunks (a sliced image's chunks share its hash) and
// positions.
func placeholder(h [32]byte, ci, p int) engine.Token {
	x := binary.LittleEndian.Uint32(h[:4]) ^ uint32(ci)*0x9e3779b9
	return engine.Token(-1 - int32((x+uint32(p))&0x3fffffff))
}
