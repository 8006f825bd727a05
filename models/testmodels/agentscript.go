package testmodels

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tadpole-llm/tadpole/models/gguf"
)

// ToolScript describes a variant of the scripted tool-calling model (see
// [Script]) that plays a script of the test's choosing: asked anything, it
// thinks Thinking and calls Tool with Arguments; once the conversation
// holds a tool response it answers Answer. It is made for long prompts,
// such as the 25k-45k-token system prompts and tool schemas of coding
// agents: see [ScriptVariant].
type ToolScript struct {
	Name          string // general.name ("" gives ScriptName plus the tool)
	Thinking      string // thought before the call ("" gives ScriptThinking)
	Tool          string // the function called
	Arguments     string // its arguments: a JSON object
	Answer        string // the final answer, words separated by single spaces
	ContextLength int    // llama.context_length (0 gives 65536)
}

// Call is the raw tool call text the variant writes.
func (s ToolScript) Call() string {
	return `<tool_call>{"name": "` + s.Tool + `", "arguments": ` + s.Arguments + `}</tool_call>`
}

// Variant model shape: two heads of agentHeadDim dimensions (attention is
// the only cost that grows with the square of the prompt, so it is kept
// tiny), a rope base so large that the last rotary pair of a head turns by
// less than 1e-14 radians per position (the marker lookup is the same at
// any distance), and output weights agentLogit (the bigram margin is
// agentLogit·sqrt(n_embd) ≈ 48, so even sampling at temperature 1 over
// the large vocabulary never leaves the script).
const (
	agentHeads    = 2
	agentHeadDim  = 8
	agentRopeBase = 1e30
	agentLogit    = 6
	agentQuery    = 2 // query weight: marker scores of 2·n_embd/sqrt(head_dim) ≈ 45
)

// ScriptVariant returns the metadata and tensors of the scripted model
// playing s.
//
// It is [Script]'s construction with two changes for long prompts. Its
// vocabulary adds every letter sequence of up to three letters (lower
// case and capitalised, with and without a leading "▁"), the printable
// ASCII characters and pairs of punctuation, so that English, JSON and
// code tokenize at about 2.3 characters a token instead of one byte
// token a character. Only the tokens the script writes or looks at get a
// dimension of their own; every other token embeds as one shared "filler"
// dimension whose successor is </s>, so the model stays a few MB (F16
// embedding and output matrices) whatever the vocabulary. And its
// attention is two heads of 8 dimensions.
func ScriptVariant(s ToolScript) ([]gguf.KV, []gguf.Tensor, error) {
	if s.Tool == "" || s.Answer == "" || !json.Valid([]byte(s.Arguments)) {
		return nil, nil, fmt.Errorf("scripted model variant: a tool, JSON arguments and an answer are needed")
	}
	if s.Name == "" {
		s.Name = ScriptName + " (" + s.Tool + ")"
	}
	if s.Thinking == "" {
		s.Thinking = ScriptThinking
	}
	if s.ContextLength == 0 {
		s.ContextLength = 65536
	}
	callJSON := `{"name": "` + s.Tool + `", "arguments": ` + s.Arguments + `}`
	used := map[string]bool{}
	think, err := uniquePieces(s.Thinking, used)
	if err != nil {
		return nil, nil, err
	}
	call, err := uniquePieces(callJSON, used)
	if err != nil {
		return nil, nil, err
	}
	answer, err := uniquePieces(s.Answer, used)
	if err != nil {
		return nil, nil, err
	}
	chainCall := append(append(append([]string{"<0x0A>", "<think>"}, think...), thinkEndToken, "<tool_call>"), call...)
	chainCall = append(chainCall, "</tool_call>", ImEndToken)
	chains := [][]string{chainCall, append(answer, ImEndToken)}

	v := newVocab()
	for _, t := range scriptUserTokens {
		v.add(t, 0, tokUserDefined)
	}
	var table [][2]string
	for _, chain := range chains {
		for i := 0; i+1 < len(chain); i++ {
			table = append(table, [2]string{chain[i], chain[i+1]})
		}
	}
	// From the newline ending the generation prompt: "It" (the answer)
	// once a tool response is in the context (4×), "<tool_call>" when
	// thinking is switched off ("</think>" already there, 2×).
	return buildScripted(scriptPlan{
		name:        s.Name,
		description: "Deterministic scripted model for tests: thinks, calls " + s.Tool + ", then answers from the tool result.",
		vocab:       v,
		template:    Qwen3Template,
		spacePrefix: true,
		fixed:       append([]string{ImEndToken, "<0x0A>"}, scriptUserTokens...),
		table:       table,
		rules: []scriptRule{
			{token: "<0x0A>", marker: toolResponseToken, next: answer[0], weight: 4},
			{token: "<0x0A>", marker: thinkEndToken, next: "<tool_call>", weight: 2},
		},
		contextLength: s.ContextLength,
	})
}

// WriteScriptVariant writes the scripted model playing s to path.
func WriteScriptVariant(path string, s ToolScript) error {
	kvs, tensors, err := ScriptVariant(s)
	if err != nil {
		return err
	}
	if err := gguf.WriteFile(path, kvs, tensors); err != nil {
		return fmt.Errorf("write scripted model variant: %w", err)
	}
	return nil
}

// uniquePieces splits text at spaces into SentencePiece pieces ("▁" for
// the space before a word), joining a piece with the next ones while it
// is already in used, so that every token of every chain is distinct (a
// bigram has one successor per token).
func uniquePieces(text string, used map[string]bool) ([]string, error) {
	words := strings.Split(text, " ")
	var out []string
	for i := 0; i < len(words); i++ {
		p := words[i]
		if i > 0 {
			p = spaceMark + p
		}
		for used[p] || p == "" || p == spaceMark {
			if i+1 >= len(words) {
				return nil, fmt.Errorf("scripted model variant: %q has no distinct split into tokens", text)
			}
			i++
			p += spaceMark + words[i]
		}
		used[p] = true
		out = append(out, p)
	}
	return out, nil
}

// fillerPieces is the variant's extra vocabulary: printable ASCII
// characters, pairs of punctuation, and letter sequences of one to three
// letters, lower case and capitalised, each with and without "▁".
func fillerPieces() []string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	const punct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
	var out []string
	for c := '!'; c <= '~'; c++ {
		out = append(out, string(c), spaceMark+string(c))
	}
	for _, a := range punct + spaceMark {
		for _, b := range punct + spaceMark {
			out = append(out, string(a)+string(b))
		}
	}
	level := []string{""}
	for range 3 {
		var grown []string
		for _, p := range level {
			for _, c := range letters {
				w := p + string(c)
				grown = append(grown, w)
				out = append(out, w, spaceMark+w, strings.ToUpper(w[:1])+w[1:], spaceMark+strings.ToUpper(w[:1])+w[1:])
			}
		}
		level = grown
	}
	return out
}
