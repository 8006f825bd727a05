package engine

import "errors"

// Flash attention per step.
//
// The engine once switched flash attention off and on between decodes on
// a CPU context (the older llama.cpp's CPU flash-attention kernel ran one
// query row at a time, slow where many prompt tokens met a long cache),
// by reaching into llama.cpp's internal headers. The binding now uses the
// public API only (llama.h), which fixes the choice when a context is made
// (llama_context_params.flash_attn_type: on, off or auto): no context is
// switchable, and the runner's per-step choice (engine/runner/attention.go)
// stays idle. The API below stays so that it can return if llama.h ever
// offers the switch.

// FlashAttnSwitchable reports whether SetFlashAttn may turn flash
// attention off and back on between decodes: never with the public API.
func (c *Context) FlashAttnSwitchable() bool { return false }

// SetFlashAttn would select whether the following decodes use flash
// attention; it refuses every context (FlashAttnSwitchable).
func (c *Context) SetFlashAttn(on bool) error {
	if on == c.faOn {
		return nil
	}
	return errors.New("flash attention cannot be switched on this context")
}

// FlashAttn reports whether the context was made with flash attention on
// (asked for, or left to llama.cpp: auto).
func (c *Context) FlashAttn() bool { return c.faOn }
