// Compiles llama.cpp's tools/mtmd/mtmd.cpp from the pinned module (found
// through the llama.cpp include directory of CGO_CPPFLAGS).
#include "../tools/mtmd/mtmd.cpp"

#include "shim.h"

#include <cstring>
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
    int threads;
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
        j->ctx->n_threads = j->threads; // ggml's workers start from this thread: they inherit its priority
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

extern "C" int32_t tp_mtmd_encode_on_thread(mtmd_context *ctx, const mtmd_input_chunk *chunk, int threads, int nice,
                                            float *out, size_t n, int *observed_nice, char *errbuf, size_t errcap) {
    encode_job j{ctx, chunk, threads, nice, out, n, -1, -100, {}};
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
