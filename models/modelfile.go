package models

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// The Modelfile commands, as Command.Name holds them (lower case; the
// text may use any case).
const (
	CmdFrom      = "from"
	CmdParameter = "parameter"
	CmdTemplate  = "template"
	CmdSystem    = "system"
	CmdAdapter   = "adapter"
	CmdLicense   = "license"
	CmdMessage   = "message"
	// CmdDraft names a draft model for speculative decoding (a GGUF path
	// or blob digest), as Ollama spells it.
	CmdDraft = "draft"
)

var commandNames = []string{CmdFrom, CmdParameter, CmdTemplate, CmdSystem, CmdAdapter, CmdDraft, CmdLicense, CmdMessage}

// MessageRoles are the roles a MESSAGE may have.
var MessageRoles = []string{"system", "user", "assistant", "tool"}

// Modelfile is a parsed Modelfile: its commands in order.
type Modelfile struct {
	Commands []Command
	// Dir is where relative FROM and ADAPTER paths are resolved (the
	// Modelfile's directory). It is not part of the text; "" means the
	// current directory.
	Dir string
}

// Command is one line (or multi-line value) of a Modelfile.
type Command struct {
	// Name is one of the Cmd* constants.
	Name string
	// Key is the option name of a PARAMETER or the role of a MESSAGE,
	// both lower case, and "" for the other commands.
	Key string
	// Value is the argument, unquoted.
	Value string
}

// Message is one message of a model's conversation history (MESSAGE).
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ParseError is a Modelfile syntax or validation error.
type ParseError struct {
	Line int // 1-based; 0 for errors about the whole file
	Msg  string
}

// Error is "modelfile line N: message".
func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("modelfile line %d: %s", e.Line, e.Msg)
	}
	return "modelfile: " + e.Msg
}

// maxModelfile bounds the size of a Modelfile (templates and licenses
// included) that ParseModelfile reads.
const maxModelfile = 32 << 20

// ParseModelfile parses a Modelfile. Commands are case-insensitive; a
// line whose first non-blank character is '#' is a comment. A value runs
// to the end of its line (blanks around it trimmed) unless it starts with
// `"` or `"""`: a quoted value may span lines and ends at the first
// matching quote that only blanks follow on its line, so quotes inside a
// value need no escaping (there are no escapes). Every PARAMETER must be
// a known option with a value of its type, every MESSAGE role one of
// [MessageRoles], and there must be a FROM. Errors are [*ParseError]s
// with the line number.
func ParseModelfile(r io.Reader) (*Modelfile, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxModelfile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxModelfile {
		return nil, &ParseError{Msg: fmt.Sprintf("larger than %d bytes", maxModelfile)}
	}
	src := string(bytes.TrimPrefix(b, []byte("\ufeff")))
	mf := &Modelfile{}
	line := 1
	for i := 0; i < len(src); {
		i = skipBlanks(src, i)
		if i >= len(src) {
			break
		}
		switch src[i] {
		case '\n':
			i++
			line++
			continue
		case '#':
			i = endOfLine(src, i)
			continue
		}
		start := i
		for i < len(src) && isLetter(src[i]) {
			i++
		}
		word := src[start:i]
		if i < len(src) && !isBlank(src[i]) && src[i] != '\n' || word == "" {
			tok := src[start:tokenEnd(src, start)]
			return nil, &ParseError{line, fmt.Sprintf("invalid command %q (want one of %s)", tok, commandList())}
		}
		cmd := Command{Name: strings.ToLower(word)}
		if !isCommand(cmd.Name) {
			return nil, &ParseError{line, fmt.Sprintf("unknown command %q (want one of %s)", word, commandList())}
		}
		i = skipBlanks(src, i)
		if cmd.Name == CmdParameter || cmd.Name == CmdMessage {
			end := tokenEnd(src, i)
			cmd.Key = strings.ToLower(src[i:end])
			i = skipBlanks(src, end)
			if cmd.Key == "" {
				what := "a parameter name"
				if cmd.Name == CmdMessage {
					what = "a role"
				}
				return nil, &ParseError{line, fmt.Sprintf("%s needs %s and a value", strings.ToUpper(cmd.Name), what)}
			}
		}
		if i >= len(src) || src[i] == '\n' {
			return nil, &ParseError{line, fmt.Sprintf("%s needs a value", cmd.label())}
		}
		val, next, err := parseValue(src, i)
		if err != nil {
			return nil, &ParseError{line, err.Error()}
		}
		cmd.Value = val
		if err := cmd.check(); err != nil {
			return nil, &ParseError{line, err.Error()}
		}
		mf.Commands = append(mf.Commands, cmd)
		line += strings.Count(src[i:next], "\n")
		i = next
	}
	if mf.From() == "" {
		return nil, &ParseError{Msg: "missing FROM line (the model to start from)"}
	}
	return mf, nil
}

// parseValue reads the value that starts at src[i] (not a blank, not a
// newline) and returns it with the index just past its line's newline.
func parseValue(src string, i int) (val string, next int, err error) {
	for _, q := range []string{`"""`, `"`} {
		if !strings.HasPrefix(src[i:], q) {
			continue
		}
		from := i + len(q)
		for k := from; ; k++ {
			off := strings.Index(src[k:], q)
			if off < 0 {
				return "", 0, fmt.Errorf("unterminated %s: no closing %s at the end of a line", q, q)
			}
			k += off
			if rest := skipBlanks(src, k+len(q)); rest >= len(src) || src[rest] == '\n' {
				return src[from:k], lineAfter(src, rest), nil
			}
		}
	}
	end := endOfLine(src, i)
	return strings.TrimRight(src[i:end], " \t\r"), lineAfter(src, end), nil
}

// check validates one command: a known parameter with a value of its
// type, a known message role, a non-empty FROM, ADAPTER or DRAFT.
func (c Command) check() error {
	switch c.Name {
	case CmdFrom, CmdAdapter, CmdDraft:
		if strings.TrimSpace(c.Value) == "" {
			return fmt.Errorf("%s needs a value", c.label())
		}
	case CmdParameter:
		if _, err := ParseOption(c.Key, c.Value); err != nil {
			return err
		}
	case CmdMessage:
		for _, r := range MessageRoles {
			if c.Key == r {
				return nil
			}
		}
		return fmt.Errorf("MESSAGE role %q must be one of %s", c.Key, strings.Join(MessageRoles, ", "))
	case CmdTemplate, CmdSystem, CmdLicense:
	default:
		return fmt.Errorf("unknown command %q (want one of %s)", c.Name, commandList())
	}
	return nil
}

// Validate checks every command as ParseModelfile does, for Modelfiles
// built in code. The error names the offending command.
func (mf *Modelfile) Validate() error {
	for i, c := range mf.Commands {
		if err := c.check(); err != nil {
			return fmt.Errorf("modelfile command %d (%s): %w", i+1, c.label(), err)
		}
	}
	if mf.From() == "" {
		return &ParseError{Msg: "missing FROM line (the model to start from)"}
	}
	return nil
}

// From is the value of the first FROM command, or "".
func (mf *Modelfile) From() string {
	for _, c := range mf.Commands {
		if c.Name == CmdFrom {
			return c.Value
		}
	}
	return ""
}

// String renders the Modelfile as text that ParseModelfile reads back to
// the same commands. Values are written bare when they can be, else in
// "…" or """…""". (A value that holds both a `"` and a `"""` each
// followed only by blanks up to a line break cannot be written in this
// syntax; no parsed value can hold both.)
func (mf *Modelfile) String() string {
	var sb strings.Builder
	for _, c := range mf.Commands {
		sb.WriteString(c.String())
		sb.WriteByte('\n')
	}
	return sb.String()
}

// String renders one command as a Modelfile line.
func (c Command) String() string {
	head := strings.ToUpper(c.Name)
	if c.Key != "" || c.Name == CmdParameter || c.Name == CmdMessage {
		head += " " + c.Key
	}
	return head + " " + quoteValue(c.Value)
}

// quoteValue writes v in the first form that parses back to v: bare,
// then, like Ollama, """v""" before "v" when v holds a quote (Ollama's
// own parser ends a "…" value at a quote followed by a blank).
func quoteValue(v string) string {
	forms := []string{"", `"`, `"""`}
	if strings.Contains(v, `"`) {
		forms = []string{"", `"""`, `"`}
	}
	for _, q := range forms {
		s := q + v + q
		if s == "" || isBlank(s[0]) || s[0] == '\n' {
			continue
		}
		if got, next, err := parseValue(s+"\n", 0); err == nil && got == v && next == len(s)+1 {
			return s
		}
	}
	return `"""` + v + `"""`
}

func (c Command) label() string {
	if c.Name == CmdParameter || c.Name == CmdMessage {
		return strings.ToUpper(c.Name) + " " + c.Key
	}
	return strings.ToUpper(c.Name)
}

func isCommand(s string) bool {
	for _, c := range commandNames {
		if s == c {
			return true
		}
	}
	return false
}

func commandList() string {
	return strings.ToUpper(strings.Join(commandNames, ", "))
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isBlank is the white space inside a line; '\r' counts so that CRLF
// files parse like LF files.
func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

func skipBlanks(s string, i int) int {
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return i
}

// endOfLine is the index of the newline ending the line at i, or len(s).
func endOfLine(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(s)
}

// lineAfter is the index just past the newline at or after i.
func lineAfter(s string, i int) int {
	if e := endOfLine(s, i); e < len(s) {
		return e + 1
	}
	return len(s)
}

// tokenEnd is the end of the run of non-blank characters at i.
func tokenEnd(s string, i int) int {
	for i < len(s) && !isBlank(s[i]) && s[i] != '\n' {
		i++
	}
	return i
}
