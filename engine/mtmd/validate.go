package mtmd

import (
	"fmt"
	"math"
	"strings"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// Projector file checks. clip.cpp reads a projector's header with ggml's
// GGUF getters, which GGML_ASSERT the stored type of every value; it
// GGML_ASSERTs image_mean/image_std and reads three floats from them
// unchecked; it aborts on an audio projector type mtmd has no
// preprocessor for and on an unknown MiniCPM-V version; and the graph
// builders dereference optional tensors they need and let ggml assert on
// shapes that do not fit. checkProjector refuses all of that before
// llama.cpp sees the file:
//
//   - every clip.* key clip.cpp reads has the type it reads it as, the
//     required ones are present, sizes are within the limits below;
//   - at least one encoder; known projector types, the vision ones for
//     vision and the audio ones mtmd can preprocess for audio;
//   - the LLaVA projectors ("mlp", and "mlp" with mm.3 which clip.cpp runs
//     as "mlp_norm") in depth: every tensor the graph uses is present with
//     the shape it needs, and the projection width is the text model's.
//
// Other projector types get the header checks only: their graphs'
// tensor shapes are not checked yet (a file converted by llama.cpp's own
// scripts has the right ones; a crafted one could still reach a ggml
// assertion).

// Limits on projector hyperparameters, far above released projectors
// (ViT widths are at most a few thousand, image sizes about a thousand
// pixels): they bound what clip.cpp allocates for its warm-up graph.
const (
	MaxProjectorEmbd   = 1 << 16 // clip.*.embedding_length
	MaxProjectorHeads  = 1 << 10 // clip.*.attention.head_count
	MaxProjectorFF     = 1 << 20 // clip.*.feed_forward_length
	MaxProjectorBlocks = gguf.MaxBlockCount
	MaxProjectorImage  = 4096    // clip.vision.image_size and grid pinpoints
	MaxMelBins         = 1 << 12 // clip.audio.num_mel_bins
)

// visionTypes are clip.cpp's projector types for images; audioTypes those
// mtmd has an audio preprocessor for (mtmd.cpp init_audio aborts on the
// others, "glma" among them).
var (
	visionTypes = map[string]bool{
		"mlp": true, "ldp": true, "ldpv2": true, "resampler": true, "adapter": true,
		"qwen2vl_merger": true, "qwen2.5vl_merger": true, "qwen3vl_merger": true, "gemma3": true,
		"idefics3": true, "pixtral": true, "internvl": true, "llama4": true, "qwen2.5o": true,
		"lfm2": true, "kimivl": true, "lightonocr": true, "cogvlm": true, "janus_pro": true, "glm4v": true,
	}
	audioTypes = map[string]bool{"ultravox": true, "qwen2a": true, "qwen2.5o": true, "voxtral": true}
)

type valueKind int

const (
	kindBool valueKind = iota
	kindString
	kindU32
	kindI32
	kindF32
	kindF32Array
	kindI32Array
)

// projectorKeys are the keys clip.cpp reads and the GGUF type it reads
// each as (the getter asserts it).
var projectorKeys = func() map[string]valueKind {
	k := map[string]valueKind{
		"general.name":                       kindString,
		"general.description":                kindString,
		"clip.projector_type":                kindString,
		"clip.vision.projector_type":         kindString,
		"clip.audio.projector_type":          kindString,
		"clip.vision.mm_patch_merge_type":    kindString,
		"clip.has_vision_encoder":            kindBool,
		"clip.has_audio_encoder":             kindBool,
		"clip.use_gelu":                      kindBool,
		"clip.use_silu":                      kindBool,
		"clip.vision.image_size":             kindU32,
		"clip.vision.patch_size":             kindU32,
		"clip.vision.image_crop_resolution":  kindU32,
		"clip.minicpmv_query_num":            kindU32,
		"clip.vision.projector.scale_factor": kindU32,
		"clip.vision.preproc_image_size":     kindU32,
		"clip.vision.spatial_merge_size":     kindU32,
		"clip.vision.n_wa_pattern":           kindU32,
		"clip.audio.num_mel_bins":            kindU32,
		"clip.audio.projector.stack_factor":  kindU32,
		"clip.minicpmv_version":              kindI32,
		"clip.vision.image_mean":             kindF32Array,
		"clip.vision.image_std":              kindF32Array,
		"clip.vision.image_grid_pinpoints":   kindI32Array,
		"clip.vision.feature_layer":          kindI32Array,
	}
	for _, m := range []string{"vision", "audio"} {
		for _, s := range []string{"embedding_length", "feed_forward_length", "block_count", "projection_dim", "attention.head_count"} {
			k["clip."+m+"."+s] = kindU32
		}
		k["clip."+m+".attention.layer_norm_epsilon"] = kindF32
	}
	return k
}()

func (k valueKind) String() string {
	return [...]string{"bool", "string", "uint32", "int32", "float32", "array of float32", "array of int32"}[k]
}

func invalid(key, format string, args ...any) error {
	return &gguf.ValidationError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// checkProjector validates a projector header for a text model whose input
// embeddings are textEmbd wide.
func checkProjector(f *gguf.File, textEmbd int) error {
	for _, kv := range f.KVs {
		want, ok := projectorKeys[kv.Key]
		if !ok {
			continue
		}
		okType := false
		switch want {
		case kindBool:
			_, okType = kv.Value.(bool)
		case kindString:
			_, okType = kv.Value.(string)
		case kindU32:
			_, okType = kv.Value.(uint32)
		case kindI32:
			_, okType = kv.Value.(int32)
		case kindF32:
			_, okType = kv.Value.(float32)
		case kindF32Array:
			_, okType = kv.Value.([]float32)
		case kindI32Array:
			switch kv.Value.(type) {
			case []int32, []uint32:
				okType = true
			}
		}
		if !okType {
			return invalid(kv.Key, "%s is a %T, llama.cpp reads it as %s", kv.Key, kv.Value, want)
		}
	}
	vision, _ := f.Bool("clip.has_vision_encoder")
	audio, _ := f.Bool("clip.has_audio_encoder")
	if !vision && !audio {
		return invalid("clip.has_vision_encoder", "the projector has neither a vision nor an audio encoder")
	}
	if g, _ := f.Bool("clip.use_gelu"); g {
		if s, _ := f.Bool("clip.use_silu"); s {
			return invalid("clip.use_silu", "clip.use_gelu and clip.use_silu are both set")
		}
	}
	if vision {
		if err := checkModality(f, "vision", textEmbd); err != nil {
			return err
		}
	}
	if audio {
		if err := checkModality(f, "audio", textEmbd); err != nil {
			return err
		}
	}
	return nil
}

// projectorType is the type clip.cpp gives one modality.
func projectorType(f *gguf.File, modality string) string {
	if t, _ := f.String("clip.projector_type"); t != "" {
		return t
	}
	t, _ := f.String("clip." + modality + ".projector_type")
	if t == "" && modality == "vision" {
		return "mlp"
	}
	return t
}

func u32(f *gguf.File, key string) (int64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	return int64(v.(uint32)), true // typed by checkProjector
}

// hparams are one modality's sizes, read and bounded.
type hparams struct {
	embd, heads, ff, blocks int64
	image, patch            int64
}

func checkModality(f *gguf.File, m string, textEmbd int) error {
	typ := projectorType(f, m)
	if m == "vision" && !visionTypes[typ] {
		return invalid("clip.projector_type", "vision projector type %q is not supported", typ)
	}
	if m == "audio" && !audioTypes[typ] {
		return invalid("clip.projector_type", "audio projector type %q is not supported (%s)", typ, keys(audioTypes))
	}
	var h hparams
	req := func(suffix string, dst *int64, lo, hi int64) error {
		key := "clip." + m + "." + suffix
		v, ok := u32(f, key)
		if !ok {
			return invalid(key, "%s is missing", key)
		}
		if v < lo || v > hi {
			return invalid(key, "%s %d is out of range (%d..%d)", key, v, lo, hi)
		}
		*dst = v
		return nil
	}
	var projDim int64
	for _, c := range []struct {
		suffix string
		dst    *int64
		lo, hi int64
	}{
		{"embedding_length", &h.embd, 1, MaxProjectorEmbd},
		{"attention.head_count", &h.heads, 1, MaxProjectorHeads},
		{"feed_forward_length", &h.ff, 0, MaxProjectorFF},
		{"block_count", &h.blocks, 0, MaxProjectorBlocks},
		{"projection_dim", &projDim, 0, math.MaxUint32},
	} {
		if err := req(c.suffix, c.dst, c.lo, c.hi); err != nil {
			return err
		}
	}
	if h.embd%h.heads != 0 {
		return invalid("clip."+m+".attention.head_count", "%d heads do not divide the width %d", h.heads, h.embd)
	}
	epsKey := "clip." + m + ".attention.layer_norm_epsilon"
	eps, ok := f.Get(epsKey)
	if !ok {
		return invalid(epsKey, "%s is missing", epsKey)
	}
	if e := float64(eps.(float32)); math.IsNaN(e) || math.IsInf(e, 0) || e < 0 {
		return invalid(epsKey, "%s %v is not a finite non-negative number", epsKey, e)
	}
	if m == "audio" {
		var mel int64
		if err := req("num_mel_bins", &mel, 1, MaxMelBins); err != nil {
			return err
		}
		return nil
	}

	// Vision.
	var err error
	if h.image, err = reqTop(f, "clip.vision.image_size", 1, MaxProjectorImage); err != nil {
		return err
	}
	if h.patch, err = reqTop(f, "clip.vision.patch_size", 1, h.image); err != nil {
		return err
	}
	for _, key := range []string{"clip.vision.image_mean", "clip.vision.image_std"} {
		v, ok := f.Get(key)
		if !ok {
			return invalid(key, "%s is missing", key)
		}
		a := v.([]float32)
		if len(a) < 3 {
			return invalid(key, "%s has %d values, 3 needed", key, len(a))
		}
		for _, x := range a[:3] {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || (key == "clip.vision.image_std" && x == 0) {
				return invalid(key, "%s holds %v", key, x)
			}
		}
	}
	if v, ok := f.Get("clip.vision.image_grid_pinpoints"); ok {
		p := intArray(v)
		if len(p)%2 != 0 {
			return invalid("clip.vision.image_grid_pinpoints", "clip.vision.image_grid_pinpoints has an odd number (%d) of values", len(p))
		}
		for _, x := range p {
			if x < 1 || x > MaxProjectorImage {
				return invalid("clip.vision.image_grid_pinpoints", "clip.vision.image_grid_pinpoints holds %d (1..%d)", x, MaxProjectorImage)
			}
		}
	}
	if typ == "resampler" {
		if v, ok := f.Get("clip.minicpmv_version"); ok {
			switch v.(int32) {
			case 0, 2, 3, 4, 5, 6:
			default:
				return invalid("clip.minicpmv_version", "MiniCPM-V version %d is not supported (2..6)", v.(int32))
			}
		}
	}
	if typ == "mlp" {
		return checkLLaVA(f, h, textEmbd)
	}
	return nil
}

func reqTop(f *gguf.File, key string, lo, hi int64) (int64, error) {
	v, ok := u32(f, key)
	if !ok {
		return 0, invalid(key, "%s is missing", key)
	}
	if v < lo || v > hi {
		return 0, invalid(key, "%s %d is out of range (%d..%d)", key, v, lo, hi)
	}
	return v, nil
}

func intArray(v any) []int64 {
	var out []int64
	switch a := v.(type) {
	case []int32:
		for _, x := range a {
			out = append(out, int64(x))
		}
	case []uint32:
		for _, x := range a {
			out = append(out, int64(int32(x))) // clip.cpp reads int32
		}
	}
	return out
}

func keys(m map[string]bool) string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	// Stable for error messages.
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return strings.Join(s, ", ")
}

// shape is a tensor requirement: dims, where -1 is any size and -2 any
// size at least min.
type tensorCheck struct {
	f *gguf.File
}

// get returns the tensor's dims, or nil when it is absent (an error when
// required).
func (c tensorCheck) get(name string, required bool) ([]uint64, error) {
	t, ok := c.f.Tensor(name)
	if !ok {
		if required {
			return nil, invalid(name, "tensor %s is missing", name)
		}
		return nil, nil
	}
	return t.Dims, nil
}

// want checks a tensor's shape: dims must equal exactly (trailing 1s
// ignored); a want of 0 matches any size.
func (c tensorCheck) want(name string, required bool, want ...uint64) ([]uint64, error) {
	d, err := c.get(name, required)
	if err != nil || d == nil {
		return d, err
	}
	n := len(d)
	for n > 1 && d[n-1] == 1 {
		n--
	}
	if n > len(want) {
		return nil, invalid(name, "tensor %s has shape %v, want %v", name, d, want)
	}
	for i, w := range want {
		got := uint64(1)
		if i < len(d) {
			got = d[i]
		}
		if w != 0 && got != w {
			return nil, invalid(name, "tensor %s has shape %v, want %v", name, d, want)
		}
	}
	return d, nil
}

// f32 checks that an existing tensor is F32 (norm weights and biases:
// ggml's CPU add/mul take F32 operands here).
func (c tensorCheck) f32(name string) error {
	if t, ok := c.f.Tensor(name); ok && t.Type != gguf.F32 {
		return invalid(name, "tensor %s is %s, F32 needed", name, t.Type)
	}
	return nil
}

// checkLLaVA checks the tensors of clip.cpp's LLaVA graph
// (tools/mtmd/models/llava.cpp) for projector type "mlp".
func checkLLaVA(f *gguf.File, h hparams, textEmbd int) error {
	c := tensorCheck{f}
	E := uint64(h.embd)
	p := uint64(h.patch)
	side := uint64(h.image / h.patch)
	nPatches := side * side
	vec := func(name string, required bool, n uint64) error {
		if _, err := c.want(name, required, n); err != nil {
			return err
		}
		return c.f32(name)
	}
	if _, err := c.want("v.patch_embd.weight", true, p, p, 3, E); err != nil {
		return err
	}
	if t, _ := f.Tensor("v.patch_embd.weight"); t.Type != gguf.F32 && t.Type != gguf.F16 {
		return invalid(t.Name, "tensor %s is %s, F32 or F16 needed", t.Name, t.Type)
	}
	if err := vec("v.patch_embd.bias", false, E); err != nil {
		return err
	}
	nPos := nPatches
	if d, err := c.want("v.class_embd", false, E); err != nil {
		return err
	} else if d != nil {
		nPos++
		if err := c.f32("v.class_embd"); err != nil {
			return err
		}
	}
	pe, err := c.want("v.position_embd.weight", true, E, 0)
	if err != nil {
		return err
	}
	if len(pe) < 2 || pe[1] < nPos {
		return invalid("v.position_embd.weight", "tensor v.position_embd.weight has shape %v: %d positions needed", pe, nPos)
	}
	for _, n := range []string{"v.pre_ln.weight", "v.pre_ln.bias", "v.post_ln.weight", "v.post_ln.bias"} {
		if err := vec(n, false, E); err != nil {
			return err
		}
	}
	for il := range h.blocks {
		b := fmt.Sprintf("v.blk.%d.", il)
		for _, n := range []string{"attn_q", "attn_k", "attn_v", "attn_out"} {
			if _, err := c.want(b+n+".weight", true, E, E); err != nil {
				return err
			}
			if err := vec(b+n+".bias", false, E); err != nil {
				return err
			}
		}
		for _, n := range []string{"ln1.weight", "ln1.bias", "ln2.weight", "ln2.bias"} {
			if err := vec(b+n, false, E); err != nil {
				return err
			}
		}
		up, err := c.get(b+"ffn_up.weight", true)
		if err != nil {
			return err
		}
		down, err := c.get(b+"ffn_down.weight", true)
		if err != nil {
			return err
		}
		upName, downName := "ffn_up", "ffn_down"
		if len(down) >= 1 && down[0] == E {
			// clip.cpp swaps up and down for old LLaVA conversions.
			up, down = down, up
			upName, downName = downName, upName
		}
		if len(up) < 2 {
			return invalid(b+upName+".weight", "tensor %s%s.weight has shape %v", b, upName, up)
		}
		X := up[1]
		if _, err := c.want(b+upName+".weight", true, E, X); err != nil {
			return err
		}
		if _, err := c.want(b+downName+".weight", true, X, E); err != nil {
			return err
		}
		if err := vec(b+upName+".bias", false, X); err != nil {
			return err
		}
		if err := vec(b+downName+".bias", false, E); err != nil {
			return err
		}
		if _, err := c.want(b+"ffn_gate.weight", false, E, X); err != nil {
			return err
		}
		if err := vec(b+"ffn_gate.bias", false, X); err != nil {
			return err
		}
	}
	// Feature layers (granite): the outputs of the listed layers are
	// concatenated; the encoder runs up to the deepest one.
	width := E
	if v, ok := f.Get("clip.vision.feature_layer"); ok {
		seen := map[int64]bool{}
		for _, l := range intArray(v) {
			if l > h.blocks {
				return invalid("clip.vision.feature_layer", "feature layer %d is past the %d blocks", l, h.blocks)
			}
			if l >= 0 {
				seen[l] = true
			}
		}
		if len(seen) > 0 {
			width = E * uint64(len(seen))
		}
	}
	mm0, err := c.want("mm.0.weight", true, width, 0)
	if err != nil {
		return err
	}
	if len(mm0) < 2 {
		return invalid("mm.0.weight", "tensor mm.0.weight has shape %v", mm0)
	}
	H := mm0[1]
	if err := vec("mm.0.bias", true, H); err != nil {
		return err
	}
	var out uint64
	if _, ok := f.Tensor("mm.3.weight"); ok {
		// Yi-style LLaVA: clip.cpp runs it as "mlp_norm".
		if err := vec("mm.1.weight", true, H); err != nil {
			return err
		}
		if err := vec("mm.1.bias", true, H); err != nil {
			return err
		}
		mm3, err := c.want("mm.3.weight", true, H, 0)
		if err != nil {
			return err
		}
		if len(mm3) < 2 {
			return invalid("mm.3.weight", "tensor mm.3.weight has shape %v", mm3)
		}
		out = mm3[1]
		for _, n := range []string{"mm.3.bias", "mm.4.weight", "mm.4.bias"} {
			if err := vec(n, true, out); err != nil {
				return err
			}
		}
	} else {
		// clip_n_mmproj_embd reads mm.2.weight whether or not the graph
		// would run without it.
		mm2, err := c.want("mm.2.weight", true, H, 0)
		if err != nil {
			return err
		}
		if len(mm2) < 2 {
			return invalid("mm.2.weight", "tensor mm.2.weight has shape %v", mm2)
		}
		out = mm2[1]
		if err := vec("mm.2.bias", true, out); err != nil {
			return err
		}
	}
	if out != uint64(textEmbd) {
		return invalid("mm.2.weight", "the projector's embeddings are %d wide, the text model's %d: the projector is not this model's", out, textEmbd)
	}
	return nil
}
