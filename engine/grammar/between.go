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

// Branch is one alternative of FromBranches: a value valid against
// Schema, between the literal Prefix and Suffix. Between, when set, is
// GBNF written as it is after the prefix, before the value (e.g. an
// index and a separator: `[0-9]{1,3} "<sep>"`): the caller's, built of
// literals and character classes only. Fields, when set, writes the
// value (an object) as key-value fields in markup instead of JSON.
type Branch struct {
	Prefix  string
	Between string
	Schema  json.RawMessage
	Fields  *Fields
	Suffix  string
}

// FromBranches is FromSchemaBetween for output that is one of several
// wrapped values: the root is one branch's prefix, a value valid against
// its schema and its suffix (e.g. a tool call in a syntax that names the
// function outside the JSON, "NAME<sep>{arguments}", one branch per
// function). defs holds the definitions the schemas refer to, by their
// keyword ("$defs" or "definitions") and name, as "#/$defs/NAME". The
// limits of FromSchema hold for the branches together.
func FromBranches(defs map[string]map[string]json.RawMessage, branches []Branch) (string, error) {
	if len(branches) == 0 {
		return "", fmt.Errorf("no branch")
	}
	doc := map[string]any{}
	for k, v := range defs {
		if k != "$defs" && k != "definitions" {
			return "", fmt.Errorf("definitions under %q: only $defs and definitions", k)
		}
		doc[k] = v
	}
	for i, b := range branches {
		doc[fmt.Sprintf("branch-%d", i)] = b.Schema
	}
	s, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("invalid JSON schema: %v", err)
	}
	if err := checkSchemaSize(s); err != nil {
		return "", err
	}
	c := newConverter(s)
	c.rules.taken["root"] = true
	alts := make([]string, len(branches))
	for i, b := range branches {
		var value string
		if b.Fields != nil {
			value, err = c.fieldsValue(b.Fields, b.Schema)
		} else {
			value, err = c.ref(fmt.Sprintf("#/branch-%d", i), nil)
		}
		if err != nil {
			return "", fmt.Errorf("JSON schema of branch %d: %w", i, err)
		}
		parts := make([]string, 0, 4)
		if b.Prefix != "" {
			parts = append(parts, literal(b.Prefix))
		}
		if b.Between != "" {
			parts = append(parts, "("+b.Between+")")
		}
		if value != "" {
			parts = append(parts, value)
		}
		if b.Suffix != "" {
			parts = append(parts, literal(b.Suffix))
		}
		alts[i] = "(" + strings.Join(parts, " ") + ")"
	}
	c.rules.define("root", strings.Join(alts, " | "))
	if err := c.checkGrammarSize(); err != nil {
		return "", fmt.Errorf("JSON schema: %w", err)
	}
	return c.rules.String(), nil
}
