package infer

import "github.com/tadpole-llm/tadpole/engine"

// Token is a token id of a model's vocabulary.
type Token = engine.Token

// Vocab is an instance's vocabulary, as llama-server's /tokenize and
// /detokenize read it (server/openai): the dialects reach the engine's
// model only through it.
type Vocab interface {
	VocabSize() int
	Tokenize(text string, addSpecial, parseSpecial bool) ([]Token, error)
	TokenPiece(t Token, special bool) []byte
	Detokenize(toks []Token, special bool) string
}

var _ Vocab = (*engine.Model)(nil)

// vocab is the vocabulary of the instance's model.
func (in *Instance) vocab() Vocab { return in.si.Model }
