package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Media types of manifests, configs and layers, as Ollama writes them.
const (
	MediaTypeManifest  = "application/vnd.docker.distribution.manifest.v2+json"
	MediaTypeConfig    = "application/vnd.docker.container.image.v1+json"
	MediaTypeModel     = "application/vnd.ollama.image.model"
	MediaTypeTemplate  = "application/vnd.ollama.image.template"
	MediaTypeSystem    = "application/vnd.ollama.image.system"
	MediaTypeParams    = "application/vnd.ollama.image.params"
	MediaTypeLicense   = "application/vnd.ollama.image.license"
	MediaTypeAdapter   = "application/vnd.ollama.image.adapter"
	MediaTypeMessages  = "application/vnd.ollama.image.messages"
	MediaTypeProjector = "application/vnd.ollama.image.projector"
	// MediaTypeDraft is a draft model for speculative decoding (Modelfile
	// DRAFT), as Ollama names its layer.
	MediaTypeDraft = "application/vnd.ollama.image.draft"
)

// Layer is one blob of a manifest.
type Layer struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// Manifest is a model's manifest: a config blob and the layers, in
// Docker's image manifest v2 format with Ollama's media types.
type Manifest struct {
	SchemaVersion int     `json:"schemaVersion"`
	MediaType     string  `json:"mediaType"`
	Config        Layer   `json:"config"`
	Layers        []Layer `json:"layers"`
}

// Size is the size of all blobs of the manifest, config included (the
// size Ollama reports for a model).
func (m *Manifest) Size() int64 {
	n := m.Config.Size
	for _, l := range m.Layers {
		n += l.Size
	}
	return n
}

// blobs lists every digest the manifest references.
func (m *Manifest) blobs() []string {
	out := make([]string, 0, len(m.Layers)+1)
	if m.Config.Digest != "" {
		out = append(out, m.Config.Digest)
	}
	for _, l := range m.Layers {
		out = append(out, l.Digest)
	}
	return out
}

// parseManifest decodes and checks a manifest: every digest must be well
// formed, so nothing read from a manifest can name a path outside blobs/.
func parseManifest(raw []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("invalid manifest: %w", err)
	}
	if m.SchemaVersion != 2 {
		return nil, fmt.Errorf("invalid manifest: schemaVersion %d, want 2", m.SchemaVersion)
	}
	if m.Config.Digest != "" {
		if err := checkDigest(m.Config.Digest); err != nil {
			return nil, fmt.Errorf("invalid manifest config: %w", err)
		}
	}
	for _, l := range m.Layers {
		if err := checkDigest(l.Digest); err != nil {
			return nil, fmt.Errorf("invalid manifest layer: %w", err)
		}
		if l.Size < 0 {
			return nil, fmt.Errorf("invalid manifest layer %s: negative size", l.Digest)
		}
	}
	return &m, nil
}

func (s *Store) manifestsDir() string { return filepath.Join(s.Dir, "manifests") }

var errNoDir = errors.New("the model store has no directory")

// findManifest returns the path and stored spelling of a name's manifest.
// An exact match wins; otherwise the name is looked up case-insensitively
// level by level, as Ollama treats names.
func (s *Store) findManifest(n Name) (string, Name, error) {
	if s.Dir == "" {
		return "", n, fs.ErrNotExist
	}
	n = n.withDefaults()
	if !n.valid() {
		return "", n, fmt.Errorf("invalid model name %q", n.Full())
	}
	p := filepath.Join(s.manifestsDir(), n.filepath())
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
		return p, n, nil
	}
	dir := s.manifestsDir()
	want := []string{n.Host, n.Namespace, n.Model, n.Tag}
	got := make([]string, 4)
	for i, part := range want {
		des, err := os.ReadDir(dir)
		if err != nil {
			return "", n, fs.ErrNotExist
		}
		found := false
		for _, de := range des {
			if strings.EqualFold(de.Name(), part) && (i == 3) != de.IsDir() {
				got[i], found = de.Name(), true
				break
			}
		}
		if !found {
			return "", n, fs.ErrNotExist
		}
		dir = filepath.Join(dir, got[i])
	}
	return dir, Name{Host: got[0], Namespace: got[1], Model: got[2], Tag: got[3]}, nil
}

// ReadManifest returns the raw manifest of a model. A name without one is
// an error wrapping [ErrNotFound].
func (s *Store) ReadManifest(name Name) ([]byte, error) {
	p, _, err := s.findManifest(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("model %q: %w", name.String(), ErrNotFound)
		}
		return nil, err
	}
	return os.ReadFile(p)
}

// WriteManifest stores raw as the manifest of a model, replacing any
// manifest of the same name (in any letter case). The manifest must parse
// and every blob it references must be in the store already, so a
// manifest never points at missing data. It is written to a temporary
// file and renamed into place.
func (s *Store) WriteManifest(name Name, raw []byte) error {
	if s.Dir == "" {
		return errNoDir
	}
	name = name.withDefaults()
	if !name.valid() {
		return fmt.Errorf("invalid model name %q", name.Full())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeManifestLocked(name, raw)
}

// writeManifestLocked is WriteManifest with s.mu held.
func (s *Store) writeManifestLocked(name Name, raw []byte) error {
	m, err := parseManifest(raw)
	if err != nil {
		return fmt.Errorf("write manifest of %s: %w", name, err)
	}
	for _, d := range m.blobs() {
		p, _ := s.blobPath(d)
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("write manifest of %s: blob %s is not in the store", name, d)
		}
	}
	old, _, oldErr := s.findManifest(name)
	p := filepath.Join(s.manifestsDir(), name.filepath())
	if err := writeFileAtomic(p, raw); err != nil {
		return fmt.Errorf("write manifest of %s: %w", name, diskError(err))
	}
	if oldErr == nil && old != p {
		os.Remove(old) // the same name spelled in another case
		s.pruneManifestDirs(filepath.Dir(old))
	}
	for _, d := range m.blobs() {
		delete(s.pinned, d) // referenced now: the manifest protects them
	}
	return nil
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it into place, so readers see the old file or the new one, never half.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A leading '.' keeps the temporary file out of listings: no valid
	// name part starts with one.
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// pruneManifestDirs removes dir and its parents up to (not including) the
// manifests directory while they are empty.
func (s *Store) pruneManifestDirs(dir string) {
	root := s.manifestsDir()
	for {
		rel, err := filepath.Rel(root, dir)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			return
		}
		if os.Remove(dir) != nil { // fails unless empty
			return
		}
		dir = filepath.Dir(dir)
	}
}

// manifestNames lists the names of all manifests in the store, skipping
// paths that are not valid names (temporary files, foreign files).
func (s *Store) manifestNames() ([]Name, error) {
	if s.Dir == "" {
		return nil, nil
	}
	var out []Name
	var walk func(dir string, parts []string) error
	walk = func(dir string, parts []string) error {
		des, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && len(parts) == 0 {
				return nil
			}
			return err
		}
		for _, de := range des {
			p := append(parts[:len(parts):len(parts)], de.Name())
			if len(p) < 4 {
				if de.IsDir() {
					if err := walk(filepath.Join(dir, de.Name()), p); err != nil {
						return err
					}
				}
				continue
			}
			if !de.Type().IsRegular() {
				continue
			}
			n := Name{Host: p[0], Namespace: p[1], Model: p[2], Tag: p[3]}
			if n.valid() {
				out = append(out, n)
			}
		}
		return nil
	}
	if err := walk(s.manifestsDir(), nil); err != nil {
		return nil, fmt.Errorf("list manifests in %s: %w", s.Dir, err)
	}
	return out, nil
}

// WriteLayers writes a manifest for name made of the given layers: it
// builds the config blob Ollama writes (model format, family, parameter
// size and quantization from the model layer's GGUF header, and the
// layer digests), stores it, and writes the manifest. Every layer's blob
// must be in the store already.
func (s *Store) WriteLayers(name Name, layers ...Layer) error {
	cfg := imageConfig{
		Architecture: runtime.GOARCH,
		OS:           runtime.GOOS,
		RootFS:       rootFS{Type: "layers", DiffIDs: []string{}},
	}
	for _, l := range layers {
		if err := checkDigest(l.Digest); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, l.Digest)
		if l.MediaType != MediaTypeModel || cfg.ModelFormat != "" {
			continue
		}
		p, _ := s.blobPath(l.Digest)
		d, err := s.ggufDetails(p)
		if err != nil {
			return fmt.Errorf("write %s: model layer %s: %w", name, l.Digest, err)
		}
		cfg.ModelFormat, cfg.ModelFamily, cfg.ModelFamilies = d.Format, d.Family, d.Families
		cfg.ModelType, cfg.FileType = d.ParameterSize, d.QuantizationLevel
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	digest, size, err := s.WriteBlob(strings.NewReader(string(b)), "")
	if err != nil {
		return fmt.Errorf("write %s: config: %w", name, err)
	}
	if layers == nil {
		layers = []Layer{}
	}
	raw, err := json.Marshal(Manifest{
		SchemaVersion: 2,
		MediaType:     MediaTypeManifest,
		Config:        Layer{MediaType: MediaTypeConfig, Digest: digest, Size: size},
		Layers:        layers,
	})
	if err != nil {
		return err
	}
	return s.WriteManifest(name, raw)
}

// imageConfig is the config blob of a manifest. The model_* and
// file_type fields are what Ollama's /api/tags reports as details.
type imageConfig struct {
	ModelFormat   string   `json:"model_format"`
	ModelFamily   string   `json:"model_family"`
	ModelFamilies []string `json:"model_families"`
	ModelType     string   `json:"model_type"` // parameter size, "1.1B"
	FileType      string   `json:"file_type"`  // quantization, "Q4_0"
	Architecture  string   `json:"architecture"`
	OS            string   `json:"os"`
	RootFS        rootFS   `json:"rootfs"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}
