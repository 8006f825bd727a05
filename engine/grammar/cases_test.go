package grammar

// schemaCase is a schema with documents its grammar must accept (each
// also valid against the schema), documents it must reject, and rules
// (name prefixes of "name ::=" lines) the grammar must define.
type schemaCase struct {
	name   string
	schema string
	accept []string
	reject []string
	rules  []string
	// noValidator: the schema uses keywords the reference validator
	// does not know (OpenAPI's nullable).
	noValidator bool
}

var schemaCases = []schemaCase{
	{
		name: "person",
		schema: `{"type":"object","properties":{
			"name":{"type":"string","maxLength":10},
			"age":{"type":"integer","minimum":0,"maximum":120},
			"ok":{"type":"boolean"},
			"color":{"enum":["red","green"]},
			"tags":{"type":"array","items":{"type":"string"},"maxItems":3}},
			"required":["name","age"]}`,
		accept: []string{
			`{"name":"Bo","age":7}`,
			`{"name":"Bo","age":120,"ok":true,"color":"red","tags":["a","b"]}`,
			`{"name":"","age":0,"tags":[]}`,
			`{"name":"Bo","age":7,"color":"green"}`,
			"{\n  \"name\": \"x\",\n  \"age\": 99\n}",
			`{ "name" : "a\"b\\c\n\u00e9/", "age" : 5 }`,
			`{"name":"日本語","age":1}`,
		},
		reject: []string{
			`{"age":7,"name":"Bo"}`,
			`{"name":"Bo"}`,
			`{"name":"Bo","age":121}`,
			`{"name":"Bo","age":-1}`,
			`{"name":"Bo","age":007}`,
			`{"name":"Bo","age":1.5}`,
			`{"name":"abcdefghijk","age":1}`,
			`{"name":"Bo","age":1,"extra":1}`,
			`{"name":"Bo","age":1,"color":"blue"}`,
			`{"name":"Bo","age":1,"tags":["a","b","c","d"]}`,
			`{"name":"Bo","age":1,"ok":true,"ok":true}`,
			`{"name":"Bo","age":1,"tags":["a",]}`,
			` {"name":"Bo","age":7}`,
			`{"name":"Bo","age":7} `,
			`{"name":"Bo",  "age":7}`,
			"{\n                      \"name\":\"Bo\",\"age\":7}",
			"{\"name\":\"a\x01\",\"age\":7}",
			`{"name":"\ud800","age":7}`,
			`{"name":"\x41","age":7}`,
		},
		rules: []string{"root", "root-name", "root-age", "root-ok-kv", "root-color", "root-tags", "ws", "string", "char", "boolean"},
	},
	{
		name: "required order follows properties",
		schema: `{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string","maxLength":3},"c":{"type":"null"}},
			"required":["a","b"],"additionalProperties":false}`,
		accept: []string{`{"b":1,"a":"x"}`, `{"b":-12,"a":"","c":null}`},
		reject: []string{`{"a":"x","b":1}`, `{"b":1,"a":"x","c":1}`, `{"c":null,"b":1,"a":"x"}`},
	},
	{
		name: "nested object",
		schema: `{"type":"object","properties":{
			"id":{"type":"integer"},
			"address":{"type":"object","properties":{"city":{"type":"string","maxLength":8},"zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["city","zip"]}},
			"required":["id","address"]}`,
		accept: []string{`{"id":1,"address":{"city":"Oslo","zip":"01234"}}`, "{\"id\":-0,\"address\":{\n\t\"city\":\"\",\n\t\"zip\":\"99999\"\n}}"},
		reject: []string{`{"id":1,"address":{"city":"Oslo","zip":"1234"}}`, `{"id":1,"address":{"zip":"01234","city":"Oslo"}}`, `{"id":1,"address":"Oslo"}`},
		rules:  []string{"root-address", "root-address-city", "root-address-zip"},
	},
	{
		name:   "all optional",
		schema: `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"},"c":{"type":"string","maxLength":2}}}`,
		accept: []string{`{}`, `{"a":1}`, `{"b":false}`, `{"c":"x"}`, `{"a":1,"c":"x"}`, `{"a":1,"b":true,"c":""}`, `{ }`},
		reject: []string{`{"b":true,"a":1}`, `{,"a":1}`, `{"a":1,}`, `{"a":1,"a":2}`, `{"d":1}`},
	},
	{
		name:   "additional properties",
		schema: `{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"boolean"}}`,
		accept: []string{`{}`, `{"a":1}`, `{"a":1,"x":true}`, `{"x":true,"y":false}`, `{"ab":true}`, `{"":false}`, `{"b\u0061\/":true}`, `{"\n":true}`},
		reject: []string{`{"x":1}`, `{"a":true}`, `{"x":true,"a":1}`, `{"a":1,"a":true}`, `{"a":1,"\u0061":true}`},
		rules:  []string{"root-additional-kv", "root-additional-key"},
	},
	{
		name:   "additional properties true with required",
		schema: `{"type":"object","properties":{"a":{"type":"string","maxLength":4}},"required":["a"],"additionalProperties":true}`,
		accept: []string{`{"a":"x"}`, `{"a":"x","b":[1,{"c":null}]}`, `{"a":"x","\"a":1}`},
		reject: []string{`{"b":1}`, `{"a":"x","a":"y"}`},
	},
	{
		name:   "free-form object",
		schema: `{"type":"object"}`,
		accept: []string{`{}`, `{"a":[1,2,{"b":"c"}],"d":null}`},
		reject: []string{`[]`, `"x"`},
	},
	{
		name:   "anyOf",
		schema: `{"anyOf":[{"type":"string","maxLength":5},{"type":"integer"},{"type":"object","properties":{"x":{"type":"null"}},"required":["x"]}]}`,
		accept: []string{`"abc"`, `42`, `{"x":null}`},
		reject: []string{`"abcdef"`, `4.2`, `{}`, `true`},
		rules:  []string{"root-0", "root-2"},
	},
	{
		name: "oneOf with siblings",
		schema: `{"type":"object","properties":{"kind":{"type":"string","enum":["a","b"]}},"required":["kind"],
			"oneOf":[{"properties":{"kind":{"const":"a"},"n":{"type":"integer"}},"required":["n"]},
			         {"properties":{"kind":{"const":"b"},"s":{"type":"string","maxLength":3}},"required":["s"]}]}`,
		accept: []string{`{"kind":"a","n":1}`, `{"kind":"b","s":"x"}`},
		reject: []string{`{"kind":"a","s":"x"}`, `{"kind":"b","n":1}`, `{"kind":"c","n":1}`},
	},
	{
		name: "recursive $ref",
		schema: `{"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer","minimum":0,"maximum":9},
			"children":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["value","children"]}},
			"$ref":"#/$defs/node"}`,
		accept: []string{`{"value":1,"children":[]}`, `{"value":1,"children":[{"value":2,"children":[{"value":3,"children":[]}]}]}`},
		reject: []string{`{"value":1}`, `{"value":10,"children":[]}`, `{"value":1,"children":[{"value":2}]}`},
		rules:  []string{"node", "node-children"},
	},
	{
		name: "definitions, $ref to root, allOf",
		schema: `{"definitions":{"base":{"type":"object","properties":{"a":{"type":"string","maxLength":3}},"required":["a"]}},
			"allOf":[{"$ref":"#/definitions/base"},{"properties":{"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},"required":["next"]}]}`,
		accept: []string{`{"a":"x","next":null}`, `{"a":"x","next":{"a":"y","next":null}}`},
		reject: []string{`{"next":null,"a":"x"}`, `{"a":"x"}`, `{"a":"x","next":{"a":"y"}}`},
	},
	{
		name:   "$ref with sibling keywords",
		schema: `{"$defs":{"s":{"type":"string"}},"type":"object","properties":{"x":{"$ref":"#/$defs/s","maxLength":2,"description":"short"}},"required":["x"]}`,
		accept: []string{`{"x":"ab"}`},
		reject: []string{`{"x":"abc"}`},
	},
	{
		name:   "type arrays and nullable",
		schema: `{"type":"object","properties":{"a":{"type":["string","null"],"maxLength":2},"b":{"type":"integer","nullable":true}},"required":["a","b"]}`,
		accept: []string{`{"a":null,"b":null}`, `{"a":"xy","b":-5}`},
		reject: []string{`{"a":"xyz","b":1}`, `{"a":1,"b":1}`, `{"a":null,"b":"1"}`},
		// nullable is OpenAPI's; the reference validator rejects b:null.
		noValidator: true,
	},
	{
		name:   "const and mixed enum",
		schema: `{"type":"array","prefixItems":[{"const":{"k":[1, 2]}},{"enum":["x",1,null,true,{"a":"b"}]}],"items":false}`,
		accept: []string{`[{"k":[1,2]},"x"]`, `[{"k":[1,2]},null]`, `[{"k":[1,2]},{"a":"b"}]`, `[{"k":[1,2]},1]`},
		reject: []string{`[{"k":[1, 2]},"x"]`, `[{"k":[1,2]},"y"]`, `[{"k":[1,2]},1,1]`, `[{"k":[1,2]}]`},
	},
	{
		// 16 values and more are written as a trie: values that are
		// prefixes of others, shared suffixes, escapes, non-ASCII.
		name: "enum as a trie",
		schema: `{"enum":["a","ab","abc","abd","b","xa","xab",1,12,123,1.5,-1,null,true,false,{"a":1},[1,"x"],
			"é","éé","q\"q","x\ny","tab\there","\\"]}`,
		accept: []string{`"a"`, `"ab"`, `"abc"`, `"abd"`, `"b"`, `"xa"`, `"xab"`, `1`, `12`, `123`, `1.5`, `-1`, `null`,
			`true`, `false`, `{"a":1}`, `[1,"x"]`, `"é"`, `"éé"`, `"q\"q"`, `"x\ny"`, `"tab\there"`, `"\\"`},
		reject: []string{`"abcd"`, `"ac"`, `""`, `"x"`, `"xb"`, `1234`, `2`, `1.`, `-`, `nul`, `{"a":2}`, `"a`, `a"`, `"ééé"`,
			`"q"`, `"\\\\"`, `"ab" `},
		rules: []string{"root-t"},
	},
	{
		// anyOf of constants and enums is one enum, a trie.
		name: "anyOf of constants as a trie",
		schema: `{"anyOf":[{"const":"a"},{"const":"ab"},{"const":"abc"},{"enum":["b","c","cd"]},{"const":1},{"const":12},
			{"const":null},{"const":{"k":"v"}},{"const":"d","title":"annotated"},{"enum":["e","f","g","h"]},{"const":"ab"},
			{"const":"i"},{"const":"j"},{"const":"k"}]}`,
		accept: []string{`"a"`, `"ab"`, `"abc"`, `"b"`, `"c"`, `"cd"`, `1`, `12`, `null`, `{"k":"v"}`, `"d"`, `"e"`, `"h"`, `"k"`},
		reject: []string{`"abcd"`, `""`, `"l"`, `123`, `{"k":"w"}`, `"c "`, `{ "k":"v"}`},
		rules:  []string{"root-t"},
	},
	{
		// An alternation of plain words in a pattern is a trie too, over
		// the JSON-encoded characters.
		name:   "pattern alternation as a trie",
		schema: `{"type":"string","pattern":"^(red|green|blue|black|brown|grey|gray|q\"t|back\\\\slash|été|été2|cyan|teal|tan|pink|plum|puce|x[0-9]|[yz]\\t)$"}`,
		accept: []string{`"red"`, `"green"`, `"black"`, `"grey"`, `"gray"`, `"q\"t"`, `"back\\slash"`, `"été"`, `"été2"`, `"puce"`,
			`"x0"`, `"x9"`, `"y\t"`, `"z\t"`},
		reject: []string{`"re"`, `"reds"`, `""`, `"bl"`, `"greyy"`, `"q"`, `"back\slash"`, `"ét"`, `"pluce"`, `"x"`, `"xa"`, `"y\n"`},
		rules:  []string{"pattern-t"},
	},
	{
		name:   "enum filtered by type",
		schema: `{"type":"string","enum":["a",1,"b"]}`,
		accept: []string{`"a"`, `"b"`},
		reject: []string{`1`},
	},
	{
		name:   "array bounds",
		schema: `{"type":"array","items":{"type":"integer","minimum":1,"maximum":3},"minItems":2,"maxItems":4}`,
		accept: []string{`[1,2]`, `[1,2,3,3]`, "[\n  1,\n  2\n]"},
		reject: []string{`[]`, `[1]`, `[1,2,3,1,2]`, `[0,1]`, `[1,4]`},
	},
	{
		name:   "array min only",
		schema: `{"type":"array","items":{"type":"boolean"},"minItems":1}`,
		accept: []string{`[true]`, `[true,false,true,true,false]`},
		reject: []string{`[]`},
	},
	{
		name:   "tuple without items",
		schema: `{"type":"array","prefixItems":[{"type":"string","maxLength":2},{"type":"number"}]}`,
		accept: []string{`["a",1.5]`, `["",-2e10]`},
		reject: []string{`["a"]`, `[1,"a"]`},
	},
	{
		name:   "draft-4 tuple",
		schema: `{"$schema":"http://json-schema.org/draft-04/schema#","type":"array","items":[{"type":"integer"},{"type":"string","maxLength":1}],"additionalItems":{"type":"null"},"maxItems":3}`,
		accept: []string{`[1,"a"]`, `[1,"a",null]`},
		reject: []string{`[1,"a",null,null]`, `[1,"a",2]`},
	},
	{
		name:   "unique enum items",
		schema: `{"type":"array","items":{"enum":["x","y","z"]},"uniqueItems":true}`,
		accept: []string{`[]`, `["x"]`, `["y","z"]`, `["x","y","z"]`},
		reject: []string{`["x","x"]`, `["y","x"]`},
	},
	{
		name: "formats",
		schema: `{"type":"object","properties":{"d":{"type":"string","format":"date"},"dt":{"type":"string","format":"date-time"},
			"t":{"type":"string","format":"time"},"u":{"type":"string","format":"uuid"}},
			"required":["d","dt","t","u"]}`,
		accept: []string{
			`{"d":"2024-02-29","dt":"2024-12-31T23:59:59Z","t":"08:30:00.123+02:00","u":"123e4567-e89b-12d3-a456-426614174000"}`,
			`{"d":"2000-02-29","dt":"1996-02-29T00:00:00-11:30","t":"23:59:59Z","u":"ABCDEF00-0000-0000-0000-000000000000"}`,
			`{"d":"2023-02-28","dt":"2023-11-30T12:00:00.5Z","t":"00:00:00Z","u":"abcdef00-0000-0000-0000-000000000000"}`,
		},
		reject: []string{
			`{"d":"1900-02-29","dt":"2024-12-31T23:59:59Z","t":"08:30:00Z","u":"123e4567-e89b-12d3-a456-426614174000"}`,
			`{"d":"2024-04-31","dt":"2024-12-31T23:59:59Z","t":"08:30:00Z","u":"123e4567-e89b-12d3-a456-426614174000"}`,
			`{"d":"2024-02-30","dt":"2024-12-31T23:59:59Z","t":"08:30:00Z","u":"123e4567-e89b-12d3-a456-426614174000"}`,
			`{"d":"2023-02-29","dt":"2024-12-31T23:59:59Z","t":"08:30:00Z","u":"123e4567-e89b-12d3-a456-426614174000"}`,
			`{"d":"2024-01-01","dt":"2024-12-31 23:59:59Z","t":"08:30:00Z","u":"123e4567-e89b-12d3-a456-426614174000"}`,
			`{"d":"2024-01-01","dt":"2024-12-31T23:59:59Z","t":"24:00:00Z","u":"123e4567-e89b-12d3-a456-426614174000"}`,
			`{"d":"2024-01-01","dt":"2024-12-31T23:59:59Z","t":"08:30:00Z","u":"123e4567e89b12d3a456426614174000"}`,
		},
		rules: []string{"date", "date-time", "time", "uuid"},
	},
	{
		name: "number bounds",
		schema: `{"type":"object","properties":{
			"p":{"type":"number","minimum":0,"maximum":1},
			"q":{"type":"number","exclusiveMinimum":-1.5,"maximum":2.25},
			"m":{"type":"number","multipleOf":0.01,"minimum":0},
			"i":{"type":"integer","exclusiveMinimum":-3,"exclusiveMaximum":1000},
			"j":{"type":"integer","minimum":-20.5}},
			"required":["p","q","m","i","j"]}`,
		accept: []string{
			`{"p":0,"q":-1.4999,"m":0.05,"i":-2,"j":-20}`,
			`{"p":1.000,"q":2.25,"m":12,"i":999,"j":123456789}`,
			`{"p":0.5,"q":0,"m":3.1,"i":0,"j":0}`,
		},
		reject: []string{
			`{"p":1.01,"q":0,"m":0,"i":0,"j":0}`,
			`{"p":-0.1,"q":0,"m":0,"i":0,"j":0}`,
			`{"p":0,"q":-1.5,"m":0,"i":0,"j":0}`,
			`{"p":0,"q":2.2500001,"m":0,"i":0,"j":0}`,
			`{"p":0,"q":0,"m":0.001,"i":0,"j":0}`,
			`{"p":0,"q":0,"m":-1,"i":0,"j":0}`,
			`{"p":0,"q":0,"m":0,"i":-3,"j":0}`,
			`{"p":0,"q":0,"m":0,"i":1000,"j":0}`,
			`{"p":0,"q":0,"m":0,"i":0,"j":-21}`,
			`{"p":1e0,"q":0,"m":0,"i":0,"j":0}`,
		},
	},
	{
		name:   "unknown formats are ignored",
		schema: `{"type":"string","format":"email","maxLength":5}`,
		accept: []string{`"a@b"`, `"x"`},
		reject: []string{`"abcdef"`},
		// The reference validator asserts formats.
		noValidator: true,
	},
	{
		name:   "draft-4 exclusive bounds",
		schema: `{"$schema":"http://json-schema.org/draft-04/schema#","type":"integer","minimum":0,"exclusiveMinimum":true,"maximum":10,"exclusiveMaximum":true}`,
		accept: []string{`1`, `9`},
		reject: []string{`0`, `10`},
	},
	{
		name:   "string lengths",
		schema: `{"type":"array","prefixItems":[{"type":"string","minLength":2,"maxLength":3},{"type":"string","minLength":1}],"items":false}`,
		accept: []string{`["ab","x"]`, `["a\"c","xyz"]`, `["é😀","x"]`},
		reject: []string{`["a","x"]`, `["abcd","x"]`, `["ab",""]`},
	},
	{
		name:   "patterns",
		schema: `{"type":"array","prefixItems":[{"type":"string","pattern":"^[A-Z]{2}-\\d{3}$"},{"type":"string","pattern":"ab"},{"type":"string","pattern":"^(?i)x[^a-c\"]$"},{"type":"string","pattern":"^a.c$"}],"items":false}`,
		accept: []string{`["AB-123","xaby","Xd","abc"]`, `["ZZ-000","ab","x\\","a\\c"]`, `["ZZ-000","ab","x\n","a\"c"]`},
		reject: []string{`["AB-12","ab","xd","abc"]`, `["AB-123","a","xd","abc"]`, `["AB-123","ab","xa","abc"]`, `["AB-123","ab","xd","a\nc"]`},
	},
	{
		name:   "minProperties makes optional properties required",
		schema: `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"minProperties":1,"maxProperties":2}`,
		accept: []string{`{"a":1}`, `{"a":1,"b":2}`},
		reject: []string{`{}`, `{"b":2}`},
	},
	{
		name:   "awkward property names",
		schema: `{"type":"object","properties":{"first name":{"type":"integer","minimum":1},"first-name":{"type":"string","maxLength":2},"root":{"type":"null"},"string":{"type":"string","maxLength":1},"ws":{"const":1},"":{"const":2},"ä\"/\\":{"const":3},"a\u0001":{"const":4}},"required":["first name","first-name","root","string","ws","","ä\"/\\","a\u0001"]}`,
		accept: []string{`{"first name":1,"first-name":"ab","root":null,"string":"x","ws":1,"":2,"ä\"/\\":3,"a\u0001":4}`},
		reject: []string{`{"first-name":"ab","first name":1,"root":null,"string":"x","ws":1,"":2,"ä\"/\\":3,"a\u0001":4}`},
		rules:  []string{"root-first-name", "root-string"},
	},
	{
		name:   "free-form object with bounds",
		schema: `{"type":"object","additionalProperties":{"type":"integer"},"minProperties":1,"maxProperties":2}`,
		accept: []string{`{"a":1}`, `{"a":1,"b":2}`},
		reject: []string{`{}`, `{"a":1,"b":2,"c":3}`, `{"a":"x"}`},
	},
	{
		name:   "required without properties",
		schema: `{"type":"object","required":["id"]}`,
		accept: []string{`{"id":1}`, `{"id":{"x":[]}}`},
		reject: []string{`{}`, `{"id":1,"x":2}`},
	},
	{
		name:   "unique booleans and const",
		schema: `{"type":"array","prefixItems":[{"type":"array","items":{"type":"boolean"},"uniqueItems":true,"minItems":1},{"type":"array","items":{"const":"k"},"uniqueItems":true}],"items":false}`,
		accept: []string{`[[true],[]]`, `[[true,false],["k"]]`, `[[false],["k"]]`},
		reject: []string{`[[],[]]`, `[[true,true],[]]`, `[[false,true],[]]`, `[[true],["k","k"]]`},
	},
	{
		name:   "integer multipleOf one half",
		schema: `{"type":"integer","multipleOf":0.5,"minimum":-2,"maximum":2}`,
		accept: []string{`-2`, `0`, `2`},
		reject: []string{`3`, `1.5`},
	},
	{
		name: "allOf with anyOf on both sides",
		schema: `{"allOf":[{"anyOf":[{"type":"integer","minimum":0},{"type":"string","maxLength":2}]},
			{"anyOf":[{"type":"integer","maximum":5},{"type":"string","minLength":1}]}]}`,
		accept: []string{`0`, `5`, `"a"`, `"ab"`},
		reject: []string{`6`, `-1`, `""`, `"abc"`},
	},
	{
		name: "pydantic style",
		schema: `{"$defs":{"Pet":{"properties":{"name":{"title":"Name","type":"string","maxLength":8},
			"kind":{"enum":["cat","dog"],"title":"Kind","type":"string"}},"required":["name","kind"],"title":"Pet","type":"object"}},
			"properties":{"owner":{"title":"Owner","type":"string","maxLength":8},
			"pets":{"items":{"$ref":"#/$defs/Pet"},"title":"Pets","type":"array","maxItems":3},
			"best":{"anyOf":[{"$ref":"#/$defs/Pet"},{"type":"null"}],"default":null}},
			"required":["owner","pets"],"title":"Owner","type":"object",
			"additionalProperties":false}`,
		accept: []string{`{"owner":"x","pets":[]}`, `{"owner":"x","pets":[{"name":"a","kind":"cat"}],"best":null}`, `{"owner":"","pets":[],"best":{"name":"b","kind":"dog"}}`},
		reject: []string{`{"owner":"x","pets":[{"kind":"cat","name":"a"}]}`, `{"owner":"x","pets":[],"best":{"name":"b"}}`},
	},
	{
		name:   "recursive arrays",
		schema: `{"type":"array","items":{"anyOf":[{"type":"integer","minimum":0,"maximum":9},{"$ref":"#"}]},"maxItems":3}`,
		accept: []string{`[]`, `[1,[2,[]],3]`, `[[[[]]]]`},
		reject: []string{`[1,2,3,4]`, `[[1,2,3,4]]`, `[10]`},
	},
	{
		name:   "parts no value satisfies are left out",
		schema: `{"type":"object","properties":{"a":{"type":"integer"},"x":false,"y":{"allOf":[{"type":"string"},{"type":"null"}]},"z":{"type":"array","items":{"enum":[]},"maxItems":3},"t":{"type":"array","prefixItems":[{"type":"null"},false]}},"additionalProperties":{"type":"string","minLength":3,"maxLength":2}}`,
		accept: []string{`{}`, `{"a":1}`, `{"a":1,"z":[]}`, `{"t":[null]}`},
		reject: []string{`{"x":1}`, `{"y":null}`, `{"z":[1]}`, `{"t":[null,null]}`, `{"b":"abc"}`},
	},
	{
		name: "recursion through allOf (pydantic v1 style)",
		schema: `{"definitions":{"Node":{"type":"object","properties":{"name":{"type":"string","maxLength":3},
			"child":{"title":"Child","description":"d","allOf":[{"$ref":"#/definitions/Node"}]}},"required":["name"]}},
			"$ref":"#/definitions/Node"}`,
		accept: []string{`{"name":"a"}`, `{"name":"a","child":{"name":"b","child":{"name":""}}}`},
		reject: []string{`{"name":"a","child":{}}`},
	},
	{
		name: "recursion through allOf with constraints",
		schema: `{"$defs":{"T":{"type":"object","properties":{"v":{"type":"integer"},
			"kids":{"type":"array","maxItems":2,"items":{"allOf":[{"$ref":"#/$defs/T"}],"required":["v"]}}}}},
			"$ref":"#/$defs/T"}`,
		accept: []string{`{}`, `{"kids":[{"v":1},{"v":2,"kids":[{"v":3}]}]}`},
		reject: []string{`{"kids":[{}]}`, `{"kids":[{"v":1,"kids":[{}]}]}`},
	},
	{
		name:   "empty schema",
		schema: `{}`,
		accept: []string{`1`, `"x"`, `[null,{"a":[]}]`, `{"a":1e5}`, `-0.5E-3`, `true`},
		reject: []string{`01`, `.5`, `[1,]`, `{"a"}`, `tru`},
		rules:  []string{"value", "object", "array", "number"},
	},
	{
		name:   "long strings",
		schema: `{"type":"array","prefixItems":[{"type":"string","maxLength":4500},{"type":"string","minLength":2100,"maxLength":2101}],"items":false}`,
		accept: []string{`["","` + repeatString("x", 2100) + `"]`, `["` + repeatString("y", 4500) + `","` + repeatString("x", 2101) + `"]`},
		reject: []string{`["` + repeatString("y", 4501) + `","` + repeatString("x", 2101) + `"]`, `["","` + repeatString("x", 2099) + `"]`},
	},
}

func repeatString(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

// errorCases are schemas FromSchema refuses, with a part of the message.
var errorCases = []struct{ schema, want string }{
	{`{`, "not valid JSON"},
	{`false`, "schema false"},
	{`[1]`, "must be an object or a boolean"},
	{`{"not":{"type":"null"}}`, `"not"`},
	{`{"if":{"type":"string"},"then":{"maxLength":2}}`, `"if"`},
	{`{"type":"object","patternProperties":{"^x":{}}}`, `"patternProperties"`},
	{`{"type":"object","properties":{"a":{"type":"string","pattern":"(?=a)"}}}`, `property "a": pattern`},
	{`{"type":"string","pattern":"a\\bc"}`, `\b`},
	{`{"type":"string","pattern":"a^b"}`, "^ and $"},
	{`{"type":"string","pattern":"^a$","maxLength":3}`, `"pattern" together with "maxLength"`},
	{`{"type":"object","dependentRequired":{"a":["b"]}}`, `"dependentRequired"`},
	{`{"type":"array","contains":{"type":"null"}}`, `"contains"`},
	{`{"type":"array","items":{"type":"string"},"uniqueItems":true}`, `"uniqueItems"`},
	{`{"type":"array","items":{"enum":[1,2,3]},"uniqueItems":true,"maxItems":2}`, `"uniqueItems"`},
	{`{"type":"number","multipleOf":0.5}`, `"multipleOf"`},
	{`{"type":"integer","multipleOf":2}`, `"multipleOf"`},
	{`{"$ref":"#"}`, "circular"},
	{`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"anyOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, "circular"},
	{`{"$ref":"#/$defs/missing"}`, "not found"},
	{`{"$defs":{"A":{"anyOf":[{"$ref":"#/$defs/A","minLength":1},{"type":"string"}]}},"$ref":"#/$defs/A"}`, "circular"},
	{`{"$defs":{"A":{"anyOf":[{"allOf":[{"$ref":"#/$defs/A"},{"maxLength":3}]},{"type":"string"}]}},"$ref":"#/$defs/A"}`, "circular"},
	{`{"$ref":"https://example.com/s.json"}`, "only references within the schema"},
	{`{"$ref":"#anchor"}`, "anchors are not supported"},
	{`{"type":"strin"}`, `unknown type "strin"`},
	{`{"type":[]}`, "empty array"},
	{`{"enum":[]}`, "no value"},
	{`{"type":"integer","enum":["a"]}`, "no value"},
	{`{"type":"integer","minimum":5,"maximum":4}`, "no number"},
	{`{"type":"integer","minimum":0.2,"maximum":0.8}`, "no number"},
	{`{"type":"string","minLength":5,"maxLength":2}`, "below minLength"},
	{`{"type":"array","minItems":3,"maxItems":2}`, "below minItems"},
	{`{"type":"array","prefixItems":[{}],"items":false,"minItems":2}`, "minItems"},
	{`{"type":"object","properties":{"a":{}},"additionalProperties":false,"required":["b"]}`, `required property "b"`},
	{`{"type":"object","properties":{"a":{},"b":{},"c":{}},"maxProperties":2}`, "maxProperties"},
	{`{"type":"object","additionalProperties":false,"minProperties":1}`, "minProperties"},
	{`{"type":"object","propertyNames":{"maxLength":3}}`, `"propertyNames"`},
	{`{"allOf":[{"type":"string"},{"type":"integer"}]}`, "nothing in common"},
	{`{"allOf":[{"const":1},{"const":2}]}`, "different consts"},
	{`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"not":{}}}}}}`, `property "a": property "b"`},
	{`{"anyOf":[]}`, "non-empty array"},
	{`{"type":"string","minLength":-1}`, "non-negative integer"},
}
