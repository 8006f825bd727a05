// Exception barrier between Go and llama.cpp's mtmd (see shim.h).
#include "shim.h"

#include <exception>

extern "C" {

void tp_mtmd_log_init(void) {
    mtmd_log_set((ggml_log_callback) tp_mtmd_log, nullptr);
}

mtmd_context *tp_mtmd_init(const char *path, const struct llama_model *model, bool gpu, int threads) {
    try {
        mtmd_context_params p = mtmd_context_params_default();
        p.use_gpu       = gpu;
        p.print_timings = false;
        p.n_threads     = threads;
        p.warmup        = true;
        return mtmd_init_from_file(path, model, p);
    } catch (const std::exception &e) {
        return nullptr;
    } catch (...) {
        return nullptr;
    }
}

mtmd_input_chunks *tp_mtmd_tokenize(mtmd_context *ctx, const char *text, bool add_special, bool parse_special,
                                    const mtmd_bitmap **bitmaps, size_t n_bitmaps, int32_t *rc) {
    mtmd_input_chunks *chunks = nullptr;
    try {
        chunks = mtmd_input_chunks_init();
        mtmd_input_text in{text, add_special, parse_special};
        *rc = mtmd_tokenize(ctx, chunks, &in, bitmaps, n_bitmaps);
        if (*rc != 0) {
            mtmd_input_chunks_free(chunks);
            return nullptr;
        }
        return chunks;
    } catch (...) {
        mtmd_input_chunks_free(chunks);
        *rc = -1;
        return nullptr;
    }
}

mtmd_bitmap *tp_bitmap_image(uint32_t nx, uint32_t ny, const unsigned char *data) {
    try {
        return mtmd_bitmap_init(nx, ny, data);
    } catch (...) {
        return nullptr;
    }
}

mtmd_bitmap *tp_bitmap_audio(size_t n_samples, const float *data) {
    try {
        return mtmd_bitmap_init_from_audio(n_samples, data);
    } catch (...) {
        return nullptr;
    }
}

bool tp_bitmap_set_id(mtmd_bitmap *bitmap, const char *id) {
    try {
        mtmd_bitmap_set_id(bitmap, id);
        return true;
    } catch (...) {
        return false;
    }
}

mtmd_input_chunk *tp_chunk_copy(const mtmd_input_chunk *chunk) {
    try {
        return mtmd_input_chunk_copy(chunk);
    } catch (...) {
        return nullptr;
    }
}

} // extern "C"
