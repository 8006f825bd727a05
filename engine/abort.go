package engine

// #include <stdlib.h>
// #include "ggml.h"
//
// extern void tadpoleAbort(char *message);
// static void tadpole_abort_init(void) { ggml_set_abort_callback((ggml_abort_callback_t)tadpoleAbort); }
// static void tadpole_abort(const char *message) { ggml_abort(__FILE__, __LINE__, "%s", message); }
import "C"

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"
)

// If llama.cpp aborts anyway (a GGML_ASSERT no check in this package
// foresaw), the process cannot be saved: ggml calls abort() right after
// its callback. What the callback can do is say why and who was hurt, so
// that the next check can be written: it writes llama.cpp's message and
// the requests in flight to standard error, where the service manager's
// journal (systemd, the container runtime) keeps it, and the manager
// restarts the server (see scripts/tadpole.service).

var inFlight atomic.Pointer[func() []string]

// OnAbort registers the function the abort report calls for the
// requests in flight (e.g. their request IDs and models).
func OnAbort(requests func() []string) { inFlight.Store(&requests) }

//export tadpoleAbort
func tadpoleAbort(message *C.char) {
	msg := C.GoString(message)
	report := fmt.Sprintf("time=%s level=FATAL msg=\"llama.cpp aborted the process\" error=%q", time.Now().Format(time.RFC3339Nano), msg)
	if f := inFlight.Load(); f != nil {
		reqs := (*f)()
		report += fmt.Sprintf(" requests_in_flight=%d", len(reqs))
		for _, r := range reqs {
			report += "\n  in flight: " + r
		}
	}
	// Straight to the file descriptor: the process ends as this returns,
	// and a buffered logger would lose it.
	os.Stderr.WriteString(report + "\n")
}

// Abort ends the process through ggml's abort path, exactly as a failed
// GGML_ASSERT would: the abort report is written, then abort() runs. It
// exists for the fault test that proves the report; nothing else calls it.
func Abort(message string) {
	Init("")
	cs := C.CString(message)
	defer C.free(unsafe.Pointer(cs))
	C.tadpole_abort(cs)
}

func initAbort() { C.tadpole_abort_init() }
