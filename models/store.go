package models

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// ErrNotFound is wrapped for a name the store does not have.
var ErrNotFound = errors.New("model not found")

// ErrUnsupportedModel is wrapped for a model the store has but cannot
// serve: a manifest without a GGUF model layer (Ollama's cloud models,
// safetensors-based models).
var ErrUnsupportedModel = errors.New("unsupported model")

// Store is a model store in a directory laid out like Ollama's:
//
//	manifests/<host>/<namespace>/<model>/<tag>   JSON manifest
//	blobs/sha256-<hex>                           content-addressed blobs
//
// so Tadpole can serve an existing ~/.ollama/models. A bare file
// NAME.gguf directly in the directory is the model NAME:latest as well
// (a manifest of that name wins over it), with the projector
// NAME.mmproj.gguf beside it, or the one mmproj-*.gguf file when NAME.gguf
// is the only bare model (projector files are not models of their own).
//
// The zero value is an empty store. A Store must not be copied after
// first use; its methods are safe for concurrent use by one process.
// Other processes writing the same directory (Ollama itself, a second
// Tadpole) are not coordinated with: garbage collection only protects
// blobs that this Store wrote or looked up recently.
type Store struct {
	Dir string
	// MaxBlobSize is the largest blob the store accepts, in bytes (0: no
	// limit); larger uploads, imports and pulls wrap [ErrBlobTooLarge].
	MaxBlobSize int64
	// MinFreeDisk is the free space in bytes that writing a blob must
	// leave on the store's file system (0: none); writes that would go
	// below it wrap [ErrInsufficientStorage].
	MinFreeDisk int64

	mu      sync.Mutex
	pinned  map[string]time.Time     // blobs kept from GC until a manifest references them
	details map[string]cachedDetails // GGUF details by file path
	checked map[string]checkedFile   // GGUF validation by file path (check.go)
	warned  map[string]string        // the last warning logged per model name (check.go)
	names   nameLocks                // management operations one at a time per name (namelock.go)
}

// Entry is one model of the store.
type Entry struct {
	Name Name
	// Path is the GGUF file of the model: the model layer's blob, or the
	// bare NAME.gguf file.
	Path string
	// Size is the size of all blobs of the manifest (config included, as
	// Ollama reports it), or of the bare file and its projector.
	Size int64
	// Modified is the manifest's (or bare file's) modification time.
	Modified time.Time
	// Digest identifies this version of the model: the hex sha256 of the
	// manifest, as Ollama reports it (its model ID is the first 12
	// characters). A bare GGUF file is not hashed (that would read
	// gigabytes); its Digest is the sha256 of its absolute path, size and
	// modification time, stable while the file is unchanged.
	Digest string
	// ModelDigest is the digest ("sha256:…") of the model layer; "" for a
	// bare file.
	ModelDigest string
	// Manifest is the parsed manifest; nil for a bare file.
	Manifest *Manifest

	Template   string         // the template layer (Ollama's Go template syntax)
	System     string         // the system prompt layer
	License    []string       // license layers, in order
	Params     map[string]any // the params layer, typed as NormalizeOption does
	Adapters   []string       // paths of LoRA adapter blobs
	Projectors []string       // paths of multimodal projector blobs (a bare file's: see Store)
	Draft      string         // path of the draft model's blob (Modelfile DRAFT), or ""
	Messages   []Message      // the messages layer
	Details    Details
}

// ShortDigest is the first 12 hex digits of Digest, Ollama's model ID.
func (e Entry) ShortDigest() string {
	if len(e.Digest) < 12 {
		return e.Digest
	}
	return e.Digest[:12]
}

// Resolve finds a model by name. A name the store does not have is an
// error wrapping [ErrNotFound]; an invalid name is another error.
func (s *Store) Resolve(name string) (Entry, error) {
	n, err := ParseName(name)
	if err != nil {
		return Entry{}, err
	}
	return s.resolve(n)
}

func (s *Store) resolveOnce(n Name) (Entry, error) {
	p, stored, err := s.findManifest(n)
	switch {
	case err == nil:
		return s.manifestEntry(p, stored)
	case !errors.Is(err, fs.ErrNotExist):
		return Entry{}, err
	}
	if p, fi, ok := s.bareFile(n); ok {
		if err := s.checkFile(p); err != nil {
			return Entry{}, fmt.Errorf("model %q: %w", n.String(), err)
		}
		return s.bareEntry(n, p, fi), nil
	}
	return Entry{}, fmt.Errorf("model %q: %w", n.String(), ErrNotFound)
}

// bareFile finds the NAME.gguf file of a short name (default host and
// namespace, tag latest).
func (s *Store) bareFile(n Name) (string, os.FileInfo, bool) {
	n = n.withDefaults()
	if s.Dir == "" || n.Host != DefaultHost || n.Namespace != DefaultNamespace || n.Tag != DefaultTag || !namePart.MatchString(n.Model) ||
		isProjectorFileName(n.Model+".gguf") {
		return "", nil, false
	}
	p := filepath.Join(s.Dir, n.Model+".gguf")
	// os.Stat follows links, so a link to a GGUF file is a model too.
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return "", nil, false
	}
	return p, fi, true
}

func (s *Store) bareEntry(n Name, p string, fi os.FileInfo) Entry {
	abs, err := filepath.Abs(p)
	if err != nil {
		abs = p
	}
	h := sha256.New()
	fmt.Fprintf(h, "tadpole bare gguf\x00%s\x00%d\x00%d", abs, fi.Size(), fi.ModTime().UnixNano())
	d, _ := s.ggufDetails(p) // an unreadable header leaves the details empty
	e := Entry{
		Name:     n.withDefaults(),
		Path:     p,
		Size:     fi.Size(),
		Modified: fi.ModTime(),
		Digest:   hex.EncodeToString(h.Sum(nil)),
		Details:  d,
	}
	// A projector llama.cpp cannot load is left off (logged), so the
	// model still serves text.
	if proj := bareProjector(s.Dir, n.Model); proj != "" {
		if err := s.checkFile(proj); err != nil {
			s.warnInvalid(e.Name, proj, err)
		} else {
			e.Projectors = []string{proj}
			if pfi, err := os.Stat(proj); err == nil {
				e.Size += pfi.Size()
			}
			fmt.Fprintf(h, "\x00%s\x00%d\x00%d", proj, e.Size, mtime(proj))
			e.Digest = hex.EncodeToString(h.Sum(nil))
		}
	}
	return e
}

func mtime(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.ModTime().UnixNano()
}

// maxSmallBlob bounds the template, system, license, params and messages
// layers read into memory.
const maxSmallBlob = 64 << 20

// manifestEntry reads a model from its manifest at p.
func (s *Store) manifestEntry(p string, n Name) (Entry, error) {
	raw, err := os.ReadFile(p)
	if err != nil {
		return Entry{}, fmt.Errorf("model %q: %w", n.String(), err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return Entry{}, fmt.Errorf("model %q: %w", n.String(), err)
	}
	m, err := parseManifest(raw)
	if err != nil {
		return Entry{}, fmt.Errorf("model %q: %w", n.String(), err)
	}
	sum := sha256.Sum256(raw)
	e := Entry{
		Name:     n,
		Size:     m.Size(),
		Modified: fi.ModTime(),
		Digest:   hex.EncodeToString(sum[:]),
		Manifest: m,
	}
	for _, l := range m.Layers {
		if err := s.readLayer(&e, l); err != nil {
			return Entry{}, fmt.Errorf("model %q: layer %s (%s): %w", n.String(), l.Digest, l.MediaType, err)
		}
	}
	if e.Path == "" {
		return Entry{}, fmt.Errorf("model %q has no GGUF model layer: %w", n.String(), ErrUnsupportedModel)
	}
	if _, err := os.Stat(e.Path); err != nil {
		// Gone between reading the manifest and here (a delete racing
		// this resolve): not found, as after the delete. The error names
		// the digest, never the store's path.
		if errors.Is(err, fs.ErrNotExist) {
			return Entry{}, fmt.Errorf("model %q: its model blob %s is missing: %w", n.String(), e.ModelDigest, ErrNotFound)
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return Entry{}, fmt.Errorf("model %q: model blob %s: %w", n.String(), e.ModelDigest, err)
	}
	// Nothing may size memory from a GGUF llama.cpp cannot load.
	files := append(append([]string{e.Path}, e.Adapters...), e.Projectors...)
	if e.Draft != "" {
		files = append(files, e.Draft)
	}
	for _, p := range files {
		if err := s.checkFile(p); err != nil {
			return Entry{}, fmt.Errorf("model %q: %w", n.String(), err)
		}
	}
	// Ollama's config blob holds the details; what it lacks comes from
	// the GGUF header.
	e.Details = s.configDetails(m.Config)
	if e.Details.Format == "" || e.Details.Family == "" || e.Details.ParameterSize == "" || e.Details.QuantizationLevel == "" {
		if g, err := s.ggufDetails(e.Path); err == nil {
			e.Details = mergeDetails(e.Details, g)
		}
	}
	return e, nil
}

// readLayer fills in what one layer contributes to an entry.
func (s *Store) readLayer(e *Entry, l Layer) error {
	p, err := s.blobPath(l.Digest)
	if err != nil {
		return err
	}
	text := func() (string, error) {
		b, err := s.readBlob(l.Digest, maxSmallBlob)
		return string(b), err
	}
	switch l.MediaType {
	case MediaTypeModel:
		if e.Path == "" {
			e.Path, e.ModelDigest = p, l.Digest
		}
	case MediaTypeAdapter:
		e.Adapters = append(e.Adapters, p)
	case MediaTypeProjector:
		e.Projectors = append(e.Projectors, p)
	case MediaTypeDraft:
		e.Draft = p
	case MediaTypeTemplate:
		e.Template, err = text()
	case MediaTypeSystem:
		e.System, err = text()
	case MediaTypeLicense:
		var t string
		if t, err = text(); err == nil {
			e.License = append(e.License, t)
		}
	case MediaTypeParams:
		var b []byte
		if b, err = s.readBlob(l.Digest, maxSmallBlob); err == nil {
			e.Params, err = decodeParams(b)
		}
	case MediaTypeMessages:
		var b []byte
		if b, err = s.readBlob(l.Digest, maxSmallBlob); err == nil {
			e.Messages = nil
			err = json.Unmarshal(b, &e.Messages)
		}
	}
	return err
}

// decodeParams reads a params layer. Known options are typed as
// NormalizeOption does; unknown ones, or values of the wrong type (a
// newer or older Ollama may write them), are kept as decoded.
func decodeParams(b []byte) (map[string]any, error) {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	for k, v := range raw {
		if nv, err := NormalizeOption(k, v); err == nil {
			raw[k] = nv
		}
	}
	return raw, nil
}

// mergeDetails fills the empty fields of d from g.
func mergeDetails(d, g Details) Details {
	if d.Format == "" {
		d.Format = g.Format
	}
	if d.Family == "" {
		d.Family, d.Families = g.Family, g.Families
	}
	if d.ParameterSize == "" {
		d.ParameterSize = g.ParameterSize
	}
	if d.QuantizationLevel == "" {
		d.QuantizationLevel = g.QuantizationLevel
	}
	return d
}

// configDetails reads the details Ollama keeps in a manifest's config
// blob; Format is "" when the config has none.
func (s *Store) configDetails(c Layer) Details {
	if c.Digest == "" {
		return Details{}
	}
	b, err := s.readBlob(c.Digest, maxSmallBlob)
	if err != nil {
		return Details{}
	}
	var cfg imageConfig
	if json.Unmarshal(b, &cfg) != nil {
		return Details{}
	}
	d := Details{
		Format:            cfg.ModelFormat,
		Family:            cfg.ModelFamily,
		Families:          cfg.ModelFamilies,
		ParameterSize:     cfg.ModelType,
		QuantizationLevel: cfg.FileType,
	}
	if d.Families == nil && d.Family != "" {
		d.Families = []string{d.Family}
	}
	return d
}

// List returns every servable model of the store, sorted by display
// name: all manifests with a GGUF model layer (unreadable or
// unsupported ones are left out), then the bare NAME.gguf files whose
// name no manifest has. A model whose GGUF file llama.cpp cannot load
// ([ErrInvalidModel]) is left out with a logged warning.
func (s *Store) List() ([]Entry, error) {
	if s.Dir == "" {
		return nil, nil
	}
	names, err := s.manifestNames()
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, n := range names {
		p := filepath.Join(s.manifestsDir(), n.filepath())
		if e, err := s.manifestEntry(p, n); err == nil {
			out = append(out, e)
		} else if errors.Is(err, ErrInvalidModel) {
			s.warnInvalid(n, p, err)
		}
	}
	des, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("list models in %s: %w", s.Dir, err)
	}
	for _, de := range des {
		base, ok := strings.CutSuffix(de.Name(), ".gguf")
		if !ok || !namePart.MatchString(base) || isProjectorFileName(de.Name()) {
			continue
		}
		n := Name{Model: base}.withDefaults()
		if containsName(names, n) {
			continue
		}
		if p, fi, ok := s.bareFile(n); ok {
			if err := s.checkFile(p); err != nil {
				s.warnInvalid(n, p, err)
				continue
			}
			out = append(out, s.bareEntry(n, p, fi))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Name.String(), out[j].Name.String()
		if a != b {
			return a < b
		}
		return out[i].Name.Full() < out[j].Name.Full()
	})
	return out, nil
}

func containsName(names []Name, n Name) bool {
	for _, m := range names {
		if m.EqualFold(n) {
			return true
		}
	}
	return false
}
