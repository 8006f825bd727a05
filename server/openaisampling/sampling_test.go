package openaisampling

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

func TestParseStop(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want []string
		set  bool
		bad  bool
	}{
		{``, nil, false, false},
		{`null`, nil, false, false},
		{`"x"`, []string{"x"}, true, false},
		{`""`, nil, true, false},
		{`["a","","b"]`, []string{"a", "b"}, true, false},
		{`[1]`, nil, false, true},
		{`{}`, nil, false, true},
	} {
		got, set, err := parseStop(json.RawMessage(tc.raw))
		if (err != nil) != tc.bad || set != tc.set || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: %q %v %v", tc.raw, got, set, err)
		}
	}
}

// logit_bias keys are token ids within engine.Token's range: a larger
// number is refused, never wrapped onto another token.
func TestLogitBiasKeys(t *testing.T) {
	for _, k := range []string{"-1", "x", "2147483648", "288230376151711800", "1e3"} {
		s := Fields{LogitBias: map[string]float64{k: 5}}
		var o ollamaapi.Options
		if err := s.Apply(&o); err == nil {
			t.Errorf("logit_bias key %q accepted", k)
		}
	}
	s := Fields{LogitBias: map[string]float64{"2147483647": -100, "0": 3}}
	var o ollamaapi.Options
	if err := s.Apply(&o); err != nil {
		t.Fatal(err)
	}
	if b := s.Bias(); len(b) != 2 || b[2147483647] != -100 || b[0] != 3 {
		t.Fatalf("bias %v", b)
	}
}
