package infer

import (
	"encoding/json"
	"strings"
	"testing"
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
