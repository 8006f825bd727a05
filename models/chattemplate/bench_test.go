package chattemplate_test

import (
	"testing"

	"github.com/tadpole-llm/tadpole/models/chattemplate"
)

// BenchmarkRender renders real templates with the golden tool
// conversation: the per-request cost of formatting a chat.
func BenchmarkRender(b *testing.B) {
	for _, name := range []string{"qwen3", "llama3.1", "mistral-nemo"} {
		b.Run(name, func(b *testing.B) {
			t, err := chattemplate.Parse(readTemplate(b, name))
			if err != nil {
				b.Fatal(err)
			}
			in := conversations["tools"]
			in.AddGenerationPrompt, in.Now = true, clock
			b.ReportAllocs()
			for b.Loop() {
				if _, err := t.Render(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
