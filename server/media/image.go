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

	"golang.org/x/image/webp"
)

// DefaultMaxPixels is the default bound on an image's width × height
// (50 megapixels: 150 MB of RGB).
const DefaultMaxPixels = 50_000_000

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

// Decode decodes a JPEG, PNG, GIF (its first frame) or WebP image into
// 8-bit RGB, three bytes a pixel, rows top to bottom. The header is read
// first and an image of more than maxPixels pixels (width × height,
// overflow-checked; maxPixels ≤ 0 means DefaultMaxPixels) is refused
// before it is decoded. Transparency is dropped (the colour of a
// transparent pixel is kept), as llama.cpp's own image loader does.
// Errors wrap ErrInvalid and name the format and the problem.
func Decode(data []byte, maxPixels int) (rgb []byte, w, h int, err error) {
	if maxPixels <= 0 {
		maxPixels = DefaultMaxPixels
	}
	name := Sniff(data)
	f, ok := formats[name]
	if !ok {
		return nil, 0, 0, invalidf("unsupported image format (JPEG, PNG, GIF and WebP are supported): %s", describe(data))
	}
	upper := map[string]string{"jpeg": "JPEG", "png": "PNG", "gif": "GIF", "webp": "WebP"}[name]
	cfg, err := f.config(data)
	if err != nil {
		return nil, 0, 0, invalidf("corrupt or truncated %s image: %v", upper, err)
	}
	if err := checkSize(upper, cfg.Width, cfg.Height, maxPixels); err != nil {
		return nil, 0, 0, err
	}
	img, err := f.decode(data)
	if err != nil {
		return nil, 0, 0, invalidf("corrupt or truncated %s image: %v", upper, err)
	}
	b := img.Bounds()
	// The decoded frame is what counts (a GIF frame or WebP canvas may
	// differ from the header); it was allocated within the header's size.
	if err := checkSize(upper, b.Dx(), b.Dy(), maxPixels); err != nil {
		return nil, 0, 0, err
	}
	return toRGB(img), b.Dx(), b.Dy(), nil
}

// checkSize bounds an image's dimensions: both at least 1, the product
// at most maxPixels, without overflow.
func checkSize(format string, w, h, maxPixels int) error {
	if w < 1 || h < 1 {
		return invalidf("%s image has size %d×%d: width and height must be at least 1", format, w, h)
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
