// Exception barrier between Go and llama.cpp's mtmd (see shim.h), over
// mtmd's public API only (mtmd.h; libmtmd is linked, not compiled here).
#include "shim.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <pthread.h>
#include <string>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

// An encode runs on a thread of its own, made here and never known to Go
// (see tp_mtmd_encode_on_thread in shim.h): a Go thread at a low priority
// would hold one of Go's Ps while it waits for a core, and stall the
// garbage collector's stop-the-world with it.
namespace {

struct encode_job {
    mtmd_context *ctx;
    const mtmd_input_chunk *chunk;
    int nice;
    float *out;
    size_t n;
    int32_t rc;
    int observed_nice;
    std::string errors; // warnings and errors logged on the thread
};

// The job of the encode thread this is, if any: its log lines are kept
// in the job instead of calling into Go from a thread Go does not know.
thread_local encode_job *current_job = nullptr;

void *encode_main(void *arg) {
    auto *j = static_cast<encode_job *>(arg);
    current_job = j;
    const id_t tid = (id_t) syscall(SYS_gettid);
    if (j->nice > 0) {
        setpriority(PRIO_PROCESS, tid, j->nice); // lowering needs no privilege; on failure it runs at the default
    }
    errno = 0;
    int p = getpriority(PRIO_PROCESS, tid);
    j->observed_nice = errno == 0 ? p : -100;
    try {
        // ggml's workers start from this thread: they inherit its priority.
        j->rc = mtmd_encode_chunk(j->ctx, j->chunk);
        if (j->rc == 0) {
            memcpy(j->out, mtmd_get_output_embd(j->ctx), j->n * sizeof(float));
        }
    } catch (...) {
        j->rc = -1;
    }
    current_job = nullptr;
    return nullptr;
}

} // namespace

extern "C" void tp_mtmd_log(int level, const char *text, void *user) {
    if (current_job == nullptr) {
        tadpoleMtmdLog(level, (char *) text, user);
        return;
    }
    if (level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) {
        if (current_job->errors.size() < 4096) {
            current_job->errors += text;
        }
    }
}

extern "C" int32_t tp_mtmd_encode_on_thread(mtmd_context *ctx, const mtmd_input_chunk *chunk, int nice,
                                            float *out, size_t n, int *observed_nice, char *errbuf, size_t errcap) {
    encode_job j{ctx, chunk, nice, out, n, -1, -100, {}};
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) {
        return -2;
    }
    pthread_attr_setstacksize(&attr, 16u << 20);
    pthread_t th;
    int rc = pthread_create(&th, &attr, encode_main, &j);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        return -2;
    }
    pthread_join(th, nullptr);
    *observed_nice = j.observed_nice;
    if (errcap > 0) {
        size_t k = std::min(errcap - 1, j.errors.size());
        memcpy(errbuf, j.errors.data(), k);
        errbuf[k] = '\0';
    }
    return j.rc;
}

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
        mtmd_input_text in{};
        in.text          = text;
        in.text_len      = strlen(text);
        in.add_special   = add_special;
        in.parse_special = parse_special;
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
