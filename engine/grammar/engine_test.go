package grammar_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/grammar"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

func loadStories(t testing.TB) *engine.Model {
	t.Helper()
	m, err := engine.LoadModel(testmodels.Testdata("stories260K.gguf"), engine.ModelParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// TestLlamaCppAcceptsGrammars loads every grammar the tests produce into
// llama.cpp's grammar sampler.
func TestLlamaCppAcceptsGrammars(t *testing.T) {
	m := loadStories(t)
	grammars := map[string]string{"json": grammar.JSONObject()}
	for _, c := range grammar.SchemaCases() {
		g, err := grammar.FromSchema([]byte(c.Schema))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		grammars[c.Name] = g
	}
	for name, s := range map[string]string{
		"integer range":  `{"type":"integer","minimum":-1234,"maximum":98765}`,
		"number range":   `{"type":"number","exclusiveMinimum":-0.5,"maximum":1e3}`,
		"huge maxItems":  `{"type":"array","items":{"type":"integer"},"minItems":2500,"maxItems":6000}`,
		"any":            `true`,
		"unique boolean": `{"type":"array","items":{"type":"boolean"},"uniqueItems":true}`,
		"generation":     schemaPerson,
	} {
		g, err := grammar.FromSchema([]byte(s))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		grammars[name] = g
	}
	branches, err := grammar.FromBranches(nil, []grammar.Branch{
		{Prefix: "<|tool_call_begin|>functions.a:0<|tool_call_argument_begin|>", Schema: json.RawMessage(schemaPerson), Suffix: "<|tool_call_end|>"},
		{Prefix: "<|tool_call_begin|>functions.b:0<|tool_call_argument_begin|>", Schema: json.RawMessage(schemaNested), Suffix: "<|tool_call_end|>"},
	})
	if err != nil {
		t.Fatal(err)
	}
	grammars["branches"] = branches
	for name, g := range grammars {
		s, err := m.NewSampler(engine.SamplerParams{Grammar: g, Temperature: 0.9, Seed: 1})
		if err != nil {
			t.Errorf("%s: llama.cpp refuses the grammar: %v\n%s", name, err, g)
			continue
		}
		s.Close()
	}
}

// Schemas for constrained generation with the 260K-parameter stories
// model: strings are short so that a document fits the token budget.
const (
	schemaPerson = `{"type":"object","properties":{
		"name":{"type":"string","maxLength":12},
		"age":{"type":"integer","minimum":0,"maximum":99},
		"happy":{"type":"boolean"},
		"mood":{"type":"string","enum":["glad","sad","calm"]},
		"toys":{"type":"array","items":{"type":"string","maxLength":8},"maxItems":2}},
		"required":["name","age","happy","mood","toys"],"additionalProperties":false}`
	schemaNested = `{"type":"object","properties":{
		"pet":{"type":"object","properties":{"kind":{"enum":["cat","dog"]},"name":{"type":"string","maxLength":10}},"required":["kind","name"]},
		"count":{"type":"integer","minimum":1,"maximum":9},
		"note":{"type":["string","null"],"maxLength":6}},
		"required":["pet","count"]}`
	schemaAnyOf = `{"type":"object","properties":{
		"value":{"anyOf":[{"type":"integer","minimum":0,"maximum":999},{"type":"string","maxLength":6},{"type":"null"}]},
		"when":{"type":"string","format":"date"}},
		"required":["value","when"]}`
	schemaRef = `{"$defs":{"item":{"type":"object","properties":{
		"id":{"type":"integer","minimum":0,"maximum":9},
		"next":{"anyOf":[{"$ref":"#/$defs/item"},{"type":"null"}]}},"required":["id","next"]}},
		"$ref":"#/$defs/item"}`
)

// generate runs the raw engine loop with a grammar until the model ends
// (the grammar sampler only allows the end of generation once the
// grammar is complete) or max tokens.
func generate(t *testing.T, m *engine.Model, g string, seed int64, max int) (text string, done bool) {
	t.Helper()
	return generateWith(t, m, engine.SamplerParams{Grammar: g, Temperature: 0.8, Seed: seed}, max)
}

func generateWith(t *testing.T, m *engine.Model, p engine.SamplerParams, max int) (text string, done bool) {
	n := 0
	defer func() { t.Logf("%d tokens", n) }()
	t.Helper()
	prompt, err := m.Tokenize("Once upon a time", true, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := m.NewContext(engine.ContextParams{Threads: 1, NumCtx: 512, NumBatch: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	s, err := m.NewSampler(p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := engine.NewBatch(64)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i, tok := range prompt {
		b.Add(tok, i, 0, i == len(prompt)-1)
	}
	var d engine.Detokenizer
	var out []byte
	for ; n < max; n++ {
		if err := ctx.Decode(b); err != nil {
			t.Fatal(err)
		}
		tok, err := s.Sample(ctx, b.Len()-1)
		if err != nil {
			t.Fatal(err)
		}
		if m.IsEOG(tok) {
			done = true
			break
		}
		out = append(out, d.Add(m.TokenPiece(tok, false))...)
		b.Clear()
		b.Add(tok, len(prompt)+n, 0, true)
	}
	return string(append(out, d.Flush()...)), done
}

func TestConstrainedGeneration(t *testing.T) {
	m := loadStories(t)
	for _, tc := range []struct{ name, schema string }{
		{"person", schemaPerson},
		{"nested", schemaNested},
		{"anyOf", schemaAnyOf},
		{"ref", schemaRef},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := grammar.FromSchema([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			sch := grammar.CompileSchema(t, tc.schema)
			for _, seed := range []int64{1, 2, 3} {
				text, done := generate(t, m, g, seed, 200)
				t.Logf("seed %d: %s", seed, text)
				if !done {
					t.Fatalf("seed %d: no end within 200 tokens: %q", seed, text)
				}
				if err := grammar.Validate(sch, text); err != nil {
					t.Fatalf("seed %d: %q does not satisfy the schema: %v", seed, text, err)
				}
			}
		})
	}
}

// TestJSONModeGeneration: Ollama's format "json" yields a JSON object.
// Left alone, the stories model writes a story inside the first key and
// never closes it, so quotes and closing braces get a logit bias; the
// grammar still decides what is allowed where.
func TestJSONModeGeneration(t *testing.T) {
	m := loadStories(t)
	g, err := grammar.FromFormat(json.RawMessage(`"json"`))
	if err != nil {
		t.Fatal(err)
	}
	bias := map[engine.Token]float32{}
	for tok := range m.VocabSize() {
		switch string(m.TokenPiece(engine.Token(tok), false)) {
		case `"`:
			bias[engine.Token(tok)] = 4
		case "}":
			bias[engine.Token(tok)] = 10
		}
	}
	if len(bias) < 2 {
		t.Fatalf("tokens for '\"' and '}': %v", bias)
	}
	for _, seed := range []int64{1, 2, 3} {
		text, done := generateWith(t, m, engine.SamplerParams{Grammar: g, Temperature: 0.8, Seed: seed, LogitBias: bias}, 200)
		t.Logf("seed %d: %s", seed, text)
		if !done {
			t.Fatalf("seed %d: no end within 200 tokens: %q", seed, text)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(text), &obj); err != nil || !strings.HasPrefix(text, "{") {
			t.Fatalf("seed %d: %q is not a JSON object: %v", seed, text, err)
		}
	}
}
