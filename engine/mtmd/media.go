package mtmd

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Media limits, checked before anything is allocated.
const (
	// MaxImageSide bounds an image's width and height in pixels. LLaVA's
	// preprocessing pads an image to a square of its longer side (3 bytes
	// per pixel), so the side, not the area, bounds that buffer (192 MiB).
	MaxImageSide = 8192
	// MaxImagePixels bounds width × height (32 Mpx, 96 MiB of RGB).
	MaxImagePixels = 32 << 20
	// MaxAudioSamples bounds an audio clip: ten minutes at 16 kHz.
	MaxAudioSamples = 16000 * 600
)

// Media is one image or audio clip (an mtmd bitmap). Close frees it; it
// must not be used concurrently with its Close.
type Media struct {
	c     *C.mtmd_bitmap
	hash  [32]byte
	audio bool
}

// NewImage makes an image of width × height pixels from RGB bytes, row
// by row (len(rgb) == 3·width·height). Width and height are 1 to
// MaxImageSide, their product at most MaxImagePixels.
func NewImage(rgb []byte, width, height int) (*Media, error) {
	if width < 1 || width > MaxImageSide || height < 1 || height > MaxImageSide {
		return nil, fmt.Errorf("image of %d×%d pixels: width and height must be 1 to %d", width, height, MaxImageSide)
	}
	if width > MaxImagePixels/height {
		return nil, fmt.Errorf("image of %d×%d pixels: more than %d pixels", width, height, MaxImagePixels)
	}
	n := 3 * width * height // ≤ 3·MaxImagePixels: no overflow
	if len(rgb) != n {
		return nil, fmt.Errorf("image of %d×%d pixels: %d bytes of RGB, want %d", width, height, len(rgb), n)
	}
	m := &Media{hash: mediaHash("image", uint64(width), uint64(height), rgb)}
	m.c = C.tp_bitmap_image(C.uint32_t(width), C.uint32_t(height), (*C.uchar)(unsafe.Pointer(&rgb[0])))
	if m.c == nil {
		return nil, errors.New("image: out of memory")
	}
	if err := m.setID(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// NewAudio makes an audio clip of mono float PCM samples at the
// projector's AudioRate: 1 to MaxAudioSamples finite samples.
func NewAudio(pcm []float32) (*Media, error) {
	if len(pcm) < 1 || len(pcm) > MaxAudioSamples {
		return nil, fmt.Errorf("audio of %d samples: 1 to %d allowed", len(pcm), MaxAudioSamples)
	}
	for _, v := range pcm {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, errors.New("audio: samples must be finite numbers")
		}
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&pcm[0])), 4*len(pcm))
	m := &Media{audio: true, hash: mediaHash("audio", uint64(len(pcm)), 1, b)}
	m.c = C.tp_bitmap_audio(C.size_t(len(pcm)), (*C.float)(unsafe.Pointer(&pcm[0])))
	if m.c == nil {
		return nil, errors.New("audio: out of memory")
	}
	if err := m.setID(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// mediaHash is SHA-256 of the kind, the dimensions (little-endian
// uint64s) and the bytes: two images with the same bytes and different
// shapes differ.
func mediaHash(kind string, a, b uint64, data []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(kind))
	var dims [16]byte
	binary.LittleEndian.PutUint64(dims[:8], a)
	binary.LittleEndian.PutUint64(dims[8:], b)
	h.Write(dims[:])
	h.Write(data)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// setID sets the bitmap's id to the hex hash: mtmd carries it to the
// media chunks (MediaChunk.Hash).
func (m *Media) setID() error {
	id := C.CString(hex.EncodeToString(m.hash[:]))
	defer C.free(unsafe.Pointer(id))
	if !C.tp_bitmap_set_id(m.c, id) {
		return errors.New("media: out of memory")
	}
	return nil
}

// Hash identifies the media's content (the prefix cache's key): SHA-256
// of its kind, dimensions and bytes.
func (m *Media) Hash() [32]byte { return m.hash }

// Audio reports whether the media is an audio clip.
func (m *Media) Audio() bool { return m.audio }

// Close frees the media.
func (m *Media) Close() {
	if m != nil && m.c != nil {
		C.mtmd_bitmap_free(m.c)
		m.c = nil
	}
}
