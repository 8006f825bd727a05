package models

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// Details describe a model the way Ollama's /api/tags and /api/show do;
// the JSON field names are that wire format.
type Details struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

// HumanNumber writes a parameter count the way Ollama shows parameter
// sizes: "260K", "135.00M" style for millions (two decimals unless whole),
// "1.1B" for billions (one decimal unless whole), plain digits below a
// thousand.
func HumanNumber(n uint64) string {
	const thousand, million, billion = 1e3, 1e6, 1e9
	f := float64(n)
	switch {
	case f >= billion:
		if v := f / billion; v == math.Floor(v) {
			return fmt.Sprintf("%.0fB", v)
		}
		return fmt.Sprintf("%.1fB", f/billion)
	case f >= million:
		if v := f / million; v == math.Floor(v) {
			return fmt.Sprintf("%.0fM", v)
		}
		return fmt.Sprintf("%.2fM", f/million)
	case f >= thousand:
		return fmt.Sprintf("%.0fK", f/thousand)
	}
	return strconv.FormatUint(n, 10)
}

// DetailsOf reads the details of a GGUF file from its header.
func DetailsOf(f *gguf.File) Details {
	d := Details{Format: "gguf", Family: f.Architecture()}
	if d.Family != "" {
		d.Families = []string{d.Family}
	}
	if n, ok := f.Uint("general.parameter_count"); ok && n > 0 {
		d.ParameterSize = HumanNumber(n)
	} else if n := f.ParameterCount(); n > 0 {
		d.ParameterSize = HumanNumber(n)
	}
	if ft, ok := f.FileType(); ok {
		d.QuantizationLevel = ft.String()
	}
	return d
}

// cachedDetails are the details of one version of a file: they are
// cached until the file changes.
type cachedDetails struct {
	size    int64
	modTime time.Time
	details Details
}

// ggufDetails reads the details of the GGUF file at path, through a cache
// so that listing a store does not parse every header every time.
func (s *Store) ggufDetails(path string) (Details, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Details{}, err
	}
	s.mu.Lock()
	c, ok := s.details[path]
	s.mu.Unlock()
	if ok && c.size == fi.Size() && c.modTime.Equal(fi.ModTime()) {
		return c.details, nil
	}
	f, err := gguf.Open(path)
	if err != nil {
		return Details{}, err
	}
	d := DetailsOf(f)
	s.mu.Lock()
	if s.details == nil {
		s.details = map[string]cachedDetails{}
	}
	s.details[path] = cachedDetails{fi.Size(), fi.ModTime(), d}
	s.mu.Unlock()
	return d, nil
}
