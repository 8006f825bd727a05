package media

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// testImage is a 5×3 image whose pixel (x, y) is (40x, 80y, 200).
func testImage() *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, 5, 3))
	for y := 0; y < 3; y++ {
		for x := 0; x < 5; x++ {
			img.SetNRGBA(x, y, color.NRGBA{uint8(40 * x), uint8(80 * y), 200, 255})
		}
	}
	return img
}

func solid(w, h int, c color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < w*h; i++ {
		img.SetNRGBA(i%w, i/w, c)
	}
	return img
}

func encodePNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 100}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeGIF(t *testing.T) []byte {
	t.Helper()
	pal := color.Palette{color.RGBA{0, 0, 0, 255}, color.RGBA{255, 0, 0, 255}, color.RGBA{0, 0, 255, 255}}
	f1 := image.NewPaletted(image.Rect(0, 0, 4, 2), pal)
	f2 := image.NewPaletted(image.Rect(0, 0, 4, 2), pal)
	for i := range f1.Pix {
		f1.Pix[i], f2.Pix[i] = 1, 2 // first frame red, second blue
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, &gif.GIF{Image: []*image.Paletted{f1, f2}, Delay: []int{0, 0}}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pngHeader is a PNG whose IHDR claims w×h and which has no image data.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

func TestDecodeFormats(t *testing.T) {
	img := testImage()
	for _, tc := range []struct {
		name string
		data []byte
		w, h int
		// exact: the pixels must be the test image's (lossless formats)
		exact bool
		first [3]byte // the first pixel, when not exact (within 8)
	}{
		{"png", encodePNG(t, img), 5, 3, true, [3]byte{}},
		{"jpeg", encodeJPEG(t, solid(5, 3, color.NRGBA{10, 20, 200, 255})), 5, 3, false, [3]byte{10, 20, 200}},
		{"gif", encodeGIF(t), 4, 2, false, [3]byte{255, 0, 0}}, // the first frame
		{"webp lossy", readFile(t, "testdata/blue-purple-pink.lossy.webp"), 150, 100, false, [3]byte{}},
		{"webp lossless", readFile(t, "testdata/gopher-doc.1bpp.lossless.webp"), 0, 0, false, [3]byte{}},
	} {
		rgb, w, h, err := Decode(tc.data, 0)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(rgb) != 3*w*h || (tc.w > 0 && (w != tc.w || h != tc.h)) || w < 1 || h < 1 {
			t.Errorf("%s: %d×%d, %d bytes", tc.name, w, h, len(rgb))
			continue
		}
		switch {
		case tc.exact:
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					c := img.NRGBAAt(x, y)
					if got := rgb[3*(y*w+x):][:3]; !bytes.Equal(got, []byte{c.R, c.G, c.B}) {
						t.Fatalf("%s: pixel (%d,%d) = %v, want %v", tc.name, x, y, got, c)
					}
				}
			}
		case tc.first != [3]byte{}:
			for i := 0; i < 3; i++ {
				if d := int(rgb[i]) - int(tc.first[i]); d < -8 || d > 8 {
					t.Errorf("%s: first pixel %v, want about %v", tc.name, rgb[:3], tc.first)
					break
				}
			}
		}
	}
}

func TestDecodeTransparentAndGray(t *testing.T) {
	// A half-transparent pixel keeps its colour (alpha is dropped, not
	// composited), as llama.cpp's loader does.
	n := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	n.SetNRGBA(0, 0, color.NRGBA{200, 100, 50, 128})
	rgb, _, _, err := Decode(encodePNG(t, n), 0)
	if err != nil || !bytes.Equal(rgb, []byte{200, 100, 50}) {
		t.Errorf("transparent: %v %v", rgb, err)
	}
	g := image.NewGray16(image.Rect(0, 0, 2, 1))
	g.SetGray16(1, 0, color.Gray16{0xffff})
	rgb, _, _, err = Decode(encodePNG(t, g), 0)
	if err != nil || !bytes.Equal(rgb, []byte{0, 0, 0, 255, 255, 255}) {
		t.Errorf("gray16: %v %v", rgb, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	good := encodePNG(t, testImage())
	jpg := encodeJPEG(t, testImage())
	for _, tc := range []struct {
		name      string
		data      []byte
		maxPixels int
		want      string
	}{
		{"empty", nil, 0, "unsupported image format (JPEG, PNG, GIF and WebP are supported): the data is empty"},
		{"text", []byte("hello, world"), 0, "unsupported image format (JPEG, PNG, GIF and WebP are supported): the data looks like text/plain"},
		{"bmp", append([]byte("BM"), make([]byte, 60)...), 0, "the data looks like image/bmp"},
		{"truncated png", good[:len(good)/2], 0, "corrupt or truncated PNG image"},
		{"truncated header", good[:20], 0, "corrupt or truncated PNG image"},
		{"corrupt jpeg", append(append([]byte{}, jpg[:30]...), bytes.Repeat([]byte{0x55}, 100)...), 0, "corrupt or truncated JPEG image"},
		{"enormous png", pngHeader(100000, 100000), 0, "PNG image is 100000×100000 pixels: width and height must be at most 8192 (the vision encoder's limit)"},
		{"over the encoder's pixels", pngHeader(8192, 4097), 0, "PNG image is 8192×4097 pixels, more than the limit of 33554432 pixels"},
		{"over the encoder's pixels, a larger limit", pngHeader(8192, 4097), 50_000_000, "more than the limit of 33554432 pixels"},
		{"over the encoder's side", pngHeader(8193, 2), 0, "PNG image is 8193×2 pixels: width and height must be at most 8192"},
		{"png bomb", pngHeader(8192, 4096), 0, "PNG image declares 8192×4096 pixels in 33 bytes: an image of more than 4194304 pixels may declare at most 1024 pixels per byte of its file (a decompression bomb)"},
		{"webp bomb", webpBomb(5792, 5792), 0, "WebP image declares 5792×5792 pixels in 28 bytes: an image of more than 4194304 pixels may declare at most 1024 pixels per byte"},
		{"overflowing png", pngHeader(0x7fffffff, 0x7fffffff), 0, "dimension overflow"},
		{"wide png", pngHeader(1<<30, 1), 0, "width and height must be at most 8192"},
		{"over a small limit", good, 14, "PNG image is 5×3 pixels, more than the limit of 14 pixels"},
		{"truncated webp", readFile(t, "testdata/blue-purple-pink.lossy.webp")[:40], 0, "corrupt or truncated WebP image"},
		{"gif header only", []byte("GIF89a\x01\x00\x01\x00"), 0, "corrupt or truncated GIF image"},
	} {
		before := Decodes()
		_, _, _, err := Decode(tc.data, tc.maxPixels)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if _, herr := ReadHeader(tc.data, tc.maxPixels); herr == nil && strings.Contains(tc.want, "pixels") {
			t.Errorf("%s: ReadHeader passed an image over the limits", tc.name)
		}
		if strings.Contains(tc.want, "pixels") && Decodes() != before {
			t.Errorf("%s: refused after decoding, not from its header", tc.name)
		}
	}
	if _, _, _, err := Decode(good, 15); err != nil {
		t.Errorf("at the limit: %v", err)
	}
}

func TestDataURLs(t *testing.T) {
	pngData := encodePNG(t, testImage())
	b64 := base64.StdEncoding.EncodeToString(pngData)
	for _, tc := range []struct {
		url, want string // want "" means it reads back as pngData
	}{
		{"data:image/png;base64," + b64, ""},
		{"DATA:Image/PNG;base64," + b64, ""},
		{"data:image/png;charset=binary;base64," + base64.RawStdEncoding.EncodeToString(pngData), ""},
		{"data:image/jpeg;base64," + b64, "the data URL says image/jpeg but the data is a PNG image"},
		{"data:image/webp;base64," + base64.StdEncoding.EncodeToString([]byte("hello")), "the data URL says image/webp but the data is not an image of that type"},
		{"data:text/plain;base64," + b64, `the data URL's type "text/plain" is not an image type`},
		{"data:image/bmp;base64," + b64, `unsupported image type "image/bmp"`},
		{"data:image/png," + b64, "is not base64-encoded"},
		{"data:image/png;base64", "without a comma"},
		{"data:image/png;base64,!!!", "invalid base64 data"},
		{"https://example.com/cat.png", "image URLs are not fetched"},
		{"http://127.0.0.1/cat.png", "image URLs are not fetched"},
		{"ftp://example.com/cat.png", "not a data URL"},
	} {
		got, err := ImageURL(tc.url)
		short := tc.url[:min(len(tc.url), 40)]
		switch {
		case tc.want == "" && (err != nil || !bytes.Equal(got, pngData)):
			t.Errorf("%s: %v", short, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", short, err, tc.want)
		}
	}
	// Ollama's images: bare base64 (padded or not, wrapped) or data URLs.
	for _, s := range []string{b64, strings.TrimRight(b64, "="), b64[:10] + "\n" + b64[10:], "data:image/png;base64," + b64} {
		if got, err := ImageData(s); err != nil || !bytes.Equal(got, pngData) {
			t.Errorf("ImageData(%.20q…): %v", s, err)
		}
	}
	if _, err := ImageData("data:image/gif;base64," + b64); err == nil || !strings.Contains(err.Error(), "says image/gif but the data is a PNG image") {
		t.Errorf("ImageData wrong type: %v", err)
	}
	if _, err := ImageData("not base64!"); err == nil || !errors.Is(err, ErrInvalid) {
		t.Errorf("ImageData garbage: %v", err)
	}
}

// wav builds a WAV file.
func wav(tag, channels, rate, bits int, samples []byte) []byte {
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + len(samples)))
	b.WriteString("WAVEfmt ")
	le(uint32(16))
	le(uint16(tag))
	le(uint16(channels))
	le(uint32(rate))
	le(uint32(rate * channels * bits / 8))
	le(uint16(channels * bits / 8))
	le(uint16(bits))
	b.WriteString("data")
	le(uint32(len(samples)))
	b.Write(samples)
	return b.Bytes()
}

func le16(vs ...int16) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, vs)
	return b.Bytes()
}

func TestDecodeWAV(t *testing.T) {
	// 16-bit mono at the target rate: exact values.
	pcm, err := DecodeWAV(wav(1, 1, 16000, 16, le16(0, 16384, -32768, 32767)), 16000)
	if err != nil || len(pcm) != 4 || pcm[0] != 0 || pcm[1] != 0.5 || pcm[2] != -1 || math.Abs(float64(pcm[3])-32767.0/32768) > 1e-6 {
		t.Errorf("pcm16: %v %v", pcm, err)
	}
	// Stereo is averaged.
	pcm, err = DecodeWAV(wav(1, 2, 16000, 16, le16(16384, -16384, 16384, 0)), 16000)
	if err != nil || len(pcm) != 2 || pcm[0] != 0 || pcm[1] != 0.25 {
		t.Errorf("stereo: %v %v", pcm, err)
	}
	// 32-bit float, with a NaN made silent.
	var fb bytes.Buffer
	binary.Write(&fb, binary.LittleEndian, []float32{0.25, float32(math.NaN()), -2})
	pcm, err = DecodeWAV(wav(3, 1, 16000, 32, fb.Bytes()), 16000)
	if err != nil || len(pcm) != 3 || pcm[0] != 0.25 || pcm[1] != 0 || pcm[2] != -1 {
		t.Errorf("float: %v %v", pcm, err)
	}
	// 48 kHz is resampled to 16 kHz: a third of the samples, linear.
	ramp := make([]int16, 4800)
	for i := range ramp {
		ramp[i] = int16(i)
	}
	pcm, err = DecodeWAV(wav(1, 1, 48000, 16, le16(ramp...)), 16000)
	if err != nil || len(pcm) != 1600 || math.Abs(float64(pcm[100])-300.0/32768) > 1e-6 {
		t.Errorf("resample: %d samples, %v", len(pcm), err)
	}
	// 8 kHz up to 16 kHz: twice as many, interpolated between.
	pcm, err = DecodeWAV(wav(1, 1, 8000, 16, le16(0, 1000, 2000)), 16000)
	if err != nil || len(pcm) != 6 || math.Abs(float64(pcm[1])-500.0/32768) > 1e-6 {
		t.Errorf("upsample: %v %v", pcm, err)
	}

	good := wav(1, 1, 16000, 16, le16(1, 2, 3))
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not wav", []byte("ID3\x04mp3 data here"), "not a WAV file"},
		{"png", encodePNG(t, testImage()), "not a WAV file"},
		{"truncated fmt", good[:30], "truncated WAV file"},
		{"no data", good[:36], "without a data chunk"},
		{"adpcm", wav(2, 1, 16000, 4, []byte{1, 2}), "format tag 2 is not supported"},
		{"12-bit", wav(1, 1, 16000, 12, []byte{1, 2}), "12-bit samples is not supported"},
		{"no channels", wav(1, 0, 16000, 16, []byte{1, 2}), "0 channels"},
		{"rate 0", wav(1, 1, 0, 16, []byte{1, 2}), "sample rate 0"},
		{"empty", wav(1, 1, 16000, 16, nil), "no samples"},
		// 1 Hz: 10 minutes of samples in 1200 bytes would become 9.6
		// million samples at 16 kHz; refused before conversion.
		{"too long", wav(1, 1, 1, 16, make([]byte, 2*MaxAudioSeconds)), "longer than the limit of 600 seconds"},
	} {
		_, err := DecodeWAV(tc.data, 16000)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := AudioData(base64.StdEncoding.EncodeToString(good), "mp3"); err == nil || !strings.Contains(err.Error(), `audio format "mp3" is not supported (wav)`) {
		t.Errorf("mp3: %v", err)
	}
	if _, err := AudioData(base64.StdEncoding.EncodeToString([]byte("not a wav file")), "wav"); err == nil || !strings.Contains(err.Error(), "not a WAV file") {
		t.Errorf("wav of garbage: %v", err)
	}
	if b, err := AudioData(base64.StdEncoding.EncodeToString(good), "wav"); err != nil || !bytes.Equal(b, good) {
		t.Errorf("wav: %v", err)
	}
}

// webpBomb is a lossless WebP of w×h pixels of one colour, 28 bytes
// whatever its size: every prefix code has one symbol, so a pixel takes
// no bits.
func webpBomb(w, h int) []byte {
	var bits uint64
	n := 0
	put := func(v uint64, width int) { bits |= v << n; n += width }
	put(uint64(w-1), 14)
	put(uint64(h-1), 14)
	put(0, 1) // alpha unused
	put(0, 3) // version
	put(0, 1) // no transform
	put(0, 1) // no colour cache
	put(0, 1) // no meta prefix codes
	for range 5 {
		put(1, 1) // a simple code
		put(0, 1) // of one symbol
		put(0, 1) // of 1 bit
		put(0, 1) // symbol 0
	}
	data := []byte{0x2f}
	for i := 0; i < (n+7)/8; i++ {
		data = append(data, byte(bits>>(8*i)))
	}
	le := func(v int) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
	chunk := append(append([]byte("VP8L"), le(len(data))...), data...)
	return append(append(append([]byte("RIFF"), le(4+len(chunk))...), []byte("WEBP")...), chunk...)
}

// The bomb's shape is a valid image: small, it decodes.
func TestWebPBombDecodes(t *testing.T) {
	b := webpBomb(64, 48)
	if len(b) != 28 {
		t.Fatalf("%d bytes, want 28", len(b))
	}
	hd, err := ReadHeader(b, 0)
	if err != nil || hd.Width != 64 || hd.Height != 48 || hd.BytesPerPixel != 8 {
		t.Fatalf("header %+v, %v", hd, err)
	}
	rgb, w, h, err := Decode(b, 0)
	if err != nil || w != 64 || h != 48 || len(rgb) != 3*64*48 {
		t.Fatalf("decode: %d×%d %d bytes, %v", w, h, len(rgb), err)
	}
	// 2048×2048 is within FreePixels: a flat image of that size passes.
	if _, err := ReadHeader(webpBomb(2048, 2048), 0); err != nil {
		t.Errorf("2048²: %v", err)
	}
}

// The decoders' bytes per pixel follow the colour model the header
// declares.
func TestHeaderBytesPerPixel(t *testing.T) {
	rgba64 := image.NewRGBA64(image.Rect(0, 0, 3, 2))
	gray := image.NewGray(image.Rect(0, 0, 3, 2))
	for _, tc := range []struct {
		name string
		data []byte
		want int
	}{
		{"png 8-bit", encodePNG(t, testImage()), 4},
		{"png 16-bit", encodePNG(t, rgba64), 8},
		{"png gray", encodePNG(t, gray), 1},
		{"jpeg", encodeJPEG(t, testImage()), 3},
		{"gif", encodeGIF(t), 1},
		{"lossy webp", readFile(t, "testdata/blue-purple-pink.lossy.webp"), 3},
	} {
		hd, err := ReadHeader(tc.data, 0)
		if err != nil || hd.BytesPerPixel != tc.want || hd.DecodeMemory() != hd.Pixels()*int64(tc.want+3) {
			t.Errorf("%s: %+v %v, want %d bytes a pixel", tc.name, hd, err, tc.want)
		}
	}
}

// opaque hides an image's type so that toRGB takes its generic path.
type opaque struct{ image.Image }

// toRGB's fast paths for RGBA, RGBA64 and NRGBA64 give what the generic
// colour conversion gives, translucent and transparent pixels included.
func TestToRGBFastPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	rect := image.Rect(2, 1, 19, 12) // not at the origin
	rgba, rgba64, nrgba64 := image.NewRGBA(rect), image.NewRGBA64(rect), image.NewNRGBA64(rect)
	for y := rect.Min.Y; y < rect.Max.Y; y++ {
		for x := rect.Min.X; x < rect.Max.X; x++ {
			a := uint16(r.IntN(3)) * 0x7fff // 0, half, full
			if r.IntN(4) == 0 {
				a = uint16(r.IntN(0x10000))
			}
			c := func() uint16 { return uint16(r.IntN(int(a) + 1)) }
			rgba64.SetRGBA64(x, y, color.RGBA64{c(), c(), c(), a})
			a8 := uint8(a >> 8)
			c8 := func() uint8 { return uint8(r.IntN(int(a8) + 1)) }
			rgba.SetRGBA(x, y, color.RGBA{c8(), c8(), c8(), a8})
			nrgba64.SetNRGBA64(x, y, color.NRGBA64{uint16(r.Uint32()), uint16(r.Uint32()), uint16(r.Uint32()), a})
		}
	}
	for _, img := range []image.Image{rgba, rgba64, nrgba64} {
		if got, want := toRGB(img), toRGB(opaque{img}); !bytes.Equal(got, want) {
			t.Errorf("%T: fast path differs from the generic conversion", img)
		}
	}
}
