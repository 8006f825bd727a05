package infer

import (
	"bytes"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/server/chatparse"
)

// printTokens are the control tokens of m that the output must write out
// for o's parser: each markup text of the format that is one control
// token (not an end of generation) in m's vocabulary. Text the
// vocabulary holds as ordinary or user-defined tokens prints anyway.
func printTokens(m *engine.Model, o chatparse.Options) []engine.Token {
	var out []engine.Token
	for _, text := range chatparse.Markup(o) {
		toks, err := m.Tokenize(text, false, true)
		if err != nil || len(toks) != 1 || m.IsEOG(toks[0]) {
			continue
		}
		t := toks[0]
		if len(m.TokenPiece(t, false)) == 0 && bytes.Equal(m.TokenPiece(t, true), []byte(text)) {
			out = append(out, t)
		}
	}
	return out
}
