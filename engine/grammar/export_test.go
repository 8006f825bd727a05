package grammar

// Exports for the external tests (engine_test.go), which import the cgo
// engine and so live in package grammar_test.

// SchemaCase is a schema of the shared test table.
type SchemaCase struct {
	Name, Schema string
}

// SchemaCases returns the schemas of the test table.
func SchemaCases() []SchemaCase {
	var out []SchemaCase
	for _, c := range schemaCases {
		out = append(out, SchemaCase{c.name, c.schema})
	}
	return out
}

var (
	CompileSchema = compileSchema
	Validate      = validate
)
