// Package grammar turns response-format requests into llama.cpp GBNF
// grammars that constrain generation: Ollama's "format" ("json" or a JSON
// schema) and OpenAI's response_format (json_object: FromFormat with
// "json"; json_schema: FromSchema on its "schema", strict or not).
//
// Every grammar has the root rule "root". The output carries no leading or
// trailing whitespace; inside it, whitespace is limited to one space, or a
// newline and up to 20 spaces or tabs of indentation, at each place JSON
// allows it, so a model cannot loop on blanks. Strings allow the JSON
// escapes (\u escapes for the BMP less the surrogates; other characters
// raw) and no raw control characters. Numbers have at most 16 integral
// digits, 16 fraction digits and a 3-digit exponent. Only strings and
// unbounded arrays and objects can go on forever.
//
// # Schemas
//
// FromSchema converts a JSON Schema (draft 4 to 2020-12 spellings) so that
// every output of the grammar is valid against the schema; where an exact
// grammar would be too large, the grammar produces a valid subset (fixed
// member order, for example). Supported:
//
//   - type: a name or an array of names (string, number, integer, boolean,
//     null, object, array). Without type, the kinds the keywords imply
//     (properties → object, items → array, maxLength → string, minimum →
//     number, …), or any JSON value. OpenAPI's nullable: true adds null.
//   - properties and required: required members first, in the order of
//     properties (then required names that properties does not declare,
//     with any value), then the optional ones in order, each optional.
//   - additionalProperties (unevaluatedProperties when it is absent): false
//     or absent means no other members when properties or required is
//     given; true or a schema allows further members after the declared
//     ones, whose keys never spell a declared name. An object schema with
//     none of properties, required, additionalProperties is any object.
//   - minProperties (optional properties become required, in order, or
//     extra members are asked for) and maxProperties (bounds the extras;
//     an error if the declared properties alone can exceed it).
//   - enum and const: the values written compactly, as in the schema; enum
//     values not of the schema's type are dropped.
//   - items, prefixItems (and draft 4's array items with additionalItems),
//     minItems, maxItems. prefixItems without items gives exactly the tuple
//     (plus any values if minItems asks for more).
//   - uniqueItems when the items are an enum, a const or boolean, with
//     minItems <= 1 and maxItems absent or at least the number of values:
//     the items then come in the order of the values, so none repeats.
//   - anyOf and oneOf (oneOf as anyOf: branches are not checked for
//     overlap); sibling keywords are merged into each branch.
//   - allOf: the subschemas are merged (properties united, a property in
//     several merged in turn, required united, types intersected, enums
//     intersected, the tighter bound kept, anyOf lists multiplied out).
//   - $ref to JSON pointers within the document ("#", "#/$defs/…",
//     "#/definitions/…", any "#/…"), recursion included; sibling keywords
//     are merged with the target. $id does not change the base.
//   - strings: minLength and maxLength (in characters, as JSON Schema
//     counts), format date, date-time, time and uuid (RFC 3339: days
//     checked against month and year; no leap seconds), pattern (a regular
//     expression in RE2 syntax, which covers the usual ECMAScript ones,
//     matched anywhere unless anchored with ^ and $; not together with
//     minLength or maxLength). Lengths over llama.cpp's repetition limit
//     (2000) are built from nested repetitions.
//   - integer and number minimum, maximum, exclusiveMinimum,
//     exclusiveMaximum (numbers, or draft 4's booleans): exact. Bounded
//     numbers are written without an exponent.
//   - multipleOf: on integers 1/n (no constraint); on numbers 0.1, 0.01, …
//     (at most that many decimals, no exponent) and 1 (integers).
//
// Ignored (annotations, or no effect on the output): $schema, $id,
// $anchor, $comment, $defs and definitions (except as $ref targets),
// title, description, default, examples, readOnly, writeOnly, deprecated,
// content*, other formats (email, uri, int32, …: JSON Schema makes format
// an annotation by default), propertyNames when no extra members are
// allowed, if without then/else, minContains/maxContains without contains,
// and unknown keywords (x-… extensions, propertyOrdering, …).
//
// Errors, because ignoring them could produce output the schema rejects:
// not, if with then/else, patternProperties, propertyNames with extra
// members allowed, dependentRequired, dependentSchemas, dependencies,
// contains, other uniqueItems, other multipleOf, pattern with min/maxLength,
// regular expressions RE2 lacks (lookaround, backreferences) or with \b
// or inner anchors, $dynamicRef, $recursiveRef, references outside the
// document or to anchors, $ref cycles that consume no input (like
// {"$ref": "#"}, which llama.cpp would reject as left recursion), and
// schemas no value satisfies (false, empty enums, no common type, empty
// ranges). A part no value satisfies is left out instead where that is
// possible: an anyOf/oneOf branch, an optional property (so "x": false
// forbids x), additional properties, array items beyond minItems.
package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// FromFormat converts an Ollama "format" value (OpenAI's json_object is
// the same as "json"). An empty value, null or "" means no constraint and
// returns "". "json" returns a grammar for any JSON object (values inside
// may be any JSON). A JSON object is a JSON schema, converted by
// FromSchema. Anything else is an error.
func FromFormat(format json.RawMessage) (string, error) {
	f := bytes.TrimSpace(format)
	if len(f) == 0 || string(f) == "null" {
		return "", nil
	}
	switch f[0] {
	case '"':
		var s string
		if err := json.Unmarshal(f, &s); err != nil {
			return "", fmt.Errorf("invalid format: %v", err)
		}
		switch s {
		case "":
			return "", nil
		case "json":
			return JSONObject(), nil
		}
		return "", fmt.Errorf("invalid format %q: want \"json\" or a JSON schema object", s)
	case '{':
		return FromSchema(f)
	}
	if !json.Valid(f) {
		return "", fmt.Errorf("invalid format: not JSON")
	}
	return "", fmt.Errorf("invalid format %s: want \"json\" or a JSON schema object", truncate(string(f), 40))
}

// JSONObject returns the grammar for any JSON object, with any JSON
// values inside: Ollama's format "json" and OpenAI's json_object.
func JSONObject() string {
	r := newRules()
	r.define("root", r.prim("object"))
	return r.String()
}

// FromSchema converts a JSON Schema (see the package documentation for the
// keywords it supports) into a GBNF grammar with root rule "root".
func FromSchema(schema []byte) (string, error) {
	s := bytes.TrimSpace(schema)
	if err := checkSchemaSize(s); err != nil {
		return "", err
	}
	if !json.Valid(s) {
		return "", fmt.Errorf("invalid JSON schema: not valid JSON")
	}
	c := newConverter(s)
	if _, err := c.ref("#", nil); err != nil {
		return "", fmt.Errorf("JSON schema: %w", err)
	}
	if err := c.checkGrammarSize(); err != nil {
		return "", fmt.Errorf("JSON schema: %w", err)
	}
	return c.rules.String(), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
