package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// FromSchemaBetween is FromSchema for output that wraps the schema's
// value in fixed text: the grammar's root is the literal prefix, a value
// valid against schema, then the literal suffix (e.g. "<tool_call>" and
// "</tool_call>" around a function call object). The schema's own
// document rule is renamed, so schemas that refer to themselves ($ref
// "#") still mean the value, not the wrapped text.
func FromSchemaBetween(schema []byte, prefix, suffix string) (string, error) {
	s := bytes.TrimSpace(schema)
	if err := checkSchemaSize(s); err != nil {
		return "", err
	}
	if !json.Valid(s) {
		return "", fmt.Errorf("invalid JSON schema: not valid JSON")
	}
	c := newConverter(s)
	c.rules.taken["root"] = true
	value, err := c.ref("#", nil)
	if err != nil {
		return "", fmt.Errorf("JSON schema: %w", err)
	}
	parts := make([]string, 0, 3)
	if prefix != "" {
		parts = append(parts, literal(prefix))
	}
	parts = append(parts, value)
	if suffix != "" {
		parts = append(parts, literal(suffix))
	}
	c.rules.define("root", strings.Join(parts, " "))
	if err := c.checkGrammarSize(); err != nil {
		return "", fmt.Errorf("JSON schema: %w", err)
	}
	return c.rules.String(), nil
}
