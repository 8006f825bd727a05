package gguf

import "fmt"

// validateModel checks a language model's hyperparameters and vocabulary
// the way llama.cpp reads them (llama-model.cpp load_hparams,
// llama-model-loader.cpp get_key/get_arr/get_key_or_arr, llama-vocab.cpp
// load), so that what would abort the process or allocate without bound
// there is refused here:
//
//   - block_count sizes every per-layer array and the layer vector; it must
//     match the blk.N tensors and be at most LLAMA_MAX_LAYERS.
//   - get_arr GGML_ASSERTs on an array of the wrong element type (a float
//     array of head counts, a numeric array of labels): abort.
//   - GGML_ASSERTs on the expert counts and on rope.scaling.type: abort.
//   - gguf_get_arr_str/gguf_get_arr_data GGML_ASSERT on the tokenizer
//     arrays' types, scores and token types are read for every token
//     (shorter arrays are read past their end), and a repeated token
//     trips GGML_ASSERT(id_to_token.size() == token_to_id.size()).
//   - head_count_kv must divide head_count: ggml's mul_mat asserts that the
//     heads broadcast (at the first decode).
//
// Values llama.cpp reads with an exact type (uint32 for the sizes) are
// refused in another type too: llama.cpp would not load the model.
func (f *File) validateModel() error {
	arch := f.Architecture()
	if arch == "" {
		return invalid("general.architecture", "general.architecture is missing or not a string")
	}
	c := modelCheck{f: f, arch: arch}
	if _, _, err := c.scalar("context_length", true, 1, MaxContextLength); err != nil {
		return err
	}
	embd, _, err := c.scalar("embedding_length", true, 1, MaxEmbeddingLength)
	if err != nil {
		return err
	}
	blocks, err := c.blockCount()
	if err != nil {
		return err
	}
	if err := c.experts(); err != nil {
		return err
	}
	if _, _, err := c.perLayer("feed_forward_length", blocks, MaxFeedForward); err != nil {
		return err
	}
	heads, haveHeads, err := c.perLayer("attention.head_count", blocks, embd)
	if err != nil {
		return err
	}
	headsKV, haveKV, err := c.perLayer("attention.head_count_kv", blocks, MaxEmbeddingLength)
	if err != nil {
		return err
	}
	if haveHeads && haveKV {
		for i := range heads {
			h, kv := heads[i], headsKV[i]
			if kv > h || (kv > 0 && h%kv != 0) {
				return invalid(arch+".attention.head_count_kv",
					"%s.attention.head_count_kv is %d in block %d, which does not divide %s.attention.head_count %d",
					arch, kv, i, arch, h)
			}
		}
	}
	for _, k := range []string{"attention.key_length", "attention.value_length"} {
		if _, _, err := c.scalar(k, false, 1, MaxHeadSize); err != nil {
			return err
		}
	}
	for _, k := range []string{"ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank", "ssm.group_count"} {
		if _, _, err := c.scalar(k, false, 0, MaxSSMSize); err != nil {
			return err
		}
	}
	if err := c.arrays(blocks, embd); err != nil {
		return err
	}
	return c.vocab()
}

// modelCheck holds what the checks of one model share.
type modelCheck struct {
	f    *File
	arch string
}

// scalar checks the integer "<arch>.<suffix>": present when required, in
// lo..hi, of type uint32 (llama.cpp's get_key<uint32_t> takes no other).
func (c modelCheck) scalar(suffix string, required bool, lo, hi uint64) (uint64, bool, error) {
	key := c.arch + "." + suffix
	v, ok := c.f.Get(key)
	if !ok {
		if required {
			return 0, false, invalid(key, "%s is missing", key)
		}
		return 0, false, nil
	}
	n, err := integer(key, v)
	if err != nil {
		return 0, false, err
	}
	if n < lo || n > hi {
		return 0, false, invalid(key, "%s is %d, want %d to %d", key, n, lo, hi)
	}
	if _, is32 := v.(uint32); !is32 {
		return 0, false, invalid(key, "%s has type %s; llama.cpp reads it as uint32", key, goTypeName(v))
	}
	return n, true, nil
}

// integer is an integer scalar as a uint64; negative or non-integer
// values are errors naming the key.
func integer(key string, v any) (uint64, error) {
	switch x := v.(type) {
	case uint8:
		return uint64(x), nil
	case uint16:
		return uint64(x), nil
	case uint32:
		return uint64(x), nil
	case uint64:
		return x, nil
	case int8, int16, int32, int64:
		n := toInt64(x)
		if n < 0 {
			return 0, invalid(key, "%s is %d, a negative count", key, n)
		}
		return uint64(n), nil
	}
	return 0, invalid(key, "%s is a %s, want an integer", key, goTypeName(v))
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	}
	return 0
}

// goTypeName names a value's GGUF type ("uint64", "array of float32").
func goTypeName(v any) string {
	switch v.(type) {
	case uint8:
		return "uint8"
	case int8:
		return "int8"
	case uint16:
		return "uint16"
	case int16:
		return "int16"
	case uint32:
		return "uint32"
	case int32:
		return "int32"
	case float32:
		return "float32"
	case bool:
		return "bool"
	case string:
		return "string"
	case uint64:
		return "uint64"
	case int64:
		return "int64"
	case float64:
		return "float64"
	case []any:
		return "array of arrays"
	}
	if t, err := arrayElemType(v); err == nil {
		return "array of " + t.String()
	}
	return fmt.Sprintf("%T", v)
}

// blockCount checks <arch>.block_count against the blk.N tensors: when
// the file has any, block_count is the highest N + 1.
func (c modelCheck) blockCount() (uint64, error) {
	key := c.arch + ".block_count"
	v, ok := c.f.Get(key)
	if !ok {
		return 0, invalid(key, "%s is missing", key)
	}
	n, err := integer(key, v)
	if err != nil {
		return 0, err
	}
	var top uint64
	found := false
	for _, t := range c.f.Tensors {
		i, ok, err := blockIndex(t.Name)
		if err != nil {
			return 0, err
		}
		if ok && (!found || i > top) {
			top, found = i, true
		}
	}
	if found && n != top+1 {
		return 0, invalid(key, "%s is %d but the file has tensors for %d blocks", key, n, top+1)
	}
	if n < 1 || n > MaxBlockCount {
		return 0, invalid(key, "%s is %d, want 1 to %d (llama.cpp's LLAMA_MAX_LAYERS)", key, n, MaxBlockCount)
	}
	if _, is32 := v.(uint32); !is32 {
		return 0, invalid(key, "%s has type %s; llama.cpp reads it as uint32", key, goTypeName(v))
	}
	return n, nil
}

// experts checks the expert counts llama.cpp GGML_ASSERTs on.
func (c modelCheck) experts() error {
	n, _, err := c.scalar("expert_count", false, 0, MaxExperts)
	if err != nil {
		return err
	}
	used, _, err := c.scalar("expert_used_count", false, 0, n)
	if err != nil {
		return err
	}
	groups, _, err := c.scalar("expert_group_count", false, 0, MaxExperts)
	if err != nil {
		return err
	}
	groupUsed, _, err := c.scalar("expert_group_used_count", false, 0, MaxExperts)
	if err != nil {
		return err
	}
	k := c.arch + ".expert_"
	switch {
	case n == 0 && (used != 0 || groups != 0):
		return invalid(k+"count", "%scount is 0 but %sused_count is %d and %sgroup_count is %d", k, k, used, k, groups)
	case n > 0 && used == 0:
		return invalid(k+"used_count", "%sused_count is 0 with %scount %d", k, k, n)
	case n > 0 && groups >= n:
		return invalid(k+"group_count", "%sgroup_count is %d, want less than %scount %d", k, groups, k, n)
	case groups > 1 && (n%groups != 0 || groupUsed == 0 || groupUsed >= groups):
		return invalid(k+"group_count", "%sgroup_count %d must divide %scount %d and exceed %sgroup_used_count %d (> 0)",
			k, groups, k, n, k, groupUsed)
	}
	return nil
}

// perLayer checks a key llama.cpp reads with get_key_or_arr: a uint32
// scalar for every block, or an array of exactly block_count uint32 or
// int32 values. Each value is at most hi. It returns the value of each
// block.
func (c modelCheck) perLayer(suffix string, blocks, hi uint64) ([]uint64, bool, error) {
	key := c.arch + "." + suffix
	v, ok := c.f.Get(key)
	if !ok {
		return nil, false, nil
	}
	var vals []uint64
	switch a := v.(type) {
	case []uint32:
		for _, x := range a {
			vals = append(vals, uint64(x))
		}
	case []int32:
		for i, x := range a {
			if x < 0 {
				return nil, false, invalid(key, "%s[%d] is %d, a negative count", key, i, x)
			}
			vals = append(vals, uint64(x))
		}
	default:
		if arrayLen(v) >= 0 {
			return nil, false, invalid(key, "%s has type %s; llama.cpp reads uint32 or int32 values (and aborts on others)", key, goTypeName(v))
		}
		n, ok, err := c.scalar(suffix, true, 0, hi)
		if err != nil || !ok {
			return nil, false, err
		}
		vals = make([]uint64, blocks)
		for i := range vals {
			vals[i] = n
		}
		return vals, true, nil
	}
	if uint64(len(vals)) != blocks {
		return nil, false, invalid(key, "%s has %d values but %s.block_count is %d", key, len(vals), c.arch, blocks)
	}
	for i, x := range vals {
		if x > hi {
			return nil, false, invalid(key, "%s[%d] is %d, want 0 to %d", key, i, x, hi)
		}
	}
	return vals, true, nil
}

// arrays checks the other arrays llama.cpp reads with get_arr, whose
// element type it GGML_ASSERTs, and the rope scaling type it asserts on.
func (c modelCheck) arrays(blocks, embd uint64) error {
	key := c.arch + ".rope.dimension_sections"
	if v, ok := c.f.Get(key); ok && arrayLen(v) >= 0 {
		if !isInt32Array(v) || arrayLen(v) != 4 {
			return invalid(key, "%s has type %s (%d values), want 4 int32 values", key, goTypeName(v), arrayLen(v))
		}
	}
	for _, key := range []string{"xielu.alpha_n", "xielu.alpha_p", "xielu.beta", "xielu.eps"} {
		if v, ok := c.f.Get(key); ok && arrayLen(v) >= 0 {
			if _, isF32 := v.([]float32); !isF32 || uint64(arrayLen(v)) != blocks {
				return invalid(key, "%s has type %s (%d values), want %d float32 values", key, goTypeName(v), arrayLen(v), blocks)
			}
		}
	}
	key = c.arch + ".classifier.output_labels"
	if v, ok := c.f.Get(key); ok && arrayLen(v) >= 0 {
		if _, isStr := v.([]string); !isStr {
			return invalid(key, "%s has type %s, want an array of strings", key, goTypeName(v))
		}
	}
	key = c.arch + ".rope.scaling.type"
	if v, ok := c.f.Get(key); ok {
		switch v {
		case "none", "linear", "yarn", "longrope":
		default:
			return invalid(key, "%s is %q, want none, linear, yarn or longrope", key, fmt.Sprint(v))
		}
	}
	if c.arch == "gemma-embedding" {
		for _, suffix := range []string{"dense_2_feat_in", "dense_3_feat_out"} {
			if n, ok, err := c.scalar(suffix, false, 0, MaxEmbeddingLength); err != nil {
				return err
			} else if ok && n != 0 && n != embd {
				return invalid(c.arch+"."+suffix, "%s.%s is %d, want 0 or embedding_length %d", c.arch, suffix, n, embd)
			}
		}
	}
	return nil
}

func isInt32Array(v any) bool {
	switch v.(type) {
	case []int32, []uint32:
		return true
	}
	return false
}

// vocab checks the tokenizer arrays against each other and against
// token_embd.weight.
func (c modelCheck) vocab() error {
	if _, _, err := c.scalar("vocab_size", false, 0, MaxVocab); err != nil {
		return err
	}
	v, ok := c.f.Get("tokenizer.ggml.model")
	model, isStr := v.(string)
	if !ok || !isStr {
		return invalid("tokenizer.ggml.model", "tokenizer.ggml.model is missing or not a string")
	}
	if model == "no_vocab" || model == "none" {
		return nil
	}
	v, ok = c.f.Get("tokenizer.ggml.tokens")
	tokens, isStrs := v.([]string)
	if !ok || !isStrs {
		return invalid("tokenizer.ggml.tokens", "tokenizer.ggml.tokens is missing or not an array of strings (%s)", goTypeName(v))
	}
	n := len(tokens)
	if n == 0 || n > MaxVocab {
		return invalid("tokenizer.ggml.tokens", "tokenizer.ggml.tokens has %d tokens, want 1 to %d", n, MaxVocab)
	}
	seen := make(map[string]int, n)
	for i, tok := range tokens {
		if tok == "" {
			tok = fmt.Sprintf("[EMPTY_%d]", i) // what llama.cpp renames it to
		}
		if j, dup := seen[tok]; dup {
			return invalid("tokenizer.ggml.tokens", "tokenizer.ggml.tokens has token %q twice (ids %d and %d)", tok, j, i)
		}
		seen[tok] = i
	}
	if v, ok := c.f.Get("tokenizer.ggml.scores"); ok {
		if a, isF32 := v.([]float32); !isF32 || len(a) != n {
			return invalid("tokenizer.ggml.scores", "tokenizer.ggml.scores has type %s (%d values), want %d float32 values (one per token)",
				goTypeName(v), max(arrayLen(v), 0), n)
		}
	}
	if v, ok := c.f.Get("tokenizer.ggml.token_type"); ok {
		if !isInt32Array(v) || arrayLen(v) != n {
			return invalid("tokenizer.ggml.token_type", "tokenizer.ggml.token_type has type %s (%d values), want %d int32 values (one per token)",
				goTypeName(v), max(arrayLen(v), 0), n)
		}
	}
	if v, ok := c.f.Get("tokenizer.ggml.merges"); ok {
		if _, isStrs := v.([]string); !isStrs {
			return invalid("tokenizer.ggml.merges", "tokenizer.ggml.merges has type %s, want an array of strings", goTypeName(v))
		}
	} else if model == "gpt2" {
		return invalid("tokenizer.ggml.merges", "tokenizer.ggml.merges is missing; the gpt2 tokenizer needs it")
	}
	if v, ok := c.f.Get("tokenizer.ggml.precompiled_charsmap"); ok {
		if _, isBytes := v.([]uint8); !isBytes {
			return invalid("tokenizer.ggml.precompiled_charsmap", "tokenizer.ggml.precompiled_charsmap has type %s, want an array of uint8", goTypeName(v))
		}
	}
	if t, ok := c.f.Tensor("token_embd.weight"); ok && len(t.Dims) == 2 && t.Dims[1] != uint64(n) {
		return invalid("token_embd.weight", "token_embd.weight has %d rows but tokenizer.ggml.tokens has %d tokens", t.Dims[1], n)
	}
	return nil
}
