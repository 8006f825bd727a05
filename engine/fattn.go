package engine

// #include "llama.h"
// int tp_flash_attn(struct llama_context *ctx);
// int tp_flash_attn_switchable(struct llama_context *ctx);
// int tp_set_flash_attn(struct llama_context *ctx, int on);
import "C"

import (
	"errors"
	"strings"
)

// FlashAttnSwitchable reports whether SetFlashAttn may turn flash
// attention off and back on between decodes: the context was made with it
// on, runs on the CPU only, has one plain KV cache with a stream per
// sequence whose values are not quantized (the graph without flash
// attention copies V transposed), keys and values of one head size, and
// makes logits (not embeddings).
func (c *Context) FlashAttnSwitchable() bool { return c.faSwitch }

// switchable is FlashAttnSwitchable, asked of llama.cpp (NewContext).
func (c *Context) switchable() bool {
	if c.c == nil || c.embd {
		return false
	}
	switch strings.ToLower(c.kvType) {
	case "", "f16", "f32", "bf16":
	default:
		return false
	}
	return C.tp_flash_attn_switchable(c.c) != 0
}

// SetFlashAttn selects whether the following decodes use flash attention.
// Both ways compute the same attention over the same cache; they differ in
// speed (engine/runner/attention.go chooses). It refuses a context that is
// not FlashAttnSwitchable, and reports a failed reservation of the compute
// buffers the new graph needs (the mode then stays as it was).
func (c *Context) SetFlashAttn(on bool) error {
	if !c.faSwitch {
		return errors.New("flash attention cannot be switched on this context")
	}
	if on == c.faOn {
		return nil
	}
	takeLogErrors()
	if C.tp_set_flash_attn(c.c, boolInt(on)) != 0 {
		return errors.New("switch flash attention: " + strings.Join(takeLogErrors(), "; "))
	}
	c.faOn = on
	return nil
}

// FlashAttn reports whether decodes use flash attention now.
func (c *Context) FlashAttn() bool { return c.faOn }

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
