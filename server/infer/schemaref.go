package infer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaBase names a client's schema inside the compiler. It is not a
// file: URL, so that the compiler never resolves a reference against the
// server's working directory, and an error never shows that directory.
const schemaBase = "https://tadpole.invalid/parameters.json"

// errExternal is what refuseLoader answers for every URL.
var errExternal = errors.New("external documents are not loaded")

// refuseLoader loads nothing: a client's schema may refer only to itself.
// The compiler's default loader reads local files, so a "$ref" to
// file:///etc/passwd would otherwise read that file.
type refuseLoader struct{}

func (refuseLoader) Load(string) (any, error) { return nil, errExternal }

// compileSchema compiles a client's JSON schema against its meta-schema.
// References outside the document are refused with the reference as the
// client wrote it, never with a path of the server.
func compileSchema(doc any) error {
	if err := checkRefs(doc); err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaBase, doc); err != nil {
		return err
	}
	_, err := c.Compile(schemaBase)
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) {
		// A "$schema" or a reference relative to an "$id": the URL is
		// the one the client wrote, or resolved against its own "$id".
		return fmt.Errorf("%q is outside the schema: only references within the schema (\"#/…\") are supported", le.URL)
	}
	return err
}

// checkRefs refuses a "$ref" or "$dynamicRef" that does not start with
// "#". Values of keywords that hold instances, not schemas (const, enum,
// default, examples), are not searched.
func checkRefs(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch k {
			case "$ref", "$dynamicRef":
				if s, ok := x.(string); ok && !strings.HasPrefix(s, "#") {
					return fmt.Errorf("%s %q: only references within the schema (\"#/…\") are supported", k, s)
				}
			case "const", "enum", "default", "examples":
				continue
			}
			if err := checkRefs(x); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := checkRefs(x); err != nil {
				return err
			}
		}
	}
	return nil
}
