// Switching flash attention between steps on a context made with it on.
//
// llama.cpp fixes flash attention when a context is made and offers no
// call to change it. Both graphs compute the same attention from the same
// KV cache, though: a context made with flash attention keeps V
// untransposed, and the graph without flash attention handles an
// untransposed V (it transposes a copy per layer; llama-graph.cpp,
// build_attn_mha). The pinned llama.cpp's CPU flash-attention kernel runs
// one query row at a time, which is slow when many prompt tokens meet a
// long cache; matrix products are several times faster there. So the
// runner switches per step (see engine/runner/attention.go).
//
// This file reaches past llama.h into llama.cpp's own headers (the
// context's parameters and its graph reservation); it is the one place
// that does, and it goes when the engine's own kernels make it needless.

#include "llama-context.h"
#include "llama-kv-cache.h"
#include "llama-model.h"

extern "C" {

// tp_flash_attn_switchable reports whether the context may switch flash
// attention off and on between steps: it was made with flash attention on,
// the model runs on the CPU only (GPU kernels are fast at every length, so
// a GPU context keeps what it was given), its memory is one plain KV cache
// with a stream per sequence (in a unified cache every token's matrix
// product would span every sequence's cells), and keys and values have one head size (no MLA). The caller checks the
// cache's value type: the graph without flash attention must copy V
// transposed, which a quantized type cannot be.
int tp_flash_attn_switchable(struct llama_context *ctx) {
    const llama_model &m = ctx->get_model();
    if (!ctx->get_cparams().flash_attn || !m.devices.empty()) {
        return 0;
    }
    if (dynamic_cast<llama_kv_cache *>(ctx->get_memory()) == nullptr) {
        return 0;
    }
    if (ctx->get_cparams().kv_unified && ctx->get_cparams().n_seq_max > 1) {
        return 0;
    }
    if (m.hparams.n_embd_head_k != m.hparams.n_embd_head_v || m.hparams.n_embd_head_k_mla != 0) {
        return 0;
    }
    return 1;
}

// tp_flash_attn reports whether the context's decodes use flash attention.
int tp_flash_attn(struct llama_context *ctx) { return ctx->get_cparams().flash_attn ? 1 : 0; }

// tp_set_flash_attn sets the context's flash-attention flag and reserves
// the compute buffers for the graph it selects, which also drops the
// previous graph so that the next decode builds one in the new mode.
// Returns 0 on success, 1 when the reservation failed (the flag is then
// restored).
int tp_set_flash_attn(struct llama_context *ctx, int on) {
    auto &cp = const_cast<llama_cparams &>(ctx->get_cparams());
    bool want = on != 0;
    if (cp.flash_attn == want) {
        return 0;
    }
    cp.flash_attn = want;
    llama_memory_i *mem = ctx->get_memory();
    if (mem == nullptr) {
        cp.flash_attn = !want;
        return 1;
    }
    auto mctx = mem->init_full();
    uint32_t n_seqs = cp.kv_unified ? 1 : cp.n_seq_max;
    uint32_t n_tokens = std::min(cp.n_ctx, cp.n_ubatch);
    n_tokens = (n_tokens / n_seqs) * n_seqs;
    if (n_tokens == 0 || ctx->graph_reserve(n_tokens, n_seqs, n_tokens, mctx.get()) == nullptr) {
        // The next decode builds and allocates its graph afresh either way.
        cp.flash_attn = !want;
        return 1;
    }
    return 0;
}

}
