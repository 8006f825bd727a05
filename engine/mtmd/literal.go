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
	// A client's text may hold the markers: inside the literal spans they
	// are text, outside they stand for the media.
	if len(legacyMarker) == len(Marker()) {
		b := []byte(text)
		for _, i := range markersOutside(text, legacyMarker, literal) {
			copy(b[i:], Marker())
		}
		text = string(b)
	} else if len(markersOutside(text, legacyMarker, literal)) > 0 {
		return nil, errors.New("tokenize: the text holds mtmd's old marker") // spans would move
	}
	if n := len(markersOutside(text, Marker(), literal)); n != len(media) {
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

// markersOutside are the offsets of marker in text outside the spans.
func markersOutside(text, marker string, spans [][2]int) []int {
	var out []int
	for at := 0; ; {
		i := strings.Index(text[at:], marker)
		if i < 0 {
			return out
		}
		i += at
		inside := false
		for _, s := range spans {
			if i < s[1] && i+len(marker) > s[0] {
				inside = true
				break
			}
		}
		if !inside {
			out = append(out, i)
		}
		at = i + len(marker)
	}
}

// splitMarkers is text split at its media markers outside the spans, with
// the offset of each part.
func splitMarkers(text string, spans [][2]int) (parts []string, starts []int) {
	at := 0
	for _, i := range markersOutside(text, Marker(), spans) {
		parts, starts = append(parts, text[at:i]), append(starts, at)
		at = i + len(Marker())
	}
	return append(parts, text[at:]), append(starts, at)
}
