package rerankapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/server/infer"
)

// Documents are strings or {"text": …} objects; anything else is
// refused with a reason.
func TestDocuments(t *testing.T) {
	var req Request
	if err := json.Unmarshal([]byte(`{"model":"m","query":"q","documents":["a",{"text":"b"}]}`), &req); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(req.Texts(), "|"); got != "a|b" {
		t.Fatalf("texts %q", got)
	}
	for _, bad := range []string{`[1]`, `[{"title":"x"}]`, `[null]`, `[["a"]]`} {
		var r Request
		if err := json.Unmarshal([]byte(`{"documents":`+bad+`}`), &r); err == nil {
			t.Errorf("documents %s accepted", bad)
		}
	}
}

// Check names the field at fault as an infer.ParamError.
func TestCheck(t *testing.T) {
	q, empty, zero := "q", "", 0
	many := make([]Document, MaxDocuments+1)
	for _, tc := range []struct {
		req   Request
		param string
	}{
		{Request{Documents: []Document{{"a"}}}, "query"},
		{Request{Query: &empty, Documents: []Document{{"a"}}}, "query"},
		{Request{Query: &q}, "documents"},
		{Request{Query: &q, Documents: []Document{}}, "documents"},
		{Request{Query: &q, Documents: many}, "documents"},
		{Request{Query: &q, Documents: []Document{{"a"}}, TopN: &zero}, "top_n"},
		{Request{Query: &q, Documents: []Document{{"a"}}}, ""},
	} {
		err := tc.req.Check()
		var pe *infer.ParamError
		if tc.param == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.req, err)
			}
		} else if !errors.As(err, &pe) || pe.Param != tc.param {
			t.Errorf("%+v: %v, want a ParamError about %s", tc.req, err, tc.param)
		}
	}
}

// Results: best first, ties by index, top_n kept, documents when asked,
// the tokens as usage.
func TestResults(t *testing.T) {
	q, top := "q", 2
	req := &Request{Model: "m", Query: &q, Documents: []Document{{"a"}, {"b"}, {"c"}}, TopN: &top, ReturnDocuments: true}
	resp := Results(req, []float32{0.1, 0.7, 0.7}, 42)
	b, _ := json.Marshal(resp)
	want := `{"model":"m","object":"list","results":[{"index":1,"relevance_score":0.699999988079071,"document":{"text":"b"}},{"index":2,"relevance_score":0.699999988079071,"document":{"text":"c"}}],"usage":{"prompt_tokens":42,"total_tokens":42}}`
	if string(b) != want {
		t.Fatalf("\n got %s\nwant %s", b, want)
	}
	req.TopN, req.ReturnDocuments = nil, false
	if resp := Results(req, []float32{0.1, 0.7, 0.3}, 1); len(resp.Results) != 3 || resp.Results[2].Index != 0 || resp.Results[0].Document != nil {
		t.Fatalf("%+v", resp)
	}
}
