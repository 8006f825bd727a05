package runner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tadpole-llm/tadpole/engine"
)

// Lazy is a grammar that holds a request's output only from a trigger
// token on, as llama.cpp's lazy grammars do for llama-server's tool
// calls: the model writes freely (content, thinking) until it samples
// Trigger, and from there on it must follow Grammar, whose root starts
// with that very token (written "<[ID]>"), so that a call it starts
// keeps to its function's schema.
//
// The runner does it with two samplers built by Generate, off the loop:
// the request's own, and one with the grammar, which takes over when the
// trigger is sampled (it accepts the trigger first). So the trigger
// costs a token comparison a step, where llama.cpp's text patterns
// search the whole output so far at every token.
type Lazy struct {
	Grammar string
	Trigger engine.Token
	// After, when set, arms the trigger only once the model has sampled
	// that token (a thinking model's end of thinking: a call token
	// inside the thinking is not a call).
	After *engine.Token
}

// lazyState is a request's Lazy while it waits for its trigger.
type lazyState struct {
	sampler *engine.Sampler // with the grammar
	trigger engine.Token
	after   *engine.Token
	armed   bool
}

// newLazy builds req.Lazy's grammar sampler (nil without one).
func (r *Runner) newLazy(req Request) (*lazyState, error) {
	l := req.Lazy
	if l == nil {
		return nil, nil
	}
	n := engine.Token(r.model.VocabSize())
	if l.Trigger < 0 || l.Trigger >= n || (l.After != nil && (*l.After < 0 || *l.After >= n)) {
		return nil, fmt.Errorf("lazy grammar: a token outside the vocabulary (0..%d)", n-1)
	}
	if strings.TrimSpace(l.Grammar) == "" {
		return nil, errors.New("lazy grammar: no grammar")
	}
	p := req.Sampling
	p.Grammar = l.Grammar
	smp, err := r.model.NewSampler(p)
	if err != nil {
		return nil, err
	}
	return &lazyState{sampler: smp, trigger: l.Trigger, after: l.After, armed: l.After == nil}, nil
}

// see follows the sampled tokens; at the trigger it hands it to the
// grammar's sampler and reports true: that sampler samples from now on.
func (l *lazyState) see(t engine.Token) bool {
	if !l.armed {
		l.armed = t == *l.after
		return false
	}
	if t != l.trigger {
		return false
	}
	l.sampler.Accept(t)
	return true
}

func (l *lazyState) close() {
	if l != nil {
		l.sampler.Close()
	}
}

// closeSamplers frees a request's samplers that no slot took.
func (q *request) closeSamplers() {
	q.sampler.Close()
	q.lazy.close()
}
