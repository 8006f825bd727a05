package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/tadpole-llm/tadpole/engine"
)

// convConfig is -conversations and its companions (issue 24's returning
// conversation).
type convConfig struct {
	users   int // conversations, each its own history
	history int // tokens of each conversation's history
	turns   int // returning turns measured per user, after the first
	message int // tokens of each new user message
}

// conversation is user u's prompt at turn t: its own history (a prompt
// whose second token is the user's, so no two share more than BOS), then
// t+1 messages of c.message tokens. Turn t's prompt extends turn t-1's:
// what the server cached of it (prompt and answer) shares the prompt's
// part with the next turn.
func conversation(m *engine.Model, c convConfig, u, t int) []engine.Token {
	p := promptTokens(m, c.history)
	p[1] = engine.Token(100 + u%(m.VocabSize()-100))
	for i := 0; i <= t; i++ {
		msg := promptTokens(m, c.message+1)[1:]
		msg[0] = engine.Token(100 + (u*31+i*7)%(m.VocabSize()-100))
		p = append(p, msg...)
	}
	return p
}

// convTurn sends every user's turn t (user after user, each waiting for
// the last) and returns the times to the first token.
func (s *httpServer) convTurn(m *engine.Model, c convConfig, t int) []time.Duration {
	var ds []time.Duration
	for u := range c.users {
		r, err := s.complete(map[string]any{"prompt": conversation(m, c, u, t), "max_tokens": 4, "temperature": 0, "stream": true})
		if err != nil {
			fatal("%s: conversation %d turn %d: %v", s.name, u, t, err)
		}
		ds = append(ds, r.ttft)
	}
	return ds
}

func medianDur(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// convTable measures returning conversations on every server: c.users
// users take turns (one request at a time, round robin) on the servers'
// slots, fewer than the users, so that a slot is always taken by another
// conversation before its own returns. The first turn of each is a cold
// prefill of its history; the later turns find their prefix only in a
// prompt cache (Tadpole's, llama-server's --cache-ram). Tadpole is then
// restarted and every user returns once more: its prefix comes from the
// disk tier.
func convTable(servers []*httpServer, m *engine.Model, c convConfig, slots int) {
	fmt.Printf("\nReturning conversations: %d users, a %d-token history each, %d slots; user after user, %d returning turn(s) each adding a %d-token message; /v1/completions, streamed, 4 tokens; median time to first token\n\n",
		c.users, c.history, slots, c.turns, c.message)
	fmt.Println("| server | cold prefill (turn 1) s | returning turns s | returning/cold | after a restart s | restart/cold |")
	fmt.Println("|---|---|---|---|---|---|")
	var tadpoleWarm time.Duration
	var peerWarm time.Duration
	for _, s := range servers {
		cold := medianDur(s.convTurn(m, c, 0))
		var warm []time.Duration
		for t := 1; t <= c.turns; t++ {
			warm = append(warm, s.convTurn(m, c, t)...)
		}
		w := medianDur(warm)
		row := fmt.Sprintf("| %s | %.3f | %.3f | %.3f |", s.name, cold.Seconds(), w.Seconds(), w.Seconds()/cold.Seconds())
		if s.metrics { // Tadpole: restart, then once more
			tadpoleWarm = w
			s.restart()
			r := medianDur(s.convTurn(m, c, c.turns+1))
			row += fmt.Sprintf(" %.3f | %.3f |", r.Seconds(), r.Seconds()/cold.Seconds())
		} else {
			peerWarm = w
			row += " — | — |"
		}
		fmt.Println(row)
	}
	if tadpoleWarm > 0 && peerWarm > 0 {
		fmt.Printf("\nreturning turns, Tadpole / llama-server: %.3f\n", tadpoleWarm.Seconds()/peerWarm.Seconds())
	}
}
