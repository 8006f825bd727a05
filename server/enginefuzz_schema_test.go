package server

import (
	"fmt"

	"github.com/tadpole-llm/tadpole/engine/grammar"
)

// The engine fuzzer's schema sizes (issue 40): the largest enum the caps
// allow (grammar sampling on the decode loop), one value over the cap, a
// 150,000-value enum (past MaxSchemaBytes) and 20,000 anyOf constants.
// They are added to fuzzFormats here, at its end, so the indexes of the
// formats enginefuzz_gen_test.go lists stay as they are.
func init() {
	enum := func(n int) any {
		vals := make([]any, n)
		for i := range vals {
			vals[i] = fmt.Sprintf("v%07d", i)
		}
		return map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string", "enum": vals}}, "required": []any{"x"}}
	}
	consts := make([]any, 20000)
	for i := range consts {
		consts[i] = map[string]any{"const": i}
	}
	fuzzFormats = append(fuzzFormats, enum(grammar.MaxEnumValues), enum(grammar.MaxEnumValues+1), enum(150000),
		map[string]any{"anyOf": consts})
}
