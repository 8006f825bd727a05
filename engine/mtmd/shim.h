// C interface of the engine/mtmd shim (shim.cpp): llama.cpp's mtmd
// calls that can throw a C++ exception, wrapped so that none escapes into
// Go (an exception crossing cgo ends the process).
#ifndef TADPOLE_MTMD_SHIM_H
#define TADPOLE_MTMD_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// tools/mtmd is an include directory of CGO_CPPFLAGS.
#include "mtmd.h"

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

// tp_mtmd_encode_on_thread encodes chunk on a thread it starts and joins,
// at nice value nice (0: unchanged) with the context's CPU threads (fixed
// when it was made: mtmd's public API has no per-encode thread count),
// and copies the n floats of its embeddings to out. The thread never enters Go: its warnings and
// errors go to errbuf (errcap bytes, NUL-terminated), the nice value it
// ran at to *observed_nice. Not concurrently on one context. 0 ok, -1 an
// exception, -2 no thread, other values mtmd's failure.
int32_t tp_mtmd_encode_on_thread(mtmd_context *ctx, const mtmd_input_chunk *chunk, int nice,
                                 float *out, size_t n, int *observed_nice, char *errbuf, size_t errcap);

// The logger set by tp_mtmd_log_init: tadpoleMtmdLog, except on an
// encode thread (above).
void tp_mtmd_log(int level, const char *text, void *user);

// NULL when out of memory.
mtmd_bitmap *tp_bitmap_image(uint32_t nx, uint32_t ny, const unsigned char *data);
mtmd_bitmap *tp_bitmap_audio(size_t n_samples, const float *data);
bool tp_bitmap_set_id(mtmd_bitmap *bitmap, const char *id);
mtmd_input_chunk *tp_chunk_copy(const mtmd_input_chunk *chunk);

#ifdef __cplusplus
}
#endif

#endif
