package mtmd

// #include "shim.h"
import "C"

import (
	"unsafe"

	"github.com/tadpole-llm/tadpole/engine"
)

// clip.cpp and mtmd.cpp log through their own logger (set to tadpoleMtmdLog
// by Load): lines go to slog as the engine's do (engine.LogSink), and the
// last warnings and errors explain a failed load or encode.
var mtmdLog = engine.NewLogSink("mtmd")

//export tadpoleMtmdLog
func tadpoleMtmdLog(level C.int, text *C.char, _ unsafe.Pointer) {
	mtmdLog.Write(int(level), C.GoString(text))
}

// takeLogErrors returns and clears the warnings and errors logged since
// the last call.
func takeLogErrors() []string { return mtmdLog.TakeErrors() }
