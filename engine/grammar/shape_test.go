package grammar

import "testing"

// TestObjectArrayGrammarText pins the exact grammar objectBody and
// arrayBody write for a few schemas, so that a change to how they are
// written shows as a diff here, not only as a change in what is accepted.
func TestObjectArrayGrammarText(t *testing.T) {
	const ws = `ws ::= | " " | "\n" [ \t]{0,20}` + "\n"
	const boolean = `boolean ::= "true" | "false"` + "\n"
	const null = `null ::= "null"` + "\n"
	const integer = `integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )` + "\n"
	const char = `char ::= [^"\\\x00-\x1F\x7F] | "\\" ( ["\\/bfnrt] | "u" hex-nonsurrogate )` + "\n" +
		`hex-nonsurrogate ::= [0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}` + "\n"
	const str = `string ::= "\"" char* "\""` + "\n" + char
	for _, tc := range []struct{ name, schema, want string }{
		{
			"required and optional",
			`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"}},"required":["a"]}`,
			`root ::= "{" ws "\"a\"" ws ":" ws integer ( ws "," ws root-b-kv )? ws "}"` + "\n" +
				`root-b-kv ::= "\"b\"" ws ":" ws boolean` + "\n" +
				integer + boolean + ws,
		},
		{
			"all optional, no additional",
			`{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"}},"additionalProperties":false}`,
			`root ::= "{" ws ( ( root-a-kv root-rest-1 | root-b-kv ) ws )? "}"` + "\n" +
				`root-a-kv ::= "\"a\"" ws ":" ws boolean` + "\n" +
				`root-b-kv ::= "\"b\"" ws ":" ws null` + "\n" +
				`root-rest-1 ::= ( ws "," ws root-b-kv )?` + "\n" +
				boolean + null + ws,
		},
		{
			"additional schema, maxProperties",
			`{"type":"object","properties":{"a":{"type":"boolean"}},"required":["a"],"additionalProperties":{"type":"integer"},"maxProperties":3}`,
			`root ::= "{" ws "\"a\"" ws ":" ws boolean ( ws "," ws root-additional-kv ){0,2} ws "}"` + "\n" +
				`root-additional-key-1 ::= [^"\\\x00-\x1F\x7F] char* "\"" | "\\" ( "\"" | "\\" | "b" | "f" | "n" | "r" | "t" ) char* "\""` + "\n" +
				`root-additional-key-0 ::= "\"" | [^"\\\x00-\x1F\x7Fa] char* "\"" | "\\" ( "\"" | "\\" | "b" | "f" | "n" | "r" | "t" ) char* "\"" | "a" root-additional-key-1` + "\n" +
				`root-additional-key ::= "\"" root-additional-key-0` + "\n" +
				`root-additional-kv ::= root-additional-key ws ":" ws integer` + "\n" +
				char + integer + boolean + ws,
		},
		{
			"extras only, min and maxProperties",
			`{"type":"object","additionalProperties":{"type":"boolean"},"minProperties":2,"maxProperties":4}`,
			`root ::= "{" ws root-additional-kv ( ws "," ws root-additional-kv ){1,3} ws "}"` + "\n" +
				`root-additional-kv ::= string ws ":" ws boolean` + "\n" +
				str + boolean + ws,
		},
		{
			"minProperties promotes, impossible property dropped",
			`{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"},"c":false},"minProperties":1}`,
			`root ::= "{" ws "\"a\"" ws ":" ws boolean ( ws "," ws root-b-kv )? ws "}"` + "\n" +
				`root-b-kv ::= "\"b\"" ws ":" ws null` + "\n" +
				boolean + null + ws,
		},
		{
			"maxProperties 0",
			`{"type":"object","maxProperties":0}`,
			`root ::= "{" ws "}"` + "\n" + ws,
		},
		{
			"minItems and maxItems",
			`{"type":"array","items":{"type":"boolean"},"minItems":1,"maxItems":3}`,
			`root ::= "[" ws boolean ( ws "," ws boolean ){0,2} ws "]"` + "\n" + boolean + ws,
		},
		{
			"items only",
			`{"type":"array","items":{"type":"boolean"}}`,
			`root ::= "[" ws ( boolean ( ws "," ws boolean )* ws )? "]"` + "\n" + boolean + ws,
		},
		{
			"prefixItems, no further items",
			`{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":false}`,
			`root ::= "[" ws integer ws "," ws string ws "]"` + "\n" + str + integer + ws,
		},
		{
			"prefixItems then items, bounded",
			`{"type":"array","prefixItems":[{"type":"boolean"}],"items":{"type":"null"},"minItems":2,"maxItems":4}`,
			`root ::= "[" ws boolean ( ws "," ws null ){1,3} ws "]"` + "\n" + boolean + null + ws,
		},
		{
			"prefixItems cut at an impossible item",
			`{"type":"array","prefixItems":[{"type":"boolean"},false]}`,
			`root ::= "[" ws boolean ws "]"` + "\n" + boolean + ws,
		},
		{
			"uniqueItems of an enum",
			`{"type":"array","items":{"enum":["x","y"]},"uniqueItems":true,"minItems":1}`,
			`root ::= "[" ws ( "\"x\"" root-unique-rest-1 | "\"y\"" ) ws "]"` + "\n" +
				`root-unique-rest-1 ::= ( ws "," ws "\"y\"" )?` + "\n" + ws,
		},
	} {
		g, err := FromSchema([]byte(tc.schema))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if g != tc.want {
			t.Errorf("%s: grammar\n%s\nwant\n%s", tc.name, g, tc.want)
		}
	}
}
