package mtmd

// #include "shim.h"
import "C"

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"unsafe"
)

// clip.cpp and mtmd.cpp log through their own logger (set to tadpoleMtmdLog
// by Load): lines go to slog as the engine's do (llama.cpp's info lines
// are debug lines), and the last warnings and errors explain a failed load
// or encode.
var logState struct {
	sync.Mutex
	buf     strings.Builder
	level   slog.Level
	lastErr []string
}

//export tadpoleMtmdLog
func tadpoleMtmdLog(level C.int, text *C.char, _ unsafe.Pointer) {
	s := C.GoString(text)
	logState.Lock()
	defer logState.Unlock()
	if level != C.GGML_LOG_LEVEL_CONT {
		logState.level = ggmlLevel(level)
	}
	logState.buf.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		return
	}
	line := strings.TrimRight(logState.buf.String(), "\n")
	logState.buf.Reset()
	if logState.level >= slog.LevelWarn {
		logState.lastErr = append(logState.lastErr, strings.TrimSpace(line))
		if len(logState.lastErr) > 8 {
			logState.lastErr = logState.lastErr[1:]
		}
	}
	lvl := logState.level
	if lvl == slog.LevelInfo {
		lvl = slog.LevelDebug
	}
	if slog.Default().Enabled(context.Background(), lvl) {
		slog.Log(context.Background(), lvl, line, "src", "mtmd")
	}
}

func ggmlLevel(l C.int) slog.Level {
	switch l {
	case C.GGML_LOG_LEVEL_ERROR:
		return slog.LevelError
	case C.GGML_LOG_LEVEL_WARN:
		return slog.LevelWarn
	case C.GGML_LOG_LEVEL_INFO:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}

// takeLogErrors returns and clears the warnings and errors logged since
// the last call.
func takeLogErrors() []string {
	logState.Lock()
	defer logState.Unlock()
	e := logState.lastErr
	logState.lastErr = nil
	return e
}
