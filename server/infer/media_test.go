package infer

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

func TestCheckMedia(t *testing.T) {
	s := &models.Store{Dir: t.TempDir()}
	if err := testmodels.WriteBigram(filepath.Join(s.Dir, "vis.gguf")); err != nil {
		t.Fatal(err)
	}
	kvs := []gguf.KV{{Key: "general.architecture", Value: "clip"}, {Key: "clip.has_vision_encoder", Value: true}}
	if err := gguf.WriteFile(filepath.Join(s.Dir, "vis.mmproj.gguf"), kvs, nil); err != nil {
		t.Fatal(err)
	}
	e, err := s.Resolve("vis")
	if err != nil || e.Projector() == "" {
		t.Fatalf("%v %q", err, e.Projectors)
	}
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, 3, 2)))
	img := b.Bytes()

	// Two messages, media placed in the second; decoded into a copy.
	req := &Request{Model: "vis", Chat: true, Messages: []Message{{Role: "user", Content: "a"}, {Role: "user", Content: "look: here"}}}
	req.AddMessageMedia(1, 0, Media{Data: img, Field: "m1"})
	req.AddMessageMedia(1, 6, Media{Data: img})
	shared := req.Media
	if len(req.MessageMedia) != 2 || req.MessageMedia[0] != nil || req.MessageMedia[1][1] != (MediaRef{Index: 1, Offset: 6}) {
		t.Fatalf("MessageMedia %+v", req.MessageMedia)
	}
	release, err := req.CheckMedia(context.Background(), e, MediaLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if m := req.Media[1]; m.Width != 3 || m.Height != 2 || len(m.RGB) != 18 || shared[1].RGB != nil {
		t.Errorf("decoded %d×%d (%d bytes); shared slice written: %v", m.Width, m.Height, len(m.RGB), shared[1].RGB != nil)
	}
	release()
	if req.Media[1].RGB != nil {
		t.Error("release kept the pixels")
	}

	for _, tc := range []struct {
		name string
		req  func() *Request
		lim  MediaLimits
		want string
	}{
		{"too many", func() *Request { return &Request{Model: "vis", MediaInput: MediaInput{Media: make([]Media, 3)}} }, MediaLimits{MaxImages: 2}, "too many images: the request has 3"},
		{"audio", func() *Request { return &Request{Model: "vis", MediaInput: MediaInput{Media: []Media{{Audio: true}}}} }, MediaLimits{}, `model "vis" does not support audio`},
		{"pixels", func() *Request {
			return &Request{Model: "vis", MediaInput: MediaInput{Media: []Media{{Data: img, Field: "images[0]"}}}}
		}, MediaLimits{MaxImagePixels: 5}, "images[0]: PNG image is 3×2 pixels, more than the limit of 5 pixels"},
		{"unnamed", func() *Request {
			return &Request{Model: "vis", MediaInput: MediaInput{Media: []Media{{Data: img}, {Data: []byte("x")}}}}
		}, MediaLimits{}, "image 2: unsupported image format"},
		{"ref past the content", func() *Request {
			r := &Request{Model: "vis", Messages: []Message{{Role: "user", Content: "ab"}}}
			r.AddMessageMedia(0, 3, Media{Data: img})
			return r
		}, MediaLimits{}, "out of range"},
		{"ref without a message", func() *Request {
			r := &Request{Model: "vis"}
			r.AddMessageMedia(0, 0, Media{Data: img})
			return r
		}, MediaLimits{}, "media placed in message 0 of 0"},
	} {
		_, err := tc.req().CheckMedia(context.Background(), e, tc.lim)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}

	// A text-only model: the 400 names it.
	textStore := &models.Store{Dir: t.TempDir()}
	testmodels.WriteBigram(filepath.Join(textStore.Dir, "text.gguf"))
	te, _ := textStore.Resolve("text")
	_, err = (&Request{Model: "text", MediaInput: MediaInput{Media: []Media{{Data: img}}}}).CheckMedia(context.Background(), te, MediaLimits{})
	if err == nil || KindOf(err) != BadRequest || !strings.Contains(err.Error(), `model "text" does not support images`) {
		t.Errorf("text-only: %v", err)
	}
	if _, err := (&Request{Model: "text"}).CheckMedia(context.Background(), te, MediaLimits{}); err != nil {
		t.Errorf("no media: %v", err)
	}
}
