// Compiles llama.cpp's tools/mtmd/mtmd.cpp from the pinned module (found
// through the llama.cpp include directory of CGO_CPPFLAGS).
#include "../tools/mtmd/mtmd.cpp"

#include "shim.h"

// tp_mtmd_encode_threads is tp_mtmd_encode with the number of CPU threads
// for this call (clip takes it per call; mtmd reads it from its context,
// so it is set there first — callers serialize encodes on a context).
extern "C" int32_t tp_mtmd_encode_threads(mtmd_context *ctx, const mtmd_input_chunk *chunk, int threads) {
    try {
        ctx->n_threads = threads;
        return mtmd_encode_chunk(ctx, chunk);
    } catch (...) {
        return -1;
    }
}
