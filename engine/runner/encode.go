package runner

import "context"

// Encode runs an encoder's work — f, a projector encoding an image with
// the CPU threads it is given, on a low-priority thread of its own (see
// mtmd.Projector.Encode) — beside the loop, never on it: decoding slots
// keep their speed while images are encoded, and the encode takes the
// cycles they leave. f gets the runner's threads when no request is
// running or waiting (nothing competes: the encode is as fast as the
// machine allows), one thread otherwise (the gaps decoding leaves are
// short; more threads would wait on each other's barriers in them).
//
// The alternatives cost the text more: on the loop between two steps,
// every slot waits for the whole encode (and a text request that arrives
// during an idle runner's encode waits for all of it); beside it at
// normal priority, the encode's and the decode's thread pools fight over
// the cores and slow each other many times over (ggml's threads spin at
// their barriers). The price is the image request's own time while text
// keeps every core busy: the text requests already decoding are what
// users watch, and an image request has not shown its first token yet.
//
// Encodes run one at a time (a projector keeps one output buffer). If ctx
// ends before f starts, f never runs and Encode returns ctx's error; once
// started, f runs to its end and Encode waits for it.
func (r *Runner) Encode(ctx context.Context, f func(threads int)) error {
	r.encodeMu.Lock()
	defer r.encodeMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	threads := 1
	if r.idle() {
		threads = r.cfg.Threads
	}
	f(threads)
	return nil
}

// idle: no request running or waiting, no embedding queued.
func (r *Runner) idle() bool { return r.Busy() == 0 && r.EmbedsWaiting() == 0 }
