// Package testmodels writes small deterministic GGUF models for tests and
// benchmarks. It is pure Go (no cgo, no engine): the files are meant to be
// loaded by llama.cpp through the engine.
//
// # The bigram model
//
// [WriteBigram] writes a tiny llama-architecture model (about 3.8 MB, all
// F32) whose greedy output is known exactly, so tests can assert on the
// generated text:
//
//   - The ChatML generation prompt ("...<|im_start|>assistant\n") is
//     answered with [BigramAnswer] and then <|im_end|> (end of
//     generation; the model carries a ChatML tokenizer.chat_template).
//   - The prompt [CountPrompt] ("one") continues with [CountAnswer]
//     (" two three ... ten") and then </s>.
//   - [HelloPrompt], [ColorPrompt] and [LoopPrompt] give [HelloAnswer],
//     [ColorAnswer] and the endless [LoopAnswer].
//   - Any prompt whose last token is not in the table ends at once: the
//     first generated token is </s> and the answer is empty.
//
// How it works: the vocabulary is a SentencePiece ("llama") vocabulary of
// <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, <|im_start|>,
// <|im_end|> and a few words (with every prefix of each word, so that
// llama.cpp's SentencePiece merging can build them). The embedding width is
// at least the vocabulary size and token i embeds as the unit vector e_i.
// The single transformer block has attn_output and ffn_down all zero, so
// its residual stream leaves the embedding unchanged whatever attention and
// the feed-forward gate compute. The output matrix maps e_i to a large
// logit for next(i) and 0 for every other token, so the greedy next token
// depends on the current token only: a bigram table. Position, context and
// sampling seed do not matter. Greedy (temperature 0) decoding gives the
// answers exactly; the winning logit leads every other by about 19.6
// (sqrt of the embedding width), so even temperature 0.8 with a 1.1
// repeat penalty picks another token with a probability below 1e-6.
//
// # The scripted tool-calling model
//
// [WriteScript] writes a model of the same construction plus one working
// attention layer (see [Script]) that carries Qwen3's real chat template
// ([Qwen3Template]) and plays a fixed tool-calling script under greedy
// decoding: asked anything, it thinks [ScriptThinking] inside
// <think>…</think> and then writes [ScriptCall] (a Hermes-format call of
// [ScriptTool] with [ScriptArguments]); with thinking switched off by the
// template (enable_thinking false) it writes the call at once; once the
// conversation holds a tool response it answers [ScriptAnswer]. Tests of
// tool calling and thinking run it end to end through both APIs.
//
// [WriteScriptVariant] writes the same kind of model playing a script of
// the test's choosing ([ToolScript]: the tool, its JSON arguments, the
// final answer), shaped for the long prompts of coding agents: a 65536
// context, a 74k-piece vocabulary (letter sequences of up to three
// letters, printable characters, punctuation pairs) that tokenizes prose
// and JSON at about 2.4 characters a token, and two 8-dimensional
// attention heads, so that a 20k-token prompt is prefilled in seconds to
// tens of seconds on a CPU.
//
// [WriteFamilyScript] generalizes that construction to any model family
// (issue 35): a [FamilyScript] names the family's control tokens, its
// real chat template (the test reads it from the engine's llama.cpp
// tree), the generation prompt's last token and the answers' tokens in
// the family's own markup, and the model says them, reasoning and a call
// ([FamilyReasoning], [FamilyTool] with [FamilyArguments]) and, once a
// tool result is in the prompt, [FamilyAnswer]. Tokens an answer repeats
// with different successors (harmony's <|channel|>) are told apart by
// attention heads keyed on pieces written once. [GptOss] is gpt-oss's.
//
// # Random-weight models
//
// [WriteRandomLlama] writes a llama model of any [Shape] (presets
// [Llama1B], [Small], [Tiny]) with deterministic pseudo-random weights in
// F32, F16, Q8_0 or Q4_0, for benchmarks and load tests. Its output is
// gibberish but finite. Tensor data is streamed to the file, so the 1B
// Q4_0 model (about 0.6 GB) is written in seconds without being held in
// memory. Its synthetic SentencePiece vocabulary (special tokens, byte
// tokens, ChatML tokens and letter sequences closed under prefixes)
// tokenizes any text.
//
// # The architectures of 2026
//
// [WriteRandomGemma4] and [WriteRandomQwen35] / [WriteRandomQwen35MoE]
// write random-weight models in the exact tensor layouts and metadata keys
// that llama.cpp v0.5.0 loads for its "gemma4", "qwen35" and "qwen35moe"
// architectures (see [Gemma4Shape] and [Qwen35Shape]; presets
// [Gemma4Tiny], [Qwen35Tiny], [Qwen35MoETiny], each about 2 MB in Q8_0):
// Gemma 4's sliding-window layers (a 512-token window) interleaved with
// global ones, its shared-KV layers and per-layer embeddings; Qwen 3.5's
// gated delta-net recurrent layers interleaved with gated full-attention
// layers, and its MoE variant's routed experts, router and gated shared
// expert. They carry the same synthetic vocabulary and ChatML template as
// the llama models, so they serve through every API. Their state (a
// window, a recurrent state) cannot be cut at any position: the tests of
// prefix reuse, the prompt cache and speculative decoding run on them.
//
// The command scripts/genmodel writes these models from the shell.
package testmodels
