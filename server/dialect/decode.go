package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// Invalid is a 400 about a request field (Param; "" for the request as a
// whole), in OpenAI's words.
func Invalid(param, format string, args ...any) *Error {
	e := Errorf(http.StatusBadRequest, format, args...)
	e.Param = param
	return e
}

// MaxBody bounds what Decode reads of a body, whatever the server's own
// limit (which answers 413 first).
const MaxBody = 64 << 20

// BodyFault is what was wrong with a JSON request body; each dialect
// words it in its own error shape (Decode's word).
type BodyFault struct {
	Read      error  // reading the body failed (not its size: that stays echo's 413)
	Empty     bool   // nothing but white space
	NotObject bool   // not a JSON object
	Field     string // a value of the wrong type (or out of its range): its field, "" for the body
	Want      string // the Go type the field has
	WantKind  string // that type's kind (int64, string, struct, …)
	Got       string // the JSON kind the value had
	JSON      error  // json.Unmarshal's error (bad JSON, or the wrong type)
	TypeError bool   // JSON is a value of the wrong type (Field, Want, Got)
}

// Decode is every dialect's body reader: it reads a JSON object (at most
// MaxBody bytes) into v. A body over the server's limit keeps echo's
// 413; any other fault goes to word, which returns the dialect's error.
func Decode(c echo.Context, v any, word func(BodyFault) error) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, MaxBody))
	if err != nil {
		if errors.Is(err, echo.ErrStatusRequestEntityTooLarge) {
			return err
		}
		return word(BodyFault{Read: err})
	}
	body = bytes.TrimSpace(body)
	switch {
	case len(body) == 0:
		return word(BodyFault{Empty: true})
	case body[0] != '{':
		return word(BodyFault{NotObject: true})
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return word(BodyFault{JSON: err, TypeError: true, Field: te.Field, Want: te.Type.String(), WantKind: te.Type.Kind().String(), Got: te.Value})
		}
		return word(BodyFault{JSON: err})
	}
	return nil
}

// DecodeOpenAI reads a JSON object body into v for the OpenAI-shaped
// routes (chat, completions, embeddings, rerank, responses): a missing,
// empty or non-object body, or bad JSON, is a 400 without param; a
// value of the wrong type a 400 naming its field, worded as OpenAI words
// it.
func DecodeOpenAI(c echo.Context, v any) error {
	return Decode(c, v, func(f BodyFault) error {
		switch {
		case f.Read != nil:
			return Invalid("", "could not read the request body: %v", f.Read)
		case f.Empty:
			return Invalid("", "the request body is empty: send a JSON object")
		case f.NotObject:
			return Invalid("", "the request body must be a JSON object")
		case !f.TypeError || f.Field == "":
			return Invalid("", "We could not parse the JSON body of your request: %v", f.JSON)
		}
		return Invalid(f.Field, "Invalid type for '%s': expected %s, but got %s instead.", f.Field, typeName(f.WantKind, f.Want), article(f.Got))
	})
}

// OllamaWords words a bad body as Ollama's routes do, and Anura's, which
// carry Ollama's requests.
func OllamaWords(f BodyFault) error {
	switch {
	case f.Read != nil:
		return Errorf(http.StatusBadRequest, "read body: %v", f.Read)
	case f.Empty:
		return Errorf(http.StatusBadRequest, "missing request body")
	case f.NotObject:
		return Errorf(http.StatusBadRequest, "invalid JSON: the request body must be a JSON object")
	case f.TypeError:
		return Errorf(http.StatusBadRequest, "invalid value for %q: expected %s", f.Field, f.Want)
	}
	return Errorf(http.StatusBadRequest, "invalid JSON: %v", f.JSON)
}

func typeName(kind, typ string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "bool":
		return "a boolean"
	case kind == "string":
		return "a string"
	case kind == "slice", kind == "array":
		return "an array"
	case kind == "map", kind == "struct":
		return "an object"
	}
	return typ
}

func article(v string) string {
	switch v {
	case "object", "array", "integer":
		return "an " + v
	case "number", "string", "bool":
		return "a " + v
	}
	return v
}
