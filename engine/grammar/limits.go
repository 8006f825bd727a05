package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Limits on what one schema may cost. Every dialect's schema (Ollama's
// format, OpenAI's response_format, Responses' text.format, Anthropic's
// output_config, tool parameters) becomes a grammar here, so these are
// checked in one place. They bound three costs that grow with the
// schema: converting it, llama.cpp building its grammar (whose stack set
// is deduplicated pairwise, so it grows with the square of the
// alternatives open at one point), and grammar sampling on the decode
// loop (every open alternative is matched against the vocabulary for
// each token). A real structured-output schema stays far below them:
// OpenAI's structured outputs allow 1,000 enum values across a schema
// and 5,000 properties; llama.cpp's server sets no limit.
const (
	// MaxSchemaBytes bounds a schema document (all tools' parameters
	// together for a tool grammar).
	MaxSchemaBytes = 1 << 20
	// MaxEnumValues bounds the values of one enum.
	MaxEnumValues = 1024
	// MaxBranches bounds one anyOf or oneOf list (including the lists
	// allOf makes by multiplying anyOf lists out) and one alternation of
	// a string pattern.
	MaxBranches = 1024
	// MaxAlternatives bounds the enum values, anyOf/oneOf branches and
	// pattern alternatives converted for one schema, all lists together.
	MaxAlternatives = 4096
	// MaxGrammarBytes bounds the generated GBNF grammar.
	MaxGrammarBytes = 1 << 20
	// MaxRules bounds the rules of the generated grammar.
	MaxRules = 16384
)

// LimitError is a schema refused for its size: What has Value units; at
// most Max are allowed. Dialects answer it with a 400.
type LimitError struct {
	What  string // "enum", "anyOf", "schema", …
	Unit  string // "values", "branches", "bytes", …
	Value int    // what the schema has (or, for a grammar cut short, where it stopped)
	Max   int
	// Over marks a count that was stopped past the limit, not finished:
	// the message says "more than".
	Over bool
}

func (e *LimitError) Error() string {
	if e.Over {
		return fmt.Sprintf("%s has more than %d %s; at most %d are allowed", e.What, e.Max, e.Unit, e.Max)
	}
	return fmt.Sprintf("%s has %d %s; at most %d are allowed", e.What, e.Value, e.Unit, e.Max)
}

// CheckLimits checks a schema document against the caps that need no
// conversion: its size, and the length of every enum and every anyOf,
// oneOf and allOf list, wherever they are. It is linear in the document,
// for callers that read a schema before (or without) converting it: tool
// parameters are checked against the JSON Schema meta-schema, which costs
// minutes for a 20,000-branch anyOf. A document that is not JSON passes
// (the caller reports that in its own words).
func CheckLimits(schema []byte) error {
	s := bytes.TrimSpace(schema)
	if err := checkSchemaSize(s); err != nil {
		return err
	}
	var doc any
	if json.Unmarshal(s, &doc) != nil {
		return nil
	}
	return walkLimits(doc)
}

func walkLimits(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if list, ok := x.([]any); ok {
				switch k {
				case "enum":
					if len(list) > MaxEnumValues {
						return &LimitError{What: "enum", Unit: "values", Value: len(list), Max: MaxEnumValues}
					}
				case "anyOf", "oneOf", "allOf":
					if len(list) > MaxBranches {
						return &LimitError{What: k, Unit: "branches", Value: len(list), Max: MaxBranches}
					}
				}
			}
			if err := walkLimits(x); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := walkLimits(x); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSchemaSize refuses a schema document over MaxSchemaBytes.
func checkSchemaSize(s []byte) error {
	if len(s) > MaxSchemaBytes {
		return &LimitError{What: "JSON schema", Unit: "bytes", Value: len(s), Max: MaxSchemaBytes}
	}
	return nil
}

// countAlternatives adds n enum values or anyOf branches to the schema's
// total and refuses it past MaxAlternatives.
func (c *converter) countAlternatives(n int) error {
	c.alts += n
	if c.alts > MaxAlternatives {
		return &LimitError{What: "schema", Unit: "enum values and anyOf/oneOf/pattern branches in all", Max: MaxAlternatives, Over: true}
	}
	return nil
}

// countBranches refuses a list of alternatives (an anyOf, a pattern's
// alternation) over MaxBranches and counts it against MaxAlternatives.
func (c *converter) countBranches(what string, n int) error {
	if n > MaxBranches {
		return &LimitError{What: what, Unit: "branches", Value: n, Max: MaxBranches}
	}
	return c.countAlternatives(n)
}

// checkGrammarSize refuses a grammar grown past MaxGrammarBytes or
// MaxRules; it is checked as each schema is entered, so conversion stops
// soon after the grammar outgrows them.
func (c *converter) checkGrammarSize() error {
	if c.rules.size > MaxGrammarBytes {
		return &LimitError{What: "grammar for this schema", Unit: "bytes", Max: MaxGrammarBytes, Over: true}
	}
	if len(c.rules.names) > MaxRules {
		return &LimitError{What: "grammar for this schema", Unit: "rules", Max: MaxRules, Over: true}
	}
	return nil
}
