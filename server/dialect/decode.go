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

// DecodeOpenAI reads a JSON object body into v for the OpenAI-shaped
// routes (chat, completions, embeddings, rerank, responses): a body over
// the server's limit keeps echo's 413; a missing, empty or non-object
// body, or bad JSON, is a 400 without param; a value of the wrong type a
// 400 naming its field, worded as OpenAI words it.
func DecodeOpenAI(c echo.Context, v any) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, 64<<20))
	if err != nil {
		if errors.Is(err, echo.ErrStatusRequestEntityTooLarge) {
			return err
		}
		return Invalid("", "could not read the request body: %v", err)
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return Invalid("", "the request body is empty: send a JSON object")
	}
	if body[0] != '{' {
		return Invalid("", "the request body must be a JSON object")
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Invalid(te.Field, "Invalid type for '%s': expected %s, but got %s instead.", te.Field, typeName(te.Type.Kind().String(), te.Type.String()), article(te.Value))
		}
		return Invalid("", "We could not parse the JSON body of your request: %v", err)
	}
	return nil
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
