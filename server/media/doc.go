// Package media decodes the images and audio clips that clients send with
// a generation request, in pure Go, before anything reaches llama.cpp's
// multimodal library (mtmd): images to 8-bit RGB (Decode), WAV audio to
// mono float32 PCM at the projector's sample rate (DecodeWAV), and the
// wire encodings the API dialects use for them (ParseDataURL for
// "data:image/png;base64,…" URLs, DecodeBase64 for Ollama's bare base64).
//
// Every size is checked before memory is allocated from it: an image's
// header (ReadHeader) against the pixel limit, the vision encoder's own
// bounds and a bound on pixels per byte of file (decompression bombs),
// with overflow-checked arithmetic, before the image is decoded; the
// header also says what decoding will allocate (Header.DecodeMemory),
// which the server's decode budget holds first; an audio clip's length against
// MaxAudioSeconds before it is converted. Errors say which format and what
// is wrong, in words a client can act on; the dialects wrap them in a 400.
//
// Apart from Fetcher (fetch.go: image URLs, only with --allow-image-urls),
// the package does no I/O and knows nothing of models.
package media
