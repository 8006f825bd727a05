package models

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// Projector is the path of the model's multimodal projector (mmproj)
// file, the first when a manifest has several, or "" for a text-only
// model.
func (e Entry) Projector() string {
	if len(e.Projectors) == 0 {
		return ""
	}
	return e.Projectors[0]
}

// ProjectorInfo is what a projector file says of itself in its GGUF
// metadata (the keys llama.cpp's clip loader reads).
type ProjectorInfo struct {
	// Vision and Audio are clip.has_vision_encoder and
	// clip.has_audio_encoder: which media the projector encodes.
	Vision, Audio bool
	// Type is clip.projector_type (or, for a projector with both
	// encoders, clip.vision.projector_type / clip.audio.projector_type
	// joined by "+"), e.g. "mlp", "gemma3", "qwen2.5o".
	Type string
	// KV are the file's general.* and clip.* keys, as Ollama's
	// /api/show lists them under projector_info.
	KV map[string]any
}

// ReadProjector reads the metadata of a projector GGUF file.
func ReadProjector(path string) (ProjectorInfo, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return ProjectorInfo{}, fmt.Errorf("projector %s: %w", path, err)
	}
	var pi ProjectorInfo
	pi.Vision, _ = f.Bool("clip.has_vision_encoder")
	pi.Audio, _ = f.Bool("clip.has_audio_encoder")
	pi.Type, _ = f.String("clip.projector_type")
	if pi.Type == "" {
		var types []string
		for _, k := range []string{"clip.vision.projector_type", "clip.audio.projector_type"} {
			if t, ok := f.String(k); ok && t != "" {
				types = append(types, t)
			}
		}
		pi.Type = strings.Join(types, "+")
	}
	pi.KV = map[string]any{}
	for _, kv := range f.KVs {
		if strings.HasPrefix(kv.Key, "general.") || strings.HasPrefix(kv.Key, "clip.") {
			pi.KV[kv.Key] = kv.Value
		}
	}
	return pi, nil
}

// bareProjector finds the projector of a bare model file NAME.gguf: the
// file NAME.mmproj.gguf beside it; else, when NAME.gguf is the only bare
// model of the directory, the one file mmproj-*.gguf there (the layout
// of llama.cpp's downloads: model-Q4_K_M.gguf with mmproj-model-f16.gguf).
// "" when there is none or the choice is not certain (several mmproj-*
// files, or several models that could own one): a projector attached to
// the wrong model would feed it embeddings of the wrong width.
func bareProjector(dir, model string) string {
	p := filepath.Join(dir, model+".mmproj.gguf")
	if regularFile(p) {
		return p
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var projs []string
	models := 0
	for _, de := range des {
		name := de.Name()
		if !strings.HasSuffix(strings.ToLower(name), ".gguf") || !regularFile(filepath.Join(dir, name)) {
			continue
		}
		switch {
		case strings.HasPrefix(strings.ToLower(name), "mmproj-"):
			projs = append(projs, filepath.Join(dir, name))
		case !isProjectorFileName(name):
			models++
		}
	}
	if len(projs) != 1 || models != 1 {
		return ""
	}
	return projs[0]
}

func regularFile(p string) bool {
	fi, err := os.Stat(p) // follows links, as bareFile does
	return err == nil && fi.Mode().IsRegular()
}

// isProjectorFileName reports whether a file of the models directory is
// a projector by its name (NAME.mmproj.gguf or mmproj-*.gguf): it is
// not listed as a model of its own.
func isProjectorFileName(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasSuffix(lower, ".mmproj.gguf") || strings.HasPrefix(lower, "mmproj-") || strings.HasPrefix(lower, "mmproj.")
}
