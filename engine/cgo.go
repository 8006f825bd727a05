package engine

// #cgo CXXFLAGS: -std=c++17
// #cgo LDFLAGS: -lm -lstdc++ -ldl
// #include <stdlib.h>
// #include <dlfcn.h>
// #include "llama.h"
// #include "ggml-backend.h"
//
// extern void tadpoleLog(int level, char *text, void *user);
// static const char *tadpole_preload(const char *path) {
//     if (dlopen(path, RTLD_NOW | RTLD_GLOBAL) == NULL) return dlerror();
//     return NULL;
// }
// static void tadpole_log_init(void) { llama_log_set((ggml_log_callback)tadpoleLog, NULL); }
//
// #ifdef __GLIBC__
// #include <malloc.h>
// static void tadpole_arena_max(int n) { mallopt(M_ARENA_MAX, n); }
// static void tadpole_mmap_threshold(int n) { mallopt(M_MMAP_THRESHOLD, n); }
// #if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)
// static int tadpole_heap(size_t *inuse, size_t *held) {
//     struct mallinfo2 m = mallinfo2();
//     *inuse = m.uordblks + m.hblkhd;
//     *held = m.arena + m.hblkhd;
//     return 1;
// }
// #else
// static int tadpole_heap(size_t *inuse, size_t *held) { (void)inuse; (void)held; return 0; }
// #endif
// #else
// static int tadpole_heap(size_t *inuse, size_t *held) { (void)inuse; (void)held; return 0; }
// static void tadpole_arena_max(int n) { (void)n; }
// static void tadpole_mmap_threshold(int n) { (void)n; }
// #endif
import "C"

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// llama.cpp and ggml are llama.cpp's static libraries (libllama, libggml,
// libggml-cpu, libggml-base), built by scripts/llama.sh and linked through
// the Makefile's CGO_LDFLAGS: no source of llama.cpp is compiled here, and
// only its public headers (llama.h, ggml*.h) are included.

// BuildFlags are the compiler flags the native CPU backend was built with.
// The Makefile sets it with -ldflags -X; a plain `go build` leaves "unknown".
var BuildFlags = "unknown"

// Version is Tadpole's version, set by the Makefile with -ldflags -X.
var Version = "dev"

// LlamaCommit is the commit of the llama.cpp sources the engine was built
// from, and LlamaOrigin where they came from ("npm node-llama-cpp@3.22.1"
// or "LLAMA_CPP_DIR=/path"); the Makefile sets both with -ldflags -X from
// scripts/llama.sh's build.env.
var (
	LlamaCommit = "unknown"
	LlamaOrigin = "unknown"
)

// StateVersion names the format of the sequence states SeqState returns:
// the llama.cpp release and its state version. A state saved under
// another is not restored (the prompt cache removes such files).
func StateVersion() string {
	return fmt.Sprintf("llama.cpp %s seq-state %d", LlamaRelease(), int(C.LLAMA_STATE_SEQ_VERSION))
}

// LlamaRelease is the release of the linked llama.cpp, as the library
// reports it ("v0.5.0").
func LlamaRelease() string {
	v := C.GoString(C.llama_version())
	if v == "" {
		return "unknown"
	}
	return "v" + v
}

var initOnce sync.Once

// Init initialises llama.cpp's backends once per process. backendDir, if
// not empty, is a directory of loadable ggml backends (libggml-cuda.so and
// the libggml-base.so it links, from `make cuda`) loaded before
// initialisation; a library that fails to load is logged with the reason
// and the process goes on with the devices it has. Every other function in
// this package calls Init with no directory if the caller has not.
func Init(backendDir string) {
	initOnce.Do(func() {
		C.tadpole_log_init()
		initAbort()
		limitArenas()
		if backendDir != "" {
			loadBackends(backendDir)
		}
		C.llama_backend_init()
	})
}

// limitArenas keeps glibc's malloc from holding on to memory llama.cpp
// freed, unless the operator tuned it (MALLOC_ARENA_MAX,
// MALLOC_MMAP_THRESHOLD_). glibc gives each thread that allocates its own
// arena (up to 8 per core), and ggml's worker threads come and go with
// every model load: the arenas are capped at two. And glibc raises its
// mmap threshold to the size of every large block freed, so the next
// context's KV cache and compute buffers come from the heap and stay
// there after the model unloads: a fixed 256 KiB threshold keeps large
// buffers in their own mappings, returned to the system when freed.
func limitArenas() {
	if os.Getenv("MALLOC_ARENA_MAX") == "" {
		C.tadpole_arena_max(2)
	}
	if os.Getenv("MALLOC_MMAP_THRESHOLD_") == "" {
		C.tadpole_mmap_threshold(256 << 10)
	}
}

// NativeHeap is what C's malloc holds for llama.cpp, ggml and the C
// libraries (glibc's mallinfo2, summed over its arenas, mmapped blocks
// included): inUse is allocated and not freed, held is what malloc has
// from the system. A leak grows inUse; fragmentation grows held alone.
// ok is false where the C library does not say (not glibc 2.33+).
func NativeHeap() (inUse, held int64, ok bool) {
	var u, h C.size_t
	if C.tadpole_heap(&u, &h) == 0 {
		return 0, 0, false
	}
	return int64(u), int64(h), true
}

func loadBackends(dir string) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		slog.Info("no GPU backends", "dir", dir, "reason", "no such directory")
		return
	}
	// The backends link libggml-base.so by name: load it from the same
	// directory first so the dynamic linker finds it without
	// LD_LIBRARY_PATH.
	base := filepath.Join(dir, "libggml-base.so")
	if _, err := os.Stat(base); err == nil {
		cs := C.CString(base)
		if msg := C.tadpole_preload(cs); msg != nil {
			slog.Warn("GPU backend base library failed to load", "file", base, "reason", C.GoString(msg))
		}
		C.free(unsafe.Pointer(cs))
	}
	// Load every backend library of the directory ourselves (ggml's own
	// directory scan is silent about failures in release builds).
	libs, _ := filepath.Glob(filepath.Join(dir, "libggml-*.so"))
	for _, lib := range libs {
		if filepath.Base(lib) == "libggml-base.so" {
			continue
		}
		takeLogErrors()
		cs := C.CString(lib)
		reg := C.ggml_backend_load(cs)
		C.free(unsafe.Pointer(cs))
		if reg == nil {
			slog.Warn("GPU backend failed to load; going on without it", "file", lib, "reason", strings.Join(takeLogErrors(), "; "))
			continue
		}
		slog.Info("GPU backend loaded", "file", lib, "backend", C.GoString(C.ggml_backend_reg_name(reg)),
			"devices", int(C.ggml_backend_reg_dev_count(reg)))
	}
}

// SystemInfo is llama.cpp's description of the CPU features the native code
// was compiled with and detects at run time (e.g. "AVX512 = 1").
func SystemInfo() string {
	Init("")
	return strings.TrimSpace(C.GoString(C.llama_print_system_info()))
}

// Device is one compute device ggml can use.
type Device struct {
	Name        string
	Description string
	Type        string // "cpu", "gpu", "igpu" or "accel"
	FreeBytes   uint64
	TotalBytes  uint64
}

// Devices lists the devices of every loaded ggml backend.
func Devices() []Device {
	Init("")
	n := int(C.ggml_backend_dev_count())
	out := make([]Device, 0, n)
	for i := 0; i < n; i++ {
		d := C.ggml_backend_dev_get(C.size_t(i))
		var free, total C.size_t
		C.ggml_backend_dev_memory(d, &free, &total)
		typ := "cpu"
		switch C.ggml_backend_dev_type(d) {
		case C.GGML_BACKEND_DEVICE_TYPE_GPU:
			typ = "gpu"
		case C.GGML_BACKEND_DEVICE_TYPE_IGPU:
			typ = "igpu"
		case C.GGML_BACKEND_DEVICE_TYPE_ACCEL:
			typ = "accel"
		}
		out = append(out, Device{
			Name:        C.GoString(C.ggml_backend_dev_name(d)),
			Description: C.GoString(C.ggml_backend_dev_description(d)),
			Type:        typ,
			FreeBytes:   uint64(free),
			TotalBytes:  uint64(total),
		})
	}
	return out
}

// DefaultThreads is the thread count used when a request does not set
// num_thread: the number of CPUs Go may use.
func DefaultThreads() int { return runtime.GOMAXPROCS(0) }

// LogSink joins the log fragments of a ggml-style logger (llama.cpp's,
// mtmd's) into whole lines, writes them to slog under src (llama.cpp's
// chatty info lines as debug lines) and keeps the last warnings and
// errors, which explain a failed load or call. Safe for concurrent use.
type LogSink struct {
	src   string
	mu    sync.Mutex
	buf   strings.Builder
	level slog.Level
	// last error lines, for load failures
	lastErr []string
}

// NewLogSink makes a sink whose lines carry src as their "src" attribute.
func NewLogSink(src string) *LogSink { return &LogSink{src: src} }

// GGML log levels as ggml.h numbers them (GGML_LOG_LEVEL_*), for Write.
const (
	GGMLLogNone  = 0
	GGMLLogDebug = 1
	GGMLLogInfo  = 2
	GGMLLogWarn  = 3
	GGMLLogError = 4
	GGMLLogCont  = 5 // continues the previous line
)

// Write takes one fragment at a ggml log level (GGMLLog*).
func (l *LogSink) Write(level int, s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if level != GGMLLogCont {
		l.level = ggmlLevel(level)
	}
	l.buf.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		return
	}
	line := strings.TrimRight(l.buf.String(), "\n")
	l.buf.Reset()
	if l.level >= slog.LevelWarn {
		l.lastErr = append(l.lastErr, strings.TrimSpace(line))
		if len(l.lastErr) > 8 {
			l.lastErr = l.lastErr[1:]
		}
	}
	// llama.cpp is chatty: its info lines are Tadpole's debug lines.
	lvl := l.level
	if lvl == slog.LevelInfo {
		lvl = slog.LevelDebug
	}
	if slog.Default().Enabled(context.Background(), lvl) {
		slog.Log(context.Background(), lvl, line, "src", l.src)
	}
}

// TakeErrors returns and clears the warnings and errors logged since the
// last call.
func (l *LogSink) TakeErrors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.lastErr
	l.lastErr = nil
	return e
}

func ggmlLevel(l int) slog.Level {
	switch l {
	case GGMLLogError:
		return slog.LevelError
	case GGMLLogWarn:
		return slog.LevelWarn
	case GGMLLogInfo:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}

// llamaLog is llama.cpp's and ggml's log.
var llamaLog = NewLogSink("llama.cpp")

//export tadpoleLog
func tadpoleLog(level C.int, text *C.char, _ unsafe.Pointer) {
	llamaLog.Write(int(level), C.GoString(text))
}

// takeLogErrors returns and clears the warnings and errors llama.cpp
// logged since the last call.
func takeLogErrors() []string { return llamaLog.TakeErrors() }
