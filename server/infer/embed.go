package infer

import (
	"context"
	"errors"
	"math"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/server/usage"
)

// embed returns the pooled, normalised embedding of each text and the
// number of tokens evaluated, computed by the instance's runner within
// the request's window: a text longer than the window (or the embedding
// context's batch) is cut to fit when truncate is set, else it is an
// error (a ParamError about "input", as is a text the vocabulary
// cannot tokenize). The tokens count towards the request's API key and the token
// counter like a generation's prompt. The request holds a place in the
// queue bound (--max-queue) while it waits and is computed.
func (in *Instance) embed(ctx context.Context, texts []string, truncate bool) ([][]float32, int, error) {
	prompts := make([][]engine.Token, len(texts))
	for i, text := range texts {
		toks, err := in.si.Model.Tokenize(text, true, false)
		if err != nil {
			return nil, 0, &ParamError{Param: "input", Message: err.Error()}
		}
		prompts[i] = toks
	}
	var out [][]float32
	var n int
	err := in.queued(func() (err error) {
		out, n, err = in.si.Runner.Embed(ctx, prompts, in.Window, truncate)
		return err
	})
	if err != nil {
		if _, ok := err.(*Error); ok {
			return nil, 0, err // the queue bound
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, runner.ErrClosed) {
			return nil, 0, Errorf(Internal, "embed: %v", err)
		}
		return nil, 0, &ParamError{Param: "input", Message: err.Error()}
	}
	usage.AddTokens(ctx, n, 0)
	in.telemetry.Embedding(ctx, in.Name, n)
	return out, n, nil
}

// Renormalize scales an embedding (e.g. one cut to fewer dimensions) to
// unit length; a zero vector stays as it is.
func Renormalize(e []float32) []float32 {
	out := make([]float32, len(e))
	var sum float64
	for _, v := range e {
		sum += float64(v) * float64(v)
	}
	inv := 1.0
	if sum > 0 {
		inv = 1 / math.Sqrt(sum)
	}
	for i, v := range e {
		out[i] = float32(float64(v) * inv)
	}
	return out
}
