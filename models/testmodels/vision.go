package testmodels

import (
	"fmt"
	"math"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// The vision model: a text model and a LLaVA-style projector (mmproj) for
// it, for tests of images in prompts. WriteVision writes both.
//
// The text model is the random-weight llama of shape VisionText (Tiny,
// F32, seed VisionSeed) with the generated ChatML vocabulary and
// template: its output is gibberish, but it depends on every position of
// the context, so a different image gives different logits.
//
// The projector is of clip.cpp's type "mlp" (LLaVA 1.5's: a CLIP ViT
// whose patch features go through a two-layer GELU MLP), all F32 with
// deterministic pseudo-random weights:
//
//   - the image is resized (padded to a square) to VisionImageSize²
//     pixels and cut into VisionPatchSize² patches: VisionTokens
//     embeddings per image;
//   - a patch embedding (a convolution, 3·8·8 → 32), a class embedding and
//     17 learned positions, a pre-norm, then VisionBlocks ViT blocks of
//     width 32 (4 heads, feed-forward 48); LLaVA takes the features of the
//     second-to-last block, so block 0 runs and block 1 is loaded only;
//   - the projector mm.0 (32 → 64), GELU, mm.2 (64 → projection width,
//     the text model's 64).
//
// Weights are scaled by 1/sqrt(fan-in), so every activation is of order 1
// and the embeddings are finite for any image.
const (
	VisionImageSize = 32
	VisionPatchSize = 8
	VisionTokens    = (VisionImageSize / VisionPatchSize) * (VisionImageSize / VisionPatchSize)
	VisionBlocks    = 2
	VisionSeed      = 23

	visionEmbd  = 32
	visionHeads = 4
	visionFF    = 48
	visionHid   = 64
)

// VisionText is the shape of the vision model's text model.
var VisionText = Tiny

// VisionShape is the shape of a generated projector's vision tower.
type VisionShape struct {
	ImageSize, PatchSize int // pixels per side of the model's input and of a patch
	Embd, Heads, FF      int // the ViT's width, attention heads, feed-forward width
	Blocks               int // ViT blocks (LLaVA runs all but the last)
	Hidden               int // the MLP projector's hidden width
}

// Tokens is the number of embeddings an image takes.
func (v VisionShape) Tokens() int { return (v.ImageSize / v.PatchSize) * (v.ImageSize / v.PatchSize) }

var (
	// VisionTiny is the test projector's tower (VisionTokens positions,
	// an encode in well under a millisecond).
	VisionTiny = VisionShape{ImageSize: VisionImageSize, PatchSize: VisionPatchSize, Embd: visionEmbd, Heads: visionHeads, FF: visionFF, Blocks: VisionBlocks, Hidden: visionHid}
	// VisionBench is shaped like a small ViT (ViT-S/14 at 224 px: 256
	// positions, 13 blocks of width 384, 12 of them run), for benchmarks: an encode costs
	// about 10 GFLOP, a fraction of a second on one CPU core, as small
	// real vision towers do.
	VisionBench = VisionShape{ImageSize: 224, PatchSize: 14, Embd: 384, Heads: 6, FF: 1536, Blocks: 13, Hidden: 1024}
)

// VisionProjector returns the metadata and tensors of the test projector
// with embeddings projDim wide (VisionText.Embd fits the text model; any
// other width makes a projector that does not fit it, for tests).
func VisionProjector(projDim int) ([]gguf.KV, []gguf.Tensor) {
	return VisionProjectorOf(VisionTiny, projDim)
}

// VisionProjectorOf is VisionProjector with a vision tower of shape v.
func VisionProjectorOf(v VisionShape, projDim int) ([]gguf.KV, []gguf.Tensor) {
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: "clip"},
		{Key: "general.type", Value: "mmproj"},
		{Key: "general.name", Value: "Tadpole test vision projector"},
		{Key: "general.description", Value: "Deterministic LLaVA-style projector with random weights for tests."},
		{Key: "general.file_type", Value: uint32(gguf.FileTypeF32)},
		{Key: "clip.has_vision_encoder", Value: true},
		{Key: "clip.projector_type", Value: "mlp"},
		{Key: "clip.vision.image_size", Value: uint32(v.ImageSize)},
		{Key: "clip.vision.patch_size", Value: uint32(v.PatchSize)},
		{Key: "clip.vision.embedding_length", Value: uint32(v.Embd)},
		{Key: "clip.vision.feed_forward_length", Value: uint32(v.FF)},
		{Key: "clip.vision.block_count", Value: uint32(v.Blocks)},
		{Key: "clip.vision.attention.head_count", Value: uint32(v.Heads)},
		{Key: "clip.vision.attention.layer_norm_epsilon", Value: float32(1e-5)},
		{Key: "clip.vision.projection_dim", Value: uint32(projDim)},
		{Key: "clip.vision.image_mean", Value: []float32{0.5, 0.5, 0.5}},
		{Key: "clip.vision.image_std", Value: []float32{0.5, 0.5, 0.5}},
	}
	random := func(name string, std float64, dims ...uint64) gguf.Tensor {
		n := uint64(1)
		for _, d := range dims {
			n *= d
		}
		r := tensorRNG(VisionSeed, name)
		a := float32(std * math.Sqrt(3)) // uniform in [-a, a): standard deviation std
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = a * r.uniform()
		}
		return gguf.Tensor{Name: name, Dims: dims, Type: gguf.F32, Data: encodeF32(vals, gguf.F32)}
	}
	constant := func(name string, n int, v float32) gguf.Tensor {
		return gguf.Tensor{Name: name, Dims: []uint64{uint64(n)}, Type: gguf.F32, Data: constF32(n, v)}
	}
	inv := func(n int) float64 { return 1 / math.Sqrt(float64(n)) }
	e, p, ff, hid := uint64(v.Embd), uint64(v.PatchSize), uint64(v.FF), uint64(v.Hidden)
	nPos := v.Tokens() + 1 // the class embedding first
	tensors := []gguf.Tensor{
		random("v.patch_embd.weight", inv(int(3*p*p)), p, p, 3, e),
		random("v.patch_embd.bias", 0.1, e),
		random("v.class_embd", 0.5, e),
		random("v.position_embd.weight", 0.2, e, uint64(nPos)),
		constant("v.pre_ln.weight", int(e), 1),
		constant("v.pre_ln.bias", int(e), 0),
	}
	for i := range v.Blocks {
		b := fmt.Sprintf("v.blk.%d.", i)
		for _, n := range []string{"attn_q", "attn_k", "attn_v", "attn_out"} {
			tensors = append(tensors,
				random(b+n+".weight", inv(int(e)), e, e),
				random(b+n+".bias", 0.02, e))
		}
		tensors = append(tensors,
			constant(b+"ln1.weight", int(e), 1), constant(b+"ln1.bias", int(e), 0),
			random(b+"ffn_up.weight", inv(int(e)), e, ff), random(b+"ffn_up.bias", 0.02, ff),
			random(b+"ffn_down.weight", inv(int(ff)), ff, e), random(b+"ffn_down.bias", 0.02, e),
			constant(b+"ln2.weight", int(e), 1), constant(b+"ln2.bias", int(e), 0),
		)
	}
	tensors = append(tensors,
		random("mm.0.weight", inv(int(e)), e, hid),
		random("mm.0.bias", 0.02, hid),
		random("mm.2.weight", 2*inv(int(hid)), hid, uint64(projDim)),
		random("mm.2.bias", 0.02, uint64(projDim)),
	)
	return kvs, tensors
}

// WriteVisionProjector writes the test projector with embeddings projDim
// wide to path.
func WriteVisionProjector(path string, projDim int) error {
	kvs, tensors := VisionProjector(projDim)
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		return fmt.Errorf("write vision projector: %w", err)
	}
	return nil
}

// WriteVision writes the vision model's text model to textPath and its
// projector to projPath (see VisionProjector). Name them NAME.gguf and
// NAME.mmproj.gguf and the model store pairs them.
func WriteVision(textPath, projPath string) error {
	return WriteVisionOf(textPath, projPath, VisionText, gguf.F32, VisionTiny)
}

// WriteVisionOf is WriteVision with a text model of shape text in type
// typ and a vision tower of shape v (for benchmarks).
func WriteVisionOf(textPath, projPath string, text Shape, typ gguf.TensorType, v VisionShape) error {
	if err := WriteRandomLlama(textPath, text, typ, VisionSeed); err != nil {
		return fmt.Errorf("vision text model: %w", err)
	}
	kvs, tensors := VisionProjectorOf(v, text.Embd)
	if err := gguf.WriteFile(projPath, kvs, tensors); err != nil {
		return fmt.Errorf("write vision projector: %w", err)
	}
	return nil
}
