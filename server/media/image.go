package media

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"net/http"
	"sync/atomic"

	"golang.org/x/image/webp"
)

// The vision encoder's own bounds (llama.cpp's mtmd, checked again by
// engine/mtmd.NewImage, whose MaxImageSide and MaxImagePixels these
// equal): an image over them is refused from its header, never decoded
// only to be refused by the encoder.
const (
	MaxSide   = 8192
	MaxPixels = 32 << 20 // 33,554,432
)

// DefaultMaxPixels is the default bound on an image's width × height
// (--max-image-pixels): the encoder's MaxPixels, 96 MiB of RGB. A larger
// operator limit is never in effect (Decode takes the smaller).
const DefaultMaxPixels = MaxPixels

// An image of more than FreePixels pixels may declare at most
// MaxPixelsPerByte pixels per byte of its file. Real images are far from
// it (PNG's deflate cannot pass ~1,032 bytes of pixels per byte; photos
// and screenshots take tens), but a lossless WebP of one colour is 28
// bytes whatever it declares: 5792×5792 cost 3.5 s and 400 MB to decode.
const (
	FreePixels       = 4 << 20
	MaxPixelsPerByte = 1024
)

// ErrInvalid is wrapped by every error about the data itself (an unknown
// format, a corrupt or truncated file, a size over the limits), as
// opposed to a caller's mistake.
var ErrInvalid = errors.New("invalid media")

// invalidError is an error about the data; it matches ErrInvalid.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{fmt.Sprintf(format, args...)}
}

// formats are the image formats Decode reads, by the name
// image.DecodeConfig gives them.
var formats = map[string]struct {
	mime   string
	config func([]byte) (image.Config, error)
	decode func([]byte) (image.Image, error)
}{
	"jpeg": {"image/jpeg", func(b []byte) (image.Config, error) { return jpeg.DecodeConfig(bytes.NewReader(b)) },
		func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) }},
	"png": {"image/png", func(b []byte) (image.Config, error) { return png.DecodeConfig(bytes.NewReader(b)) },
		func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }},
	// gif.Decode stops after the first frame.
	"gif": {"image/gif", func(b []byte) (image.Config, error) { return gif.DecodeConfig(bytes.NewReader(b)) },
		func(b []byte) (image.Image, error) { return gif.Decode(bytes.NewReader(b)) }},
	"webp": {"image/webp", func(b []byte) (image.Config, error) { return webp.DecodeConfig(bytes.NewReader(b)) },
		func(b []byte) (image.Image, error) { return webp.Decode(bytes.NewReader(b)) }},
}

// Sniff names the format of data by its first bytes: "jpeg", "png",
// "gif", "webp", "wav", or "" for anything else.
func Sniff(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return "jpeg"
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "gif"
	case len(data) >= 12 && string(data[0:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return "webp"
	case len(data) >= 12 && string(data[0:4]) == "RIFF" && string(data[8:12]) == "WAVE":
		return "wav"
	}
	return ""
}

// MIMEType is the media type of a format Sniff names ("" for "").
func MIMEType(format string) string {
	if f, ok := formats[format]; ok {
		return f.mime
	}
	if format == "wav" {
		return "audio/wav"
	}
	return ""
}

// describe names what data looks like, for an error about an
// unsupported format.
func describe(data []byte) string {
	if len(data) == 0 {
		return "the data is empty"
	}
	t := http.DetectContentType(data)
	if t == "application/octet-stream" {
		return "the data is not a known file type"
	}
	return "the data looks like " + t
}

// Header is what an image's header declares, read without decoding it.
type Header struct {
	Format        string // "JPEG", "PNG", "GIF" or "WebP"
	Width, Height int
	// BytesPerPixel is what the format's Go decoder allocates a pixel
	// for its image, by the colour model the header declares (8 for a
	// 16-bit RGBA PNG, 4 for lossless WebP, 3 for JPEG …).
	BytesPerPixel int
}

// Pixels is Width × Height (bounded by ReadHeader: no overflow).
func (h Header) Pixels() int64 { return int64(h.Width) * int64(h.Height) }

// DecodeMemory bounds what Decode allocates for the image: the
// decoder's image and the packed RGB it is copied into.
func (h Header) DecodeMemory() int64 { return h.Pixels() * int64(h.BytesPerPixel+3) }

// ReadHeader reads an image's header (image.DecodeConfig) and checks the
// size it declares, before anything of that size is allocated: width and
// height 1 to MaxSide, width × height at most the smaller of maxPixels
// (≤ 0: DefaultMaxPixels) and MaxPixels, and at most MaxPixelsPerByte
// pixels per byte of data beyond FreePixels. Errors wrap ErrInvalid and
// name the format, the limit and the value.
func ReadHeader(data []byte, maxPixels int) (Header, error) {
	maxPixels = effectiveMaxPixels(maxPixels)
	name := Sniff(data)
	f, ok := formats[name]
	if !ok {
		return Header{}, invalidf("unsupported image format (JPEG, PNG, GIF and WebP are supported): %s", describe(data))
	}
	upper := map[string]string{"jpeg": "JPEG", "png": "PNG", "gif": "GIF", "webp": "WebP"}[name]
	cfg, err := f.config(data)
	if err != nil {
		return Header{}, invalidf("corrupt or truncated %s image: %v", upper, err)
	}
	if err := checkSize(upper, cfg.Width, cfg.Height, maxPixels); err != nil {
		return Header{}, err
	}
	h := Header{Format: upper, Width: cfg.Width, Height: cfg.Height, BytesPerPixel: bytesPerPixel(name, cfg.ColorModel)}
	if px := h.Pixels(); px > FreePixels && px > MaxPixelsPerByte*int64(len(data)) {
		return Header{}, invalidf("%s image declares %d×%d pixels in %d bytes: an image of more than %d pixels may declare at most %d pixels per byte of its file (a decompression bomb)",
			upper, h.Width, h.Height, len(data), FreePixels, MaxPixelsPerByte)
	}
	return h, nil
}

// effectiveMaxPixels is the pixel limit in force for an operator's
// maxPixels: DefaultMaxPixels for ≤ 0, never more than MaxPixels.
func effectiveMaxPixels(maxPixels int) int {
	if maxPixels <= 0 {
		maxPixels = DefaultMaxPixels
	}
	return min(maxPixels, MaxPixels)
}

// bytesPerPixel is what the Go decoder of format allocates a pixel for
// an image of colour model m (at least; unknown models count 8).
func bytesPerPixel(format string, m color.Model) int {
	if _, ok := m.(color.Palette); ok {
		return 1
	}
	switch m {
	case color.GrayModel:
		return 1
	case color.Gray16Model:
		return 2
	case color.YCbCrModel: // 4:4:4 at most
		return 3
	case color.RGBAModel, color.NRGBAModel, color.CMYKModel:
		if format == "webp" { // VP8L's pixels, then the transforms' (minCap)
			return 8
		}
		return 4
	case color.NYCbCrAModel: // lossy WebP with alpha: its alpha decoded as NRGBA first
		return 8
	}
	return 8 // RGBA64, NRGBA64
}

// decodes counts the images Decode has handed to a decoder.
var decodes atomic.Int64

// Decodes is the number of images this process has decoded (ReadHeader
// alone does not count): for tests and metrics that an image is decoded
// once a request.
func Decodes() int64 { return decodes.Load() }

// Decode decodes a JPEG, PNG, GIF (its first frame) or WebP image into
// 8-bit RGB, three bytes a pixel, rows top to bottom. The header is read
// and checked first (ReadHeader, with maxPixels): an image over the
// limits is refused before it is decoded. Transparency is dropped (the
// colour of a transparent pixel is kept), as llama.cpp's own image loader
// does. Errors wrap ErrInvalid and name the format and the problem.
func Decode(data []byte, maxPixels int) (rgb []byte, w, h int, err error) {
	hd, err := ReadHeader(data, maxPixels)
	if err != nil {
		return nil, 0, 0, err
	}
	decodes.Add(1)
	img, err := formats[Sniff(data)].decode(data)
	if err != nil {
		return nil, 0, 0, invalidf("corrupt or truncated %s image: %v", hd.Format, err)
	}
	b := img.Bounds()
	// The decoded frame is what counts (a GIF frame or WebP canvas may
	// differ from the header); it was allocated within the header's size.
	if err := checkSize(hd.Format, b.Dx(), b.Dy(), effectiveMaxPixels(maxPixels)); err != nil {
		return nil, 0, 0, err
	}
	return toRGB(img), b.Dx(), b.Dy(), nil
}

// checkSize bounds an image's dimensions: both 1 to MaxSide, the product
// at most maxPixels, without overflow.
func checkSize(format string, w, h, maxPixels int) error {
	if w < 1 || h < 1 {
		return invalidf("%s image has size %d×%d: width and height must be at least 1", format, w, h)
	}
	if w > MaxSide || h > MaxSide {
		return invalidf("%s image is %d×%d pixels: width and height must be at most %d (the vision encoder's limit)", format, w, h, MaxSide)
	}
	if w > maxPixels/h {
		return invalidf("%s image is %d×%d pixels, more than the limit of %d pixels (--max-image-pixels)", format, w, h, maxPixels)
	}
	return nil
}

// toRGB copies an image into packed RGB.
func toRGB(img image.Image) []byte {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	out := make([]byte, 0, 3*w*h)
	switch m := img.(type) {
	case *image.NRGBA:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := 0; x < w; x++ {
				out = append(out, row[4*x], row[4*x+1], row[4*x+2])
			}
		}
	case *image.RGBA: // 8-bit PNG without alpha channel, premultiplied
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := 0; x < w; x++ {
				p := row[4*x:]
				out = appendNRGBA(out, uint32(p[0])*0x101, uint32(p[1])*0x101, uint32(p[2])*0x101, uint32(p[3])*0x101)
			}
		}
	case *image.RGBA64: // 16-bit PNG, premultiplied
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := 0; x < w; x++ {
				p := row[8*x:]
				out = appendNRGBA(out, be16(p[0:]), be16(p[2:]), be16(p[4:]), be16(p[6:]))
			}
		}
	case *image.NRGBA64: // 16-bit PNG with alpha
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := 0; x < w; x++ {
				p := row[8*x:]
				a := be16(p[6:])
				out = appendNRGBA(out, be16(p[0:])*a/0xffff, be16(p[2:])*a/0xffff, be16(p[4:])*a/0xffff, a)
			}
		}
	case *image.YCbCr:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				yi, ci := m.YOffset(x, y), m.COffset(x, y)
				r, g, bl := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				out = append(out, r, g, bl)
			}
		}
	case *image.Gray:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := 0; x < w; x++ {
				out = append(out, row[x], row[x], row[x])
			}
		}
	case *image.Paletted:
		pal := make([][3]byte, len(m.Palette))
		for i, c := range m.Palette {
			n := color.NRGBAModel.Convert(c).(color.NRGBA)
			pal[i] = [3]byte{n.R, n.G, n.B}
		}
		for y := b.Min.Y; y < b.Max.Y; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, y):]
			for x := 0; x < w; x++ {
				var c [3]byte
				if int(row[x]) < len(pal) {
					c = pal[row[x]]
				}
				out = append(out, c[0], c[1], c[2])
			}
		}
	default:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				n := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
				out = append(out, n.R, n.G, n.B)
			}
		}
	}
	return out
}

// appendNRGBA appends the 8-bit colour of a premultiplied 16-bit pixel,
// exactly as color.NRGBAModel converts it (the default case of toRGB,
// without its interface calls: 16-bit PNGs decoded 3-4× slower by it).
func appendNRGBA(out []byte, r, g, b, a uint32) []byte {
	switch a {
	case 0xffff:
	case 0:
		return append(out, 0, 0, 0)
	default:
		r, g, b = r*0xffff/a, g*0xffff/a, b*0xffff/a
	}
	return append(out, uint8(r>>8), uint8(g>>8), uint8(b>>8))
}

func be16(p []byte) uint32 { return uint32(p[0])<<8 | uint32(p[1]) }
