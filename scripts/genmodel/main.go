// Command genmodel writes the deterministic test models of
// models/testmodels:
//
//	go run ./scripts/genmodel -kind bigram -o /tmp/bigram.gguf
//	go run ./scripts/genmodel -kind llama1b -type q4_0 -o /tmp/llama1b-q4_0.gguf
//	go run ./scripts/genmodel -kind small -type f16 -seed 7 -o /tmp/small.gguf
//	go run ./scripts/genmodel -kind reranker -o /tmp/reranker.gguf
//	go run ./scripts/genmodel -kind vision -o /tmp/vision.gguf
//	go run ./scripts/genmodel -kind vision-bench -type q8_0 -o /tmp/vbench.gguf
//	go run ./scripts/genmodel -kind gemma4 -type f32 -o /tmp/gemma4.gguf
//	go run ./scripts/genmodel -kind qwen35moe -type q8_0 -o /tmp/qwen35moe.gguf
//
// Kinds: bigram (known greedy answers, always F32), bigram-heavy (the
// same answers from 12 blocks 1024 wide, F16, whose outputs are zero: a
// real model's cost, for speculative decoding benchmarks), reranker (a BERT
// reranker with known scores, always F32), vision (a tiny random text
// model and its LLaVA-style projector, written beside it as
// NAME.mmproj.gguf for -o NAME.gguf; always F32), vision-bench (the same
// with a smol135m text model of -type and a ViT-S-sized projector, for
// benchmarks), llama1b, smol135m, small and tiny (random weights of -type
// f32, f16, q8_0 or q4_0), and gemma4, qwen35 and qwen35moe (random weights
// of -type in the layouts of llama.cpp's architectures of those names:
// testmodels.Gemma4Tiny, Qwen35Tiny and Qwen35MoETiny; qwen35-mtp and
// qwen35moe-mtp add Qwen 3.5's multi-token-prediction block).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

func main() {
	kind := flag.String("kind", "bigram", "model: bigram, bigram-heavy, reranker, vision, vision-bench, llama1b, smol135m, small, tiny, gemma4, qwen35, qwen35moe, qwen35-mtp or qwen35moe-mtp")
	typ := flag.String("type", "q4_0", "weight type of the random models: f32, f16, q8_0 or q4_0")
	seed := flag.Int64("seed", 1, "seed of the random models")
	out := flag.String("o", "", "output file (required)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*kind, *typ, *seed, *out); err != nil {
		fmt.Fprintln(os.Stderr, "genmodel:", err)
		os.Exit(1)
	}
}

func run(kind, typ string, seed int64, out string) error {
	start := time.Now()
	var err error
	switch strings.ToLower(kind) {
	case "bigram":
		err = testmodels.WriteBigram(out)
	case "bigram-heavy":
		err = testmodels.WriteBigramHeavy(out, 12)
	case "reranker":
		err = testmodels.WriteReranker(out)
	case "vision", "vision-bench":
		proj := strings.TrimSuffix(out, ".gguf") + ".mmproj.gguf"
		if kind == "vision" {
			err = testmodels.WriteVision(out, proj)
		} else if t, terr := tensorType(typ); terr != nil {
			err = terr
		} else {
			err = testmodels.WriteVisionOf(out, proj, testmodels.Smol135M, t, testmodels.VisionBench)
		}
		if err == nil {
			if fi, serr := os.Stat(proj); serr == nil {
				fmt.Printf("wrote %s: %d bytes\n", proj, fi.Size())
			}
		}
	case "llama1b", "smol135m", "small", "tiny":
		shape := map[string]testmodels.Shape{
			"llama1b": testmodels.Llama1B, "smol135m": testmodels.Smol135M, "small": testmodels.Small, "tiny": testmodels.Tiny,
		}[strings.ToLower(kind)]
		t, terr := tensorType(typ)
		if terr != nil {
			return terr
		}
		err = testmodels.WriteRandomLlama(out, shape, t, seed)
	case "gemma4", "qwen35", "qwen35moe", "qwen35-mtp", "qwen35moe-mtp":
		t, terr := tensorType(typ)
		if terr != nil {
			return terr
		}
		k := strings.ToLower(kind)
		if k == "gemma4" {
			err = testmodels.WriteRandomGemma4(out, testmodels.Gemma4Tiny, t, seed)
			break
		}
		s := testmodels.Qwen35Tiny
		if strings.HasPrefix(k, "qwen35moe") {
			s = testmodels.Qwen35MoETiny
		}
		s.MTP = strings.HasSuffix(k, "-mtp")
		err = testmodels.WriteRandomQwen35(out, s, t, seed)
	default:
		return fmt.Errorf("unknown -kind %q (bigram, bigram-heavy, reranker, vision, vision-bench, llama1b, smol135m, small, tiny, gemma4, qwen35, qwen35moe, qwen35-mtp, qwen35moe-mtp)", kind)
	}
	if err != nil {
		return err
	}
	fi, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: %d bytes in %s\n", out, fi.Size(), time.Since(start).Round(time.Millisecond))
	return nil
}

func tensorType(typ string) (gguf.TensorType, error) {
	switch strings.ToLower(typ) {
	case "f32":
		return gguf.F32, nil
	case "f16":
		return gguf.F16, nil
	case "q8_0":
		return gguf.Q8_0, nil
	case "q4_0":
		return gguf.Q4_0, nil
	}
	return 0, fmt.Errorf("unknown -type %q (f32, f16, q8_0, q4_0)", typ)
}
