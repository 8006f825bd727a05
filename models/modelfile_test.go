package models

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func parseString(s string) (*Modelfile, error) { return ParseModelfile(strings.NewReader(s)) }

func TestParseModelfile(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Command
	}{
		{"minimal", "FROM llama3\n", []Command{{Name: CmdFrom, Value: "llama3"}}},
		{"no final newline", "FROM llama3", []Command{{Name: CmdFrom, Value: "llama3"}}},
		{"case-insensitive commands", "from ./m.gguf\nSyStEm be brief\nparameter TEMPERATURE 0.5\n", []Command{
			{Name: CmdFrom, Value: "./m.gguf"},
			{Name: CmdSystem, Value: "be brief"},
			{Name: CmdParameter, Key: "temperature", Value: "0.5"},
		}},
		{"comments and blank lines", "# a comment\n\n   # indented comment\nFROM x\n\t\n# end", []Command{{Name: CmdFrom, Value: "x"}}},
		{"bare value trimmed, inner spaces kept", "FROM x\nSYSTEM   You are   a pirate.  \t\n", []Command{
			{Name: CmdFrom, Value: "x"},
			{Name: CmdSystem, Value: "You are   a pirate."},
		}},
		{"CRLF", "FROM x\r\nSYSTEM hi\r\nPARAMETER stop \"</s>\"\r\n", []Command{
			{Name: CmdFrom, Value: "x"},
			{Name: CmdSystem, Value: "hi"},
			{Name: CmdParameter, Key: "stop", Value: "</s>"},
		}},
		{"BOM", "\ufeffFROM x\n", []Command{{Name: CmdFrom, Value: "x"}}},
		{"quoted", `FROM "/path with spaces/m.gguf"` + "\n" + `SYSTEM " padded "` + "\n", []Command{
			{Name: CmdFrom, Value: "/path with spaces/m.gguf"},
			{Name: CmdSystem, Value: " padded "},
		}},
		{"empty quoted", "FROM x\nSYSTEM \"\"\nTEMPLATE \"\"\"\"\"\"\n", []Command{
			{Name: CmdFrom, Value: "x"},
			{Name: CmdSystem, Value: ""},
			{Name: CmdTemplate, Value: ""},
		}},
		{"triple quotes span lines", "FROM x\nTEMPLATE \"\"\"{{ if .System }}<|system|>\n{{ .System }}{{ end }}\n<|user|>\n{{ .Prompt }}\"\"\"\nSYSTEM y\n", []Command{
			{Name: CmdFrom, Value: "x"},
			{Name: CmdTemplate, Value: "{{ if .System }}<|system|>\n{{ .System }}{{ end }}\n<|user|>\n{{ .Prompt }}"},
			{Name: CmdSystem, Value: "y"},
		}},
		{"triple quotes keep inner quotes and newlines", "FROM x\nSYSTEM \"\"\"\nSay \"hi\" to \"\"\"people\"\"\" now\n\"\"\"\n", []Command{
			{Name: CmdFrom, Value: "x"},
			{Name: CmdSystem, Value: "\nSay \"hi\" to \"\"\"people\"\"\" now\n"},
		}},
		{"single quotes span lines", "FROM x\nSYSTEM \"line one\nline two\"\n", []Command{
			{Name: CmdFrom, Value: "x"},
			{Name: CmdSystem, Value: "line one\nline two"},
		}},
		{"value ending in a quote", "FROM x\nSYSTEM \"\"\"say \"hi\"\"\"\"\n", []Command{
			{Name: CmdFrom, Value: "x"},
			{Name: CmdSystem, Value: `say "hi"`},
		}},
		{"bare value with quotes inside", "FROM x\nSYSTEM say \"hi\"\n", []Command{
			{Name: CmdFrom, Value: "x"},
			{Name: CmdSystem, Value: `say "hi"`},
		}},
		{"parameters", "FROM x\nPARAMETER num_ctx 4096\nPARAMETER stop <|im_end|>\nPARAMETER stop \"User:\"\nPARAMETER use_mmap false\n", []Command{
			{Name: CmdFrom, Value: "x"},
			{Name: CmdParameter, Key: "num_ctx", Value: "4096"},
			{Name: CmdParameter, Key: "stop", Value: "<|im_end|>"},
			{Name: CmdParameter, Key: "stop", Value: "User:"},
			{Name: CmdParameter, Key: "use_mmap", Value: "false"},
		}},
		{"messages", "FROM x\nMESSAGE user Is Toronto in Canada?\nMESSAGE Assistant yes\nMESSAGE system \"\"\"multi\nline\"\"\"\nMESSAGE tool {\"temp\": 20}\n", []Command{
			{Name: CmdFrom, Value: "x"},
			{Name: CmdMessage, Key: "user", Value: "Is Toronto in Canada?"},
			{Name: CmdMessage, Key: "assistant", Value: "yes"},
			{Name: CmdMessage, Key: "system", Value: "multi\nline"},
			{Name: CmdMessage, Key: "tool", Value: `{"temp": 20}`},
		}},
		{"all commands", "FROM a\nFROM b\nADAPTER ./lora.gguf\nLICENSE MIT\nLICENSE \"\"\"Apache\n2.0\"\"\"\n", []Command{
			{Name: CmdFrom, Value: "a"},
			{Name: CmdFrom, Value: "b"},
			{Name: CmdAdapter, Value: "./lora.gguf"},
			{Name: CmdLicense, Value: "MIT"},
			{Name: CmdLicense, Value: "Apache\n2.0"},
		}},
		{"hash inside a value", "FROM x\nSYSTEM use # for comments\n", []Command{
			{Name: CmdFrom, Value: "x"},
			{Name: CmdSystem, Value: "use # for comments"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mf, err := parseString(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(mf.Commands, tt.want) {
				t.Fatalf("got  %q\nwant %q", mf.Commands, tt.want)
			}
			assertRoundTrip(t, mf)
		})
	}
}

// assertRoundTrip checks that the text of mf parses back to mf.
func assertRoundTrip(t *testing.T, mf *Modelfile) {
	t.Helper()
	text := mf.String()
	again, err := parseString(text)
	if err != nil {
		t.Fatalf("String() does not parse: %v\n%s", err, text)
	}
	if !reflect.DeepEqual(again.Commands, mf.Commands) {
		t.Fatalf("round trip changed the commands:\n%s\ngot  %q\nwant %q", text, again.Commands, mf.Commands)
	}
}

func TestParseModelfileErrors(t *testing.T) {
	tests := []struct {
		in   string
		line int
		msg  string
	}{
		{"", 0, "missing FROM"},
		{"# only a comment\nSYSTEM hi\n", 0, "missing FROM"},
		{"FROM x\nFORM y\n", 2, `unknown command "FORM"`},
		{"FROM x\n\n\nRUN echo\n", 4, `unknown command "RUN"`},
		{"FROM x\nSYSTEM: hi\n", 2, `invalid command "SYSTEM:"`},
		{"FROM x\n42 things\n", 2, `invalid command "42"`},
		{"FROM\n", 1, "FROM needs a value"},
		{"FROM x\nSYSTEM", 2, "SYSTEM needs a value"},
		{"FROM \"\"\n", 1, "FROM needs a value"},
		{"FROM x\nPARAMETER\n", 2, "PARAMETER needs a parameter name and a value"},
		{"FROM x\nPARAMETER temperature\n", 2, "PARAMETER temperature needs a value"},
		{"FROM x\nPARAMETER temprature 0.5\n", 2, `unknown parameter "temprature"`},
		{"FROM x\nPARAMETER temperature hot\n", 2, `parameter temperature: "hot" is not a number`},
		{"FROM x\nPARAMETER num_ctx 4k\n", 2, `parameter num_ctx: "4k" is not an integer`},
		{"FROM x\nPARAMETER num_ctx 1.5\n", 2, `parameter num_ctx: "1.5" is not an integer`},
		{"FROM x\nPARAMETER use_mmap maybe\n", 2, `parameter use_mmap: "maybe" is not a boolean`},
		{"FROM x\nMESSAGE bot hi\n", 2, `MESSAGE role "bot" must be one of system, user, assistant, tool`},
		{"FROM x\nMESSAGE user\n", 2, "MESSAGE user needs a value"},
		{"FROM x\nTEMPLATE \"\"\"{{ .Prompt }}\n\nSYSTEM hi\n", 2, `unterminated """`},
		{"FROM x\nSYSTEM \"hi\" there\n", 2, `unterminated "`},
		{"FROM x\nSYSTEM \"\"\"a\"\"\" b\n", 2, `unterminated """`},
	}
	for _, tt := range tests {
		_, err := parseString(tt.in)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v, want a *ParseError", tt.in, err)
			continue
		}
		if pe.Line != tt.line || !strings.Contains(pe.Msg, tt.msg) {
			t.Errorf("%q: got line %d %q, want line %d containing %q", tt.in, pe.Line, pe.Msg, tt.line, tt.msg)
		}
		if tt.line > 0 && !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: %q does not name the line", tt.in, err)
		}
	}
}

func TestModelfileStringQuoting(t *testing.T) {
	values := []string{
		"plain", "two words", " leading", "trailing ", "", "\"starts with a quote",
		"ends with a quote\"", "multi\nline", "multi\nline with \"quotes\"",
		"\"\"\"", "a\"\"\"b", "\nleading newline\n", "tab\tinside", "cr\rinside", "trailing cr\r",
		"quote then newline\"\nnext", "quote then blanks\" \t\nnext", "\"", "\"\"", "#hash",
		"triple then text\"\"\"x\nnext",
	}
	for _, v := range values {
		mf := &Modelfile{Commands: []Command{{Name: CmdFrom, Value: "x"}, {Name: CmdSystem, Value: v}, {Name: CmdMessage, Key: "user", Value: v}}}
		assertRoundTrip(t, mf)
	}
	mf := &Modelfile{Commands: []Command{
		{Name: CmdFrom, Value: "/models/blobs/sha256-abc"},
		{Name: CmdTemplate, Value: "{{ .Prompt }}"},
		{Name: CmdSystem, Value: "You are \"Mario\".\nStay in character."},
		{Name: CmdParameter, Key: "stop", Value: "<|im_end|>"},
		{Name: CmdMessage, Key: "user", Value: "hi"},
	}}
	want := "FROM /models/blobs/sha256-abc\n" +
		"TEMPLATE {{ .Prompt }}\n" +
		"SYSTEM \"\"\"You are \"Mario\".\nStay in character.\"\"\"\n" +
		"PARAMETER stop <|im_end|>\n" +
		"MESSAGE user hi\n"
	if got := mf.String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
}

func TestModelfileValidate(t *testing.T) {
	tests := []struct {
		cmds []Command
		err  string
	}{
		{[]Command{{Name: CmdFrom, Value: "x"}}, ""},
		{[]Command{{Name: CmdSystem, Value: "x"}}, "missing FROM"},
		{[]Command{{Name: CmdFrom, Value: "x"}, {Name: "run", Value: "x"}}, `unknown command "run"`},
		{[]Command{{Name: CmdFrom, Value: "x"}, {Name: CmdParameter, Key: "bogus", Value: "1"}}, `unknown parameter "bogus"`},
		{[]Command{{Name: CmdFrom, Value: "x"}, {Name: CmdMessage, Key: "robot", Value: "1"}}, `role "robot"`},
	}
	for _, tt := range tests {
		err := (&Modelfile{Commands: tt.cmds}).Validate()
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Validate(%q) = %v, want %q", tt.cmds, err, tt.err)
		}
	}
}

func FuzzParseModelfile(f *testing.F) {
	seeds := []string{
		"FROM llama3\nPARAMETER temperature 0.7\nSYSTEM \"\"\"hi\nthere\"\"\"\n",
		"from x\nmessage user \"a\"\nMESSAGE assistant b\nLICENSE \"\"\"MIT\"\"\"\n",
		"FROM x\nTEMPLATE \"\"\"{{ .Prompt }}\"\"\"\"\nPARAMETER stop \"\n\"",
		"# c\r\nFROM \"a b\"\r\nADAPTER @sha256:00\r\n",
		"FROM x\nSYSTEM \"\"\"\"\"\"\"\"\n",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mf, err := parseString(s)
		if err != nil {
			return
		}
		assertRoundTrip(t, mf)
	})
}
