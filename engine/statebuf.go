package engine

// #include <stdlib.h>
// #include <sys/mman.h>
// #include "llama.h"
//
// // Anonymous memory for a sequence state, in ordinary pages: huge pages
// // (MADV_HUGEPAGE) were measured 6-60x slower to fault in here whenever
// // the kernel had to compact memory for them, which a growing cache makes
// // it do (88 MB: 34 ms in 4 KiB pages; 13 ms or 218-2000 ms in huge pages).
// // MAP_NORESERVE: a buffer maps room to grow (SeqStateBuffer), and only
// // the pages written count.
// static void *tp_state_alloc(size_t n) {
//     void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
//     return p == MAP_FAILED ? NULL : p;
// }
// static void tp_state_free(void *p, size_t n) { munmap(p, n); }
import "C"

import (
	"fmt"
	"unsafe"
)

// StateBuffer holds a sequence's state (SeqStateBuffer) in memory outside
// Go's heap, mapped for it and unmapped by Free: a prompt cache keeps
// gigabytes of them, which the collector need not see, and which go back
// to the system when freed (or are reused: SeqStateBuffer's reuse). It
// must be freed, once, when nothing reads it any more.
type StateBuffer struct {
	p       unsafe.Pointer
	size    int // mapped bytes
	n       int // state bytes
	written int // the most bytes ever written: what is resident
}

// Cap is the most state bytes the buffer holds.
func (b *StateBuffer) Cap() int { return b.size }

// Resident is the memory the buffer takes: the pages a state has been
// written to (the rest of its mapping is address space only).
func (b *StateBuffer) Resident() int { return (b.written + 4095) &^ 4095 }

// SeqStateBuffer is SeqState into a StateBuffer: into reuse when it is
// large enough (and then owned by the result), else into a new one (reuse
// is left to the caller). A new buffer maps twice the state, so that it
// can be reused for a longer one (a conversation's next turn) without
// the cost of faulting in fresh pages, which on a virtual machine can be
// several times that of the copy.
func (c *Context) SeqStateBuffer(seq int, reuse *StateBuffer) (*StateBuffer, error) {
	if err := c.checkSeq(seq); err != nil {
		return nil, err
	}
	n, err := c.seqStateSize(seq)
	if err != nil {
		return nil, err
	}
	b := reuse
	if b == nil || b.p == nil || b.size < int(n) {
		size := (2*int(n) + 4095) &^ 4095 // whole pages
		p := C.tp_state_alloc(C.size_t(size))
		if p == nil {
			return nil, fmt.Errorf("sequence %d: no memory for its state (%d bytes)", seq, size)
		}
		b = &StateBuffer{p: p, size: size}
	}
	got := C.llama_state_seq_get_data(c.c, (*C.uint8_t)(b.p), n, C.llama_seq_id(seq))
	if got == 0 || got > n {
		if b != reuse {
			b.Free()
		}
		return nil, fmt.Errorf("sequence %d: llama.cpp could not copy its state", seq)
	}
	b.n = int(got)
	b.written = max(b.written, b.n)
	return b, nil
}

// Bytes is the state (for SetSeqState or a file); valid until Free.
func (b *StateBuffer) Bytes() []byte {
	if b == nil || b.p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(b.p), b.n)
}

// Free unmaps the buffer; a second Free does nothing.
func (b *StateBuffer) Free() {
	if b == nil || b.p == nil {
		return
	}
	C.tp_state_free(b.p, C.size_t(b.size))
	b.p = nil
}
