package media

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// ErrRemoteURL is wrapped for an http(s) image URL: the server does not
// fetch media from the network (it would reach whatever the server can
// reach); clients send the bytes as a data: URL instead.
var ErrRemoteURL = errors.New("image URLs are not fetched")

// imageTypes maps the media types a data URL may declare for an image to
// the format Sniff names.
var imageTypes = map[string]string{
	"image/jpeg": "jpeg", "image/jpg": "jpeg", "image/pjpeg": "jpeg",
	"image/png": "png", "image/gif": "gif", "image/webp": "webp",
}

// formatNames are the formats' names in messages.
var formatNames = map[string]string{"jpeg": "a JPEG image", "png": "a PNG image", "gif": "a GIF image", "webp": "a WebP image", "wav": "WAV audio"}

// DecodeBase64 decodes standard base64, padded or not (Ollama's images,
// OpenAI's input_audio data). Whitespace (line breaks of wrapped base64)
// is ignored.
func DecodeBase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return -1
		}
		return r
	}, s)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		var err2 error
		if b, err2 = base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "=")); err2 != nil {
			return nil, invalidf("invalid base64 data: %v", err)
		}
	}
	return b, nil
}

// ParseDataURL reads a data URL, "data:<type>[;<param>…];base64,<data>",
// and returns its media type (lower case, without parameters) and its
// decoded data. Only base64 data URLs are read: media are binary.
func ParseDataURL(s string) (mediaType string, data []byte, err error) {
	rest, ok := cutPrefixFold(s, "data:")
	if !ok {
		return "", nil, invalidf("not a data URL (want data:<type>;base64,<data>)")
	}
	header, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", nil, invalidf("data URL without a comma before its data")
	}
	params := strings.Split(header, ";")
	mediaType = strings.ToLower(strings.TrimSpace(params[0]))
	isBase64 := false
	for _, p := range params[1:] {
		if strings.EqualFold(strings.TrimSpace(p), "base64") {
			isBase64 = true
		}
	}
	if !isBase64 {
		return "", nil, invalidf("data URL of type %q is not base64-encoded (want data:%s;base64,<data>)", mediaType, mediaType)
	}
	data, err = DecodeBase64(payload)
	if err != nil {
		return "", nil, fmt.Errorf("data URL: %w", err)
	}
	return mediaType, data, nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// ImageURL reads an image sent as a URL (OpenAI's image_url.url, the
// Responses API's input_image image_url): a data URL whose declared type
// is an image type matching its content. An http(s) URL wraps
// ErrRemoteURL; anything else, ErrInvalid.
func ImageURL(s string) ([]byte, error) {
	if _, ok := cutPrefixFold(s, "http://"); ok {
		return nil, fmt.Errorf("%w: send the image as a data URL (data:image/png;base64,…)", ErrRemoteURL)
	}
	if _, ok := cutPrefixFold(s, "https://"); ok {
		return nil, fmt.Errorf("%w: send the image as a data URL (data:image/png;base64,…)", ErrRemoteURL)
	}
	typ, data, err := ParseDataURL(s)
	if err != nil {
		return nil, err
	}
	return data, checkImageType(typ, data)
}

// checkImageType checks that data is an image of the declared type.
func checkImageType(typ string, data []byte) error {
	want, ok := imageTypes[typ]
	if !ok {
		if strings.HasPrefix(typ, "image/") {
			return invalidf("unsupported image type %q (image/jpeg, image/png, image/gif and image/webp are supported)", typ)
		}
		return invalidf("the data URL's type %q is not an image type (image/jpeg, image/png, image/gif or image/webp)", typ)
	}
	got := Sniff(data)
	if got == want {
		return nil
	}
	if name, ok := formatNames[got]; ok {
		return invalidf("the data URL says %s but the data is %s", typ, name)
	}
	return invalidf("the data URL says %s but the data is not an image of that type (%s)", typ, describe(data))
}

// ImageData reads an image as Ollama's API sends it: base64, or a data
// URL (whose type must then match the content).
func ImageData(s string) ([]byte, error) {
	if _, ok := cutPrefixFold(strings.TrimSpace(s), "data:"); ok {
		return ImageURL(strings.TrimSpace(s))
	}
	return DecodeBase64(s)
}

// AudioData reads OpenAI's input_audio: base64 data in a format, of
// which only "wav" is supported; the data must be a WAV file.
func AudioData(data, format string) ([]byte, error) {
	if !strings.EqualFold(format, "wav") {
		return nil, invalidf("audio format %q is not supported (wav)", format)
	}
	b, err := DecodeBase64(data)
	if err != nil {
		return nil, err
	}
	if Sniff(b) != "wav" {
		return nil, invalidf("the audio's format is wav but the data is not a WAV file (%s)", describe(b))
	}
	return b, nil
}
