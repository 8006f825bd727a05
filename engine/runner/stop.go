package runner

import "strings"

// stopMatcher holds back generated text that could be the start of a stop
// string, so that nothing from a stop string on is ever emitted.
type stopMatcher struct {
	stops []string
	held  string
}

// push adds text and returns what can be emitted now; hit reports that a
// stop string was found (the output ends just before it).
func (m *stopMatcher) push(text string) (out string, hit bool) {
	m.held += text
	if len(m.stops) == 0 {
		out, m.held = m.held, ""
		return out, false
	}
	first := -1
	for _, s := range m.stops {
		if i := strings.Index(m.held, s); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if first >= 0 {
		out, m.held = m.held[:first], ""
		return out, true
	}
	keep := 0
	for _, s := range m.stops {
		if k := partialSuffix(m.held, s); k > keep {
			keep = k
		}
	}
	cut := len(m.held) - keep
	out, m.held = m.held[:cut], m.held[cut:]
	return out, false
}

// flush returns the held-back text at the end of generation.
func (m *stopMatcher) flush() string {
	out := m.held
	m.held = ""
	return out
}

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of stop.
func partialSuffix(s, stop string) int {
	n := len(stop) - 1
	if n > len(s) {
		n = len(s)
	}
	for k := n; k > 0; k-- {
		if strings.HasSuffix(s, stop[:k]) {
			return k
		}
	}
	return 0
}
