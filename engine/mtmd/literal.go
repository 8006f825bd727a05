package mtmd

import (
	"errors"
	"fmt"
	"strings"
)

// TokenizeLiteral is Tokenize with special parsing on, except inside the
// spans of text given (sorted, not overlapping; client text holding a
// control token's text, see engine.Model.TokenizeLiteral): the text parts
// are tokenized by the model, part by part as mtmd does, and the media by
// mtmd.
func (p *Projector) TokenizeLiteral(text string, media []*Media, addSpecial bool, literal [][2]int) ([]Chunk, error) {
	if len(literal) == 0 {
		return p.Tokenize(text, media, addSpecial, true)
	}
	if len(text) > MaxTextBytes {
		return nil, fmt.Errorf("tokenize: text of %d bytes is too long (at most %d)", len(text), MaxTextBytes)
	}
	if strings.IndexByte(text, 0) >= 0 {
		return nil, errors.New("tokenize: the text holds a NUL byte")
	}
	if len(legacyMarker) != len(Marker()) && strings.Contains(text, legacyMarker) {
		return nil, errors.New("tokenize: the text holds mtmd's old marker") // spans would move
	}
	text = strings.ReplaceAll(text, legacyMarker, Marker())
	if n := strings.Count(text, Marker()); n != len(media) {
		return nil, fmt.Errorf("tokenize: the text has %d media markers for %d media items", n, len(media))
	}
	return p.tokenizeParts(text, media, addSpecial, true, literal)
}

// within is the spans inside [from, to), shifted to start at from.
func within(spans [][2]int, from, to int) [][2]int {
	var out [][2]int
	for _, s := range spans {
		if s[0] >= from && s[1] <= to {
			out = append(out, [2]int{s[0] - from, s[1] - from})
		}
	}
	return out
}
