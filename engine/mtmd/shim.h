// C interface of the engine/mtmd shim (shim.cpp): llama.cpp's mtmd
// calls that can throw a C++ exception, wrapped so that none escapes into
// Go (an exception crossing cgo ends the process).
#ifndef TADPOLE_MTMD_SHIM_H
#define TADPOLE_MTMD_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Reached through the llama.cpp include directory of CGO_CPPFLAGS.
#include "../tools/mtmd/mtmd.h"

#ifdef __cplusplus
extern "C" {
#endif

// Go's log sink (mtmd.go), set as clip/mtmd's logger by tp_mtmd_log_init.
extern void tadpoleMtmdLog(int level, char *text, void *user);

void tp_mtmd_log_init(void);

// NULL on failure (the reason is logged).
mtmd_context *tp_mtmd_init(const char *path, const struct llama_model *model, bool gpu, int threads);

// *rc: 0 ok, 1 marker/bitmap count mismatch, 2 preprocessing error,
// -1 exception (out of memory). NULL unless *rc is 0.
mtmd_input_chunks *tp_mtmd_tokenize(mtmd_context *ctx, const char *text, bool add_special, bool parse_special,
                                    const mtmd_bitmap **bitmaps, size_t n_bitmaps, int32_t *rc);

// Encodes chunk with threads CPU threads (defined beside mtmd.cpp's
// context, in src_mtmd.cpp, to set them). Not concurrently on one
// context. 0 ok, other values failure (-1: exception).
int32_t tp_mtmd_encode_threads(mtmd_context *ctx, const mtmd_input_chunk *chunk, int threads);

// NULL when out of memory.
mtmd_bitmap *tp_bitmap_image(uint32_t nx, uint32_t ny, const unsigned char *data);
mtmd_bitmap *tp_bitmap_audio(size_t n_samples, const float *data);
bool tp_bitmap_set_id(mtmd_bitmap *bitmap, const char *id);
mtmd_input_chunk *tp_chunk_copy(const mtmd_input_chunk *chunk);

#ifdef __cplusplus
}
#endif

#endif
