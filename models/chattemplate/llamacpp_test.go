//go:build cgo

package chattemplate_test

import (
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/engine"
)

// TestMatchesLlamaCppFormatter checks the no-tool conversations against
// llama.cpp's built-in formatter (llama_chat_apply_template), which
// recognises these templates by their shape. Its known differences are
// stripped first: it never writes the BOS token (the tokenizer adds it),
// and its Llama 3 format has no "Cutting Knowledge Date"/"Today Date"
// header.
//
// Left out, because llama.cpp's formatter is not what these templates
// render: Mistral Nemo with a system message (the template puts it in the
// last user turn, llama.cpp in the first; llama.cpp's own
// tests/test-chat-template.cpp records the same), DeepSeek V3.1 (its
// template writes </think> into assistant turns), SmolLM3 (read as plain
// ChatML, without the template's metadata system turn) and the Command-R+ tool-use template
// (its preambles and action instructions).
func TestMatchesLlamaCppFormatter(t *testing.T) {
	cases := []struct {
		family, conv string
		stripBOS     bool
		llama3Header bool
		fix          func(ours string) string // a further documented difference
	}{
		{family: "llama3.1", conv: "plain", stripBOS: true, llama3Header: true},
		{family: "llama3.2", conv: "plain", stripBOS: true, llama3Header: true},
		{family: "llama3.3", conv: "plain", stripBOS: true, llama3Header: true},
		{family: "qwen2.5", conv: "plain"},
		{family: "qwen3", conv: "plain"},
		{family: "mistral-nemo", conv: "nosystem", stripBOS: true},
		{family: "mistral-v1", conv: "plain", stripBOS: true},
		{family: "mistral-instruct", conv: "nosystem", stripBOS: true},
		{family: "gemma2", conv: "nosystem", stripBOS: true},
		{family: "gemma3", conv: "plain", stripBOS: true},
		{family: "phi3.5", conv: "plain"},
		{family: "phi4", conv: "plain"},
		{family: "granite3.3", conv: "plain"},
		// DeepSeek R1: llama.cpp's "deepseek3" format writes "\n\n" after
		// the system prompt, and its generation prompt has none of the
		// template's "<think>\n" (followed by "</think>" unless
		// enable_thinking is set, in llama.cpp's edition of the template).
		{family: "deepseek-r1-distill-qwen", conv: "plain", stripBOS: true, fix: func(s string) string {
			s = strings.Replace(s, "You are a helpful assistant.", "You are a helpful assistant.\n\n", 1)
			return strings.TrimSuffix(strings.TrimSuffix(s, "</think>"), "<think>\n")
		}},
	}
	for _, c := range cases {
		t.Run(c.family, func(t *testing.T) {
			var f family
			for _, ff := range families {
				if ff.name == c.family {
					f = ff
					break
				}
			}
			src := readTemplate(t, c.family)
			in := f.input(c.conv)
			var msgs []engine.ChatMessage
			for _, m := range in.Messages {
				msgs = append(msgs, engine.ChatMessage{Role: m.Role, Content: m.Content})
			}
			want, err := engine.FormatChat(src, msgs, true)
			if err != nil {
				t.Fatalf("llama.cpp's built-in formatter does not know this template: %v", err)
			}
			got, err := chattemplateRender(src, in)
			if err != nil {
				t.Fatal(err)
			}
			if c.stripBOS {
				got = strings.TrimPrefix(got, f.bos)
			}
			if c.llama3Header {
				got = strings.Replace(got, "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n", "", 1)
				got = strings.Replace(got, "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2026\n\n", "", 1)
			}
			if c.fix != nil {
				got = c.fix(got)
			}
			if got != want {
				t.Errorf("differs from llama.cpp's formatter:\nours:\n%q\nllama.cpp:\n%q", got, want)
			}
		})
	}
}
