package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// Create builds the model name from a Modelfile and writes its manifest,
// replacing any model of that name. progress, when not nil, receives
// status lines like Ollama's ("parsing GGUF", "creating new layer
// sha256:…", "using existing layer sha256:…", "writing manifest",
// "success").
//
// The first FROM is the base: a blob digest ("@sha256:…" or
// "sha256:…") of a GGUF in the store; a path to a GGUF file, absolute,
// "~/…", or relative to mf.Dir (copied into the store's blobs); or the
// name of a model in the store, whose layers are inherited. Further FROM
// lines add GGUF files or blobs: a projector (general.type "projector"
// or architecture "clip") or an adapter (general.type "adapter").
// Then, as in Ollama:
//   - TEMPLATE and SYSTEM replace the inherited layer (an empty value
//     removes it; the last line wins);
//   - PARAMETER lines are merged into the inherited params: an option
//     set here replaces the inherited value, repeated "stop" lines
//     accumulate into one list;
//   - LICENSE lines are added to the inherited licenses;
//   - MESSAGE lines, when present, replace the inherited messages;
//   - ADAPTER lines (a GGUF path or blob digest) add LoRA adapters;
//   - DRAFT (a language model's GGUF path or blob digest, not the
//     model's own file) replaces the inherited draft model; its
//     vocabulary must be the model's, token for token.
//
// Every GGUF file or blob is validated first ([CheckGGUF]): one llama.cpp
// cannot load fails the create with an error wrapping [ErrInvalidModel]
// that names the key, and no manifest is written.
func (s *Store) Create(name string, mf *Modelfile, progress func(status string)) error {
	n, err := ParseName(name)
	if err != nil {
		return err
	}
	if s.Dir == "" {
		return errNoDir
	}
	if progress == nil {
		progress = func(string) {}
	}
	if err := mf.Validate(); err != nil {
		return fmt.Errorf("create %s: %w", n, err)
	}
	defer s.lockName(n)()
	return s.Redact(s.create(n, mf, progress))
}

// create is Create with the name's management lock held.
func (s *Store) create(n Name, mf *Modelfile, progress func(status string)) error {
	if progress == nil {
		progress = func(string) {}
	}
	b := &builder{s: s, mf: mf, progress: progress}
	if err := b.build(); err != nil {
		return fmt.Errorf("create %s: %w", n, err)
	}
	progress("writing manifest")
	if err := s.WriteLayers(n, b.layers...); err != nil {
		return err
	}
	progress("success")
	return nil
}

// builder assembles the layers of a model being created.
type builder struct {
	s        *Store
	mf       *Modelfile
	progress func(string)
	layers   []Layer
	params   map[string]any // inherited params
}

func (b *builder) build() error {
	first := true
	for _, c := range b.mf.Commands {
		if c.Name != CmdFrom {
			continue
		}
		if first {
			if err := b.from(c.Value); err != nil {
				return err
			}
			first = false
			continue
		}
		l, err := b.ggufLayer(c.Value, "")
		if err != nil {
			return fmt.Errorf("FROM %s: %w", c.Value, err)
		}
		if l.MediaType == MediaTypeModel {
			return fmt.Errorf("FROM %s: a second FROM must be a projector or adapter GGUF, not another model", c.Value)
		}
		b.layers = append(b.layers, l)
	}

	newParams := map[string]any{}
	var messages []Message
	for _, c := range b.mf.Commands {
		var err error
		switch c.Name {
		case CmdTemplate:
			err = b.replaceText(MediaTypeTemplate, c.Value)
		case CmdSystem:
			err = b.replaceText(MediaTypeSystem, c.Value)
		case CmdLicense:
			err = b.addText(MediaTypeLicense, []byte(c.Value))
		case CmdAdapter:
			var l Layer
			if l, err = b.ggufLayer(c.Value, MediaTypeAdapter); err != nil {
				err = fmt.Errorf("ADAPTER %s: %w", c.Value, err)
			} else if err = b.checkAdapter(l); err != nil {
				err = fmt.Errorf("ADAPTER %s: %w", c.Value, err)
			} else {
				b.layers = append(b.layers, l)
			}
		case CmdDraft:
			err = b.draft(c.Value)
		case CmdMessage:
			messages = append(messages, Message{Role: c.Key, Content: c.Value})
		case CmdParameter:
			var v any
			if v, err = ParseOption(c.Key, c.Value); err == nil {
				if options[c.Key].Type == OptionStringList {
					old, _ := newParams[c.Key].([]string)
					v = append(old, v.(string))
				}
				newParams[c.Key] = v
			}
		}
		if err != nil {
			return err
		}
	}
	if len(newParams) > 0 {
		merged := map[string]any{}
		for k, v := range b.params {
			merged[k] = v
		}
		for k, v := range newParams {
			merged[k] = v
		}
		raw, err := json.Marshal(merged)
		if err != nil {
			return err
		}
		b.removeLayers(MediaTypeParams)
		if err := b.addText(MediaTypeParams, raw); err != nil {
			return err
		}
	}
	if len(messages) > 0 {
		raw, err := json.Marshal(messages)
		if err != nil {
			return err
		}
		b.removeLayers(MediaTypeMessages)
		if err := b.addText(MediaTypeMessages, raw); err != nil {
			return err
		}
	}
	return nil
}

// from sets up the base of the model from the first FROM.
func (b *builder) from(v string) error {
	if d := strings.TrimPrefix(v, "@"); ValidDigest(d) || strings.HasPrefix(v, "@") || isPathLike(v) {
		l, err := b.ggufLayer(v, MediaTypeModel)
		if err != nil {
			return fmt.Errorf("FROM %s: %w", v, err)
		}
		b.layers = append(b.layers, l)
		return nil
	}
	p, err := b.path(v)
	if err != nil {
		return fmt.Errorf("FROM %s: %w", v, err)
	}
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		l, err := b.ggufLayer(v, MediaTypeModel)
		if err != nil {
			return fmt.Errorf("FROM %s: %w", v, err)
		}
		b.layers = append(b.layers, l)
		return nil
	}
	n, nameErr := ParseName(v)
	if nameErr != nil {
		return fmt.Errorf("FROM %s: no such file, and not a model name: %v", v, nameErr)
	}
	base, err := b.s.resolvePinned(n)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("FROM %s: no such file, and no model %q in the store: %w", v, n.String(), ErrNotFound)
	} else if err != nil {
		return fmt.Errorf("FROM %s: %w", v, err)
	}
	if base.Manifest == nil { // a bare GGUF file: import it
		l, err := b.importFile(base.Path, MediaTypeModel)
		if err != nil {
			return fmt.Errorf("FROM %s: %w", v, err)
		}
		b.layers = append(b.layers, l)
		return nil
	}
	for _, l := range base.Manifest.Layers {
		// resolvePinned keeps the inherited blobs while we build.
		b.progress("using existing layer " + l.Digest)
		b.layers = append(b.layers, l)
	}
	b.params = base.Params
	return nil
}

// draft sets the model's draft model (DRAFT v), replacing an inherited
// one: a language model, not the model's own file, with the model's
// vocabulary (checked here so that a model whose draft can never load is
// not created).
func (b *builder) draft(v string) error {
	l, err := b.ggufLayer(v, MediaTypeDraft)
	if err != nil {
		return fmt.Errorf("DRAFT %s: %w", v, err)
	}
	kept := b.layers[:0]
	var model Layer
	for _, o := range b.layers {
		switch o.MediaType {
		case MediaTypeDraft:
			continue
		case MediaTypeModel:
			if model.Digest == "" {
				model = o
			}
		}
		kept = append(kept, o)
	}
	b.layers = kept
	if l.Digest == model.Digest {
		return fmt.Errorf("DRAFT %s: the draft model is the model itself (same file %s)", v, l.Digest)
	}
	mp, _ := b.s.blobPath(model.Digest)
	dp, _ := b.s.blobPath(l.Digest)
	if err := sameVocab(mp, dp); err != nil {
		return fmt.Errorf("DRAFT %s: %w", v, err)
	}
	b.layers = append(b.layers, l)
	return nil
}

// isPathLike reports whether a FROM or ADAPTER value can only be a path.
func isPathLike(v string) bool {
	return filepath.IsAbs(v) || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") ||
		v == "~" || strings.HasPrefix(v, "~/") || strings.HasSuffix(strings.ToLower(v), ".gguf")
}

// path resolves a file named in the Modelfile: "~/" is the home
// directory, a relative path is relative to mf.Dir.
func (b *builder) path(v string) (string, error) {
	if v == "~" || strings.HasPrefix(v, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		v = filepath.Join(home, v[1:])
	} else if !filepath.IsAbs(v) && b.mf.Dir != "" {
		v = filepath.Join(b.mf.Dir, v)
	}
	return filepath.Abs(v)
}

// ggufLayer makes a layer of a GGUF file or blob. The media type is
// want when given, else chosen from the GGUF's general.type.
func (b *builder) ggufLayer(v, want string) (Layer, error) {
	if d := strings.TrimPrefix(v, "@"); ValidDigest(d) || strings.HasPrefix(v, "@") {
		if err := checkDigest(d); err != nil {
			return Layer{}, err
		}
		if !b.s.HasBlob(d) {
			return Layer{}, fmt.Errorf("blob %s is not in the store: %w", d, fs.ErrNotExist)
		}
		p, _ := b.s.blobPath(d)
		b.progress("parsing GGUF")
		mt, err := ggufMediaType(p, want)
		if err != nil {
			return Layer{}, err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return Layer{}, err
		}
		b.progress("using existing layer " + d)
		return Layer{MediaType: mt, Digest: d, Size: fi.Size()}, nil
	}
	p, err := b.path(v)
	if err != nil {
		return Layer{}, err
	}
	return b.importFile(p, want)
}

// importFile copies a GGUF file into the store's blobs.
func (b *builder) importFile(p, want string) (Layer, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return Layer{}, err
	}
	if fi.IsDir() {
		return Layer{}, fmt.Errorf("%s is a directory; only GGUF files can be imported", p)
	}
	if err := b.s.CheckCapacity(fi.Size()); err != nil {
		return Layer{}, err
	}
	b.progress("parsing GGUF")
	mt, err := ggufMediaType(p, want)
	if err != nil {
		return Layer{}, err
	}
	f, err := os.Open(p)
	if err != nil {
		return Layer{}, err
	}
	defer f.Close()
	d, size, existed, err := b.s.writeBlob(f, "")
	if err != nil {
		return Layer{}, err
	}
	b.progressLayer(d, existed)
	return Layer{MediaType: mt, Digest: d, Size: size}, nil
}

// ggufMediaType checks that p is a GGUF file llama.cpp can load (see
// CheckGGUF: errors wrap ErrInvalidModel and name the key) and picks its
// layer type.
func ggufMediaType(p, want string) (string, error) {
	f, err := CheckGGUF(p)
	if err != nil {
		return "", err
	}
	if want == MediaTypeDraft && !f.IsModel() {
		typ, _ := f.String("general.type")
		if typ == "" {
			typ = f.Architecture()
		}
		return "", fmt.Errorf("a DRAFT must be a language model, and this GGUF is a %s: %w", typ, ErrInvalidModel)
	}
	if want == MediaTypeModel && !f.IsModel() {
		typ, _ := f.String("general.type")
		if typ == "" {
			typ = f.Architecture()
		}
		return "", fmt.Errorf("the first FROM must be a language model, and this GGUF is a %s (a projector or adapter comes in a second FROM, after its model): %w", typ, ErrInvalidModel)
	}
	if want != "" {
		return want, nil
	}
	typ, _ := f.String("general.type")
	switch {
	case typ == "adapter":
		return MediaTypeAdapter, nil
	case typ == "projector" || typ == "mmproj" || f.Architecture() == "clip":
		return MediaTypeProjector, nil
	}
	return MediaTypeModel, nil
}

func (b *builder) progressLayer(d string, existed bool) {
	if existed {
		b.progress("using existing layer " + d)
	} else {
		b.progress("creating new layer " + d)
	}
}

// replaceText replaces the layer of a media type by one holding text, or
// removes it when text is empty.
func (b *builder) replaceText(mediaType, text string) error {
	b.removeLayers(mediaType)
	if text == "" {
		return nil
	}
	return b.addText(mediaType, []byte(text))
}

// addText stores data as a blob and appends a layer for it.
func (b *builder) addText(mediaType string, data []byte) error {
	d, size, existed, err := b.s.writeBlob(bytes.NewReader(data), "")
	if err != nil {
		return err
	}
	b.progressLayer(d, existed)
	b.layers = append(b.layers, Layer{MediaType: mediaType, Digest: d, Size: size})
	return nil
}

func (b *builder) removeLayers(mediaType string) {
	b.layers = slices.DeleteFunc(b.layers, func(l Layer) bool { return l.MediaType == mediaType })
}

// sameVocab checks that the GGUF files at model and draft have one
// vocabulary: the same tokenizer and the same token texts at every id, as
// the runner checks again at load (runner.CheckDraftVocab). The error
// names the first difference.
func sameVocab(model, draft string) error {
	vocab := func(p string) (string, []string, error) {
		f, err := gguf.Open(p)
		if err != nil {
			return "", nil, err
		}
		kind, _ := f.String("tokenizer.ggml.model")
		toks, ok := f.Strings("tokenizer.ggml.tokens")
		if !ok {
			return "", nil, fmt.Errorf("%s has no vocabulary (tokenizer.ggml.tokens): %w", filepath.Base(p), ErrInvalidModel)
		}
		return kind, toks, nil
	}
	mk, mt, err := vocab(model)
	if err != nil {
		return err
	}
	dk, dt, err := vocab(draft)
	if err != nil {
		return err
	}
	switch {
	case mk != dk:
		return fmt.Errorf("the draft model's tokenizer is %q and the model's %q: %w", dk, mk, ErrInvalidModel)
	case len(mt) != len(dt):
		return fmt.Errorf("the draft model's vocabulary has %d tokens and the model's %d: %w", len(dt), len(mt), ErrInvalidModel)
	}
	for i := range mt {
		if mt[i] != dt[i] {
			return fmt.Errorf("token %d is %q in the draft model and %q in the model: %w", i, dt[i], mt[i], ErrInvalidModel)
		}
	}
	return nil
}

// checkAdapter refuses a LoRA adapter that does not fit the model's base
// (gguf.CheckAdapter: its architecture, tensors and shapes): at create,
// naming both, rather than at first use.
func (b *builder) checkAdapter(l Layer) error {
	var base *Layer
	for i := range b.layers {
		if b.layers[i].MediaType == MediaTypeModel {
			base = &b.layers[i]
			break
		}
	}
	if base == nil {
		return fmt.Errorf("an adapter needs its base model first (FROM): %w", ErrInvalidModel)
	}
	open := func(d string) (*gguf.File, error) {
		p, err := b.s.blobPath(d)
		if err != nil {
			return nil, err
		}
		return gguf.Open(p)
	}
	af, err := open(l.Digest)
	if err != nil {
		return err
	}
	bf, err := open(base.Digest)
	if err != nil {
		return err
	}
	if _, err := gguf.CheckAdapter(af, bf); err != nil {
		return fmt.Errorf("the LoRA adapter does not fit the base model %s (%s): %v: %w", base.Digest, bf.Architecture(), err, ErrInvalidModel)
	}
	return nil
}
