package main

import (
	"io"
	"strings"
)

// textWriter receives an answer piece by piece.
type textWriter interface {
	WriteString(s string)
	// Flush writes what is held back.
	Flush()
}

// plainWriter writes pieces as they come.
type plainWriter struct{ w io.Writer }

func (p plainWriter) WriteString(s string) { _, _ = io.WriteString(p.w, s) }
func (p plainWriter) Flush()               {}

// wordWrapper writes streamed text, breaking lines at spaces so that a
// line is at most width characters wide. A word is held back until its
// end is known; a word wider than the line is written as it is.
type wordWrapper struct {
	w     io.Writer
	width int

	col          int             // characters on the current line
	word         strings.Builder // the word being received
	wordLen      int
	pendingSpace bool // a space between the line and the word
}

func (ww *wordWrapper) WriteString(s string) {
	if ww.width <= 0 {
		_, _ = io.WriteString(ww.w, s)
		return
	}
	for _, r := range s {
		switch r {
		case '\n':
			ww.flushWord()
			ww.pendingSpace = false
			ww.write("\n")
			ww.col = 0
		case ' ':
			ww.flushWord()
			if ww.pendingSpace {
				ww.write(" ")
				ww.col++
			}
			ww.pendingSpace = true
		default:
			ww.word.WriteRune(r)
			ww.wordLen++
		}
	}
}

// flushWord writes the held word, on a new line when it does not fit.
func (ww *wordWrapper) flushWord() {
	if ww.wordLen == 0 {
		return
	}
	need := ww.wordLen
	if ww.pendingSpace {
		need++
	}
	if ww.col > 0 && ww.col+need > ww.width {
		ww.write("\n")
		ww.col, ww.pendingSpace = 0, false
	}
	if ww.pendingSpace {
		ww.write(" ")
		ww.col++
		ww.pendingSpace = false
	}
	ww.write(ww.word.String())
	ww.col += ww.wordLen
	ww.word.Reset()
	ww.wordLen = 0
}

func (ww *wordWrapper) Flush() {
	ww.flushWord()
	if ww.pendingSpace {
		ww.write(" ")
		ww.col++
		ww.pendingSpace = false
	}
}

func (ww *wordWrapper) write(s string) { _, _ = io.WriteString(ww.w, s) }
