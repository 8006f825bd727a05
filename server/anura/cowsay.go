package anura

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// cowsayWidth is cowsay's default -W 40: Text::Wrap with 40 columns,
// whose lines hold at most 39 characters.
const cowsayWidth = 40

// cow is cowsay's default cow, speaking (\).
const cow = `        \   ^__^
         \  (oo)\_______
            (__)\       )\/\
                ||----w |
                ||     ||
`

var (
	paragraphBreak = regexp.MustCompile(`\n\s+`)
	spaces         = regexp.MustCompile(`\s+`)
)

// Cowsay renders message the way the classic cowsay does: the text
// filled to 40 columns (runs of white space become one space; a line
// break followed by white space starts a new paragraph, set off by an
// empty line), in a balloon (< > around one line; / \ | around several),
// then the cow.
func Cowsay(message string) string {
	lines := fill(message, cowsayWidth-1)
	width := 0
	for _, l := range lines {
		width = max(width, utf8.RuneCountInString(l))
	}
	var b strings.Builder
	b.WriteString(" " + strings.Repeat("_", width+2) + "\n")
	row := func(left, text, right string) {
		b.WriteString(left + " " + text + strings.Repeat(" ", width-utf8.RuneCountInString(text)) + " " + right + "\n")
	}
	if len(lines) == 1 {
		row("<", lines[0], ">")
	} else {
		for i, l := range lines {
			switch i {
			case 0:
				row("/", l, `\`)
			case len(lines) - 1:
				row(`\`, l, "/")
			default:
				row("|", l, "|")
			}
		}
	}
	b.WriteString(" " + strings.Repeat("-", width+2) + "\n")
	b.WriteString(cow)
	return b.String()
}

// fill is Perl's Text::Wrap::fill("", "", text) split into lines, as
// cowsay uses it: paragraphs (split at a line break followed by white
// space) have their white space runs made single spaces, are wrapped to
// lines of at most width characters and are separated by an empty line;
// trailing empty lines are dropped.
func fill(text string, width int) []string {
	var out []string
	for i, para := range paragraphBreak.Split(text, -1) {
		if i > 0 {
			out = append(out, "")
		}
		out = append(out, wrap([]rune(spaces.ReplaceAllString(para, " ")), width)...)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// wrap is Text::Wrap::wrap on one paragraph: each line is the longest
// run of at most width characters that the end of the text or a space
// follows (the space is dropped), or, when there is none, the next width
// characters of a long word. A space that ends the paragraph stays.
func wrap(t []rune, width int) []string {
	var lines []string
	pos, rest := 0, ""
	onlySpaces := func(r []rune) bool {
		for _, c := range r {
			if c != ' ' {
				return false
			}
		}
		return true
	}
	for !onlySpaces(t[pos:]) {
		k := min(width, len(t)-pos)
		for ; k >= 0; k-- {
			if pos+k == len(t) || t[pos+k] == ' ' {
				break
			}
		}
		if k >= 0 {
			lines = append(lines, string(t[pos:pos+k]))
			pos += k
			rest = ""
			if pos < len(t) {
				rest = " "
				pos++
			}
			continue
		}
		lines = append(lines, string(t[pos:pos+width]))
		pos += width
		rest = ""
	}
	if len(lines) == 0 {
		return []string{rest + string(t[pos:])}
	}
	lines[len(lines)-1] += rest + string(t[pos:])
	return lines
}
