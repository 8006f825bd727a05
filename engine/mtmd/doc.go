// Package mtmd binds llama.cpp's multimodal library (tools/mtmd: the CLIP
// image encoders, the Whisper-style audio encoders and their projectors)
// for images and audio in prompts.
//
// # Build
//
// The package links llama.cpp's libmtmd (built by scripts/llama.sh from
// the same tree as the engine, through the Makefile's CGO_LDFLAGS) and
// includes its public header mtmd.h only. (mtmd-helper, which decodes
// image files, is not used: images arrive decoded, as RGB.) shim.cpp is
// an exception barrier: a C++ exception crossing into Go would end the
// process.
//
// # Use
//
//	p, err := mtmd.Load(projPath, model, mtmd.Options{})
//	img, err := mtmd.NewImage(rgb, w, h)
//	chunks, err := p.Tokenize("look: "+mtmd.Marker()+" what is it?", []*mtmd.Media{img}, true, true)
//	for _, c := range chunks {
//		if c.Media != nil {
//			embd, err := p.Encode(c.Media, 0) // c.Media.NTokens × p.EmbdSize() floats
//			// decode embd through an engine.EmbdBatch at c.Media.NPos positions
//		} else {
//			// decode c.Text as tokens
//		}
//	}
//	mtmd.CloseChunks(chunks); img.Close(); p.Close()
//
// # The engine contract
//
// Nothing a client sends reaches a GGML_ASSERT: images are bounded
// (MaxImageSide, MaxImagePixels) and their byte count checked, audio is
// bounded (MaxAudioSamples) and finite, the marker count is checked
// against the media before mtmd sees the text (mtmd's legacy "<__image__>"
// marker counts as one), a chunk can only be encoded by the projector that
// made it, and embeddings are checked finite. Projector files are the
// operator's; their headers are checked before clip.cpp reads them (see
// validate.go for what is and is not covered).
package mtmd
