package engine

// #include <stdlib.h>
// #include "llama.h"
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// The memory of models whose state cannot be cut at any position:
// sliding-window attention (Gemma 2/3/4: the window's older cells are
// dropped as it moves) and recurrent layers (Mamba, RWKV, Qwen 3.5's
// gated delta-net, Nemotron-H, Granite 4 hybrids, Kimi Linear: one state
// for the whole sequence). Cutting such a sequence back to a prefix is
// only exact where the memory still holds what the prefix needs; a
// checkpoint (CheckpointState) of the parts that cannot be cut, taken
// at a position, lets the sequence go back to it.

// SlidingWindow is the model's attention window (llama_model_n_swa), 0
// for a model without sliding-window layers.
func (m *Model) SlidingWindow() int { return int(C.llama_model_n_swa(m.c)) }

// Recurrent reports whether the model has recurrent layers (a recurrent
// or hybrid model): its state summarises the whole sequence and cannot be
// cut back to a prefix.
func (m *Model) Recurrent() bool {
	return bool(C.llama_model_is_recurrent(m.c)) || bool(C.llama_model_is_hybrid(m.c))
}

// Uncuttable reports whether a sequence of the model's memory can lose
// what a prefix needs (see Context.PrefixIntact): recurrent layers, or
// sliding-window layers without a full-size window cache.
func (c *Context) Uncuttable() bool {
	return c.model.Recurrent() || (c.model.SlidingWindow() > 0 && !c.swaFull)
}

// SeqPosMin is the smallest position the sequence holds, or -1 when
// empty. For a recurrent state it is the last position it summarises;
// for a sliding window, the oldest cell still kept.
func (c *Context) SeqPosMin(seq int) int {
	return int(C.llama_memory_seq_pos_min(c.mem, C.llama_seq_id(seq)))
}

// PrefixIntact reports whether the sequence still holds what decoding on
// from position n needs after its cells from n on are removed: every
// cell of the window before n (sliding-window models), and no recurrent
// state past n. It is llama-server's test (its pos_min threshold): the
// oldest cell kept must lie before n - window (0 without a window).
func (c *Context) PrefixIntact(seq, n int) bool {
	if n <= 0 {
		return true
	}
	w := 0
	if !c.swaFull {
		w = c.model.SlidingWindow()
	}
	return c.SeqPosMin(seq) < max(n-w, 1)
}

// CheckpointState copies the parts of the sequence's state that cannot be
// cut (its recurrent state, its sliding-window cells) with
// LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY: RestoreCheckpoint puts them back,
// and the sequence can then be cut back to the position the checkpoint
// was taken at.
func (c *Context) CheckpointState(seq int) ([]byte, error) {
	if err := c.checkSeq(seq); err != nil {
		return nil, err
	}
	n := C.llama_state_seq_get_size_ext(c.c, C.llama_seq_id(seq), C.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY)
	if n == 0 || uint64(n) > 1<<36 {
		return nil, fmt.Errorf("sequence %d: checkpoint size %d out of range", seq, uint64(n))
	}
	buf := make([]byte, int(n))
	got := C.llama_state_seq_get_data_ext(c.c, (*C.uint8_t)(unsafe.Pointer(&buf[0])), n, C.llama_seq_id(seq), C.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY)
	if got == 0 || got > n {
		return nil, fmt.Errorf("sequence %d: llama.cpp could not copy its checkpoint", seq)
	}
	return buf[:int(got)], nil
}

// RestoreCheckpoint puts a CheckpointState back into the sequence. On
// failure the sequence is left empty.
func (c *Context) RestoreCheckpoint(seq int, data []byte) error {
	if err := c.checkSeq(seq); err != nil {
		return err
	}
	if len(data) == 0 {
		return errors.New("empty checkpoint")
	}
	got := C.llama_state_seq_set_data_ext(c.c, (*C.uint8_t)(unsafe.Pointer(&data[0])), C.size_t(len(data)), C.llama_seq_id(seq), C.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY)
	if got == 0 {
		c.SeqRemove(seq, -1, -1)
		return fmt.Errorf("sequence %d: llama.cpp refused the checkpoint (%d bytes)", seq, len(data))
	}
	return nil
}
