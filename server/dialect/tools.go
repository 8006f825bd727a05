package dialect

import (
	"bytes"
	"encoding/json"
	"regexp"
	"unicode/utf8"

	"github.com/tadpole-llm/tadpole/engine/grammar"
)

// OpenAIToolName is OpenAI's pattern for a function's name (chat and
// Responses; Anthropic allows 128 characters).
var OpenAIToolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Trim shortens a client's string for an error message: 64 bytes at
// most (never inside a character), then "…".
func Trim(s string) string {
	if len(s) <= 64 {
		return s
	}
	n := 64
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// CheckToolName is the 400 for a function name OpenAI would refuse
// (param is the field, e.g. "tools[0].function.name").
func CheckToolName(param, name string) error {
	if OpenAIToolName.MatchString(name) {
		return nil
	}
	return Invalid(param, "Invalid '%s': %q. Expected a string of letters, digits, '_' and '-', at most 64 long.", param, Trim(name))
}

// ToolParameters checks a function's parameters (param names the field):
// absent or null (nil is returned), or a JSON object, the schema.
func ToolParameters(param string, raw json.RawMessage) (json.RawMessage, error) {
	ps := bytes.TrimSpace(raw)
	if len(ps) == 0 || string(ps) == "null" {
		return nil, nil
	}
	if ps[0] != '{' {
		return nil, Invalid(param, "Invalid type for '%s': expected an object (a JSON schema).", param)
	}
	return json.RawMessage(ps), nil
}

// OutputFormat is an OpenAI output format: chat's response_format
// (Schema from its json_schema) and Responses' text.format.
type OutputFormat struct {
	Type   string
	Name   string
	Schema json.RawMessage
}

// FormatGrammar is the grammar of an output format: none for text, any
// JSON object for json_object, the schema for json_schema (always held
// to it, as with strict: true). param names the format's field
// ("response_format", "text.format"), schemaParam its schema's; a
// json_schema without a schema is any JSON object when schemaOptional,
// else a 400.
func FormatGrammar(param, schemaParam string, f OutputFormat, schemaOptional bool) (string, error) {
	switch f.Type {
	case "text":
		return "", nil
	case "json_object":
		return grammar.JSONObject(), nil
	case "json_schema":
		s := bytes.TrimSpace(f.Schema)
		if len(s) == 0 || string(s) == "null" {
			if schemaOptional {
				return grammar.JSONObject(), nil
			}
			return "", Invalid(schemaParam, "Missing required parameter: '%s'.", schemaParam)
		}
		if s[0] != '{' {
			return "", Invalid(schemaParam, "Invalid type for '%s': expected an object.", schemaParam)
		}
		g, err := grammar.FromSchema(s)
		if err != nil {
			return "", Invalid(schemaParam, "Invalid schema for %s '%s': %v", param, Trim(f.Name), err)
		}
		return g, nil
	case "":
		return "", Invalid(param+".type", "Missing required parameter: '%s.type'.", param)
	}
	return "", Invalid(param+".type", "Invalid value for '%s.type': %q. Supported values are: 'text', 'json_object' and 'json_schema'.", param, Trim(f.Type))
}
