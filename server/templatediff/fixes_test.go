package templatediff_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// writeTemplated writes the bigram model with template tmpl as
// dir/name.gguf.
func writeTemplated(t *testing.T, dir, name, tmpl string) {
	t.Helper()
	kvs, tensors := testmodels.Bigram()
	for i := range kvs {
		if kvs[i].Key == "tokenizer.chat_template" {
			kvs[i].Value = tmpl
		}
	}
	if err := gguf.WriteFile(filepath.Join(dir, name+".gguf"), kvs, tensors); err != nil {
		t.Fatal(err)
	}
}

// The fixes the differential led to, each on its own, without
// llama-server: a template error is the client's 400 naming the
// template's message (never a 500), an assistant turn's
// reasoning_content reaches the template, and the date variables
// llama-server passes (date_string, datetime) are set.
func TestApplyTemplateFixes(t *testing.T) {
	dir := t.TempDir()
	writeTemplated(t, dir, "raises", `{% for m in messages %}{% if 'Hi' in m.content %}{{ raise_exception('No greetings') }}{% endif %}{{ m.content }}{% endfor %}`)
	writeTemplated(t, dir, "nosystem", `{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}<{{ m.role }}>{{ m.content }}{% endfor %}`)
	writeTemplated(t, dir, "broken", `{% for m in messages %}{{ m.content `)
	writeTemplated(t, dir, "reasons", `{% for m in messages %}[{{ m.role }}|{{ m.reasoning_content | default('-') }}|{{ m.content }}]{% endfor %}`)
	writeTemplated(t, dir, "dated", `{{ date_string }}/{{ datetime }}/{{ strftime_now('%d %b %Y') }}`)
	writeTemplated(t, dir, "vars", `{{ enable_thinking }}|{{ preserve_reasoning }}|{{ clear_thinking }}|{{ tools | tojson }}`)
	writeTemplated(t, dir, "thinkvars", `{{ enable_thinking }}|{{ preserve_reasoning }}|{{ clear_thinking }}|<think>`)
	writeTemplated(t, dir, "strargs", `{% for m in messages %}{% for c in m.tool_calls or [] %}{{ '>>>' + c.function.name + '\n' + c.function.arguments }}{% endfor %}{% endfor %}`)
	tp := startTadpole(t, dir)

	code, _, msg := applyTemplate(t, tp, `{"model": "raises", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}]}`)
	if code != 400 || !strings.Contains(msg, "No greetings") || !strings.Contains(msg, `"raises"`) {
		t.Errorf("raising template: %d %q, want a 400 naming the model and the template's message", code, msg)
	}
	code, _, msg = applyTemplate(t, tp, `{"model": "broken", "messages": [{"role": "user", "content": "Hi"}]}`)
	if code != 400 || !strings.Contains(msg, "chat template") {
		t.Errorf("unparsable template: %d %q, want a 400 about the chat template", code, msg)
	}
	// The same on a generation: 400, not 500.
	code, _, msg = post(t, tp+"/v1/chat/completions", `{"model": "raises", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}]}`)
	if code != 400 || !strings.Contains(msg, "No greetings") {
		t.Errorf("raising template on /v1/chat/completions: %d %q, want 400", code, msg)
	}

	// A template without a system role (Gemma 2's raises on one): the
	// system prompt joins the first turn, as llama-server merges it.
	code, prompt, msg := applyTemplate(t, tp, `{"model": "nosystem", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}]}`)
	if want := "<user>S\nQ"; code != 200 || prompt != want {
		t.Errorf("system prompt on a template without one: %d %q %s, want %q", code, prompt, msg, want)
	}

	code, prompt, msg = applyTemplate(t, tp, `{"model": "reasons", "messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "4", "reasoning_content": "2+2 is 4."}, {"role": "user", "content": "R"}]}`)
	if want := "[user|-|Q][assistant|2+2 is 4.|4][user|-|R]"; code != 200 || prompt != want {
		t.Errorf("reasoning_content: %d %q %s, want %q", code, prompt, msg, want)
	}

	// The variables llama-server defines: enable_thinking (true on a
	// template that knows thinking, as this one does by naming it),
	// preserve_reasoning and its aliases; tools as llama-server passes
	// them (type, name, description, parameters; no "strict").
	tools := `"tools": [{"type": "function", "function": {"name": "f", "strict": true, "parameters": {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}}}, {"type": "function", "function": {"name": "g", "description": "G"}}]`
	code, prompt, msg = applyTemplate(t, tp, `{"model": "vars", `+tools+`, "messages": [{"role": "user", "content": "Q"}]}`)
	if want := `True|True|False|[{"type": "function", "function": {"name": "f", "description": "", "parameters": {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}}}, {"type": "function", "function": {"name": "g", "description": "G", "parameters": {}}}]`; code != 200 || prompt != want {
		t.Errorf("template variables: %d %s\n got %q\nwant %q", code, msg, prompt, want)
	}
	code, prompt, msg = applyTemplate(t, tp, `{"model": "thinkvars", "chat_template_kwargs": {"preserve_reasoning": false}, "messages": [{"role": "user", "content": "Q"}]}`)
	if want := `True|False|True|<think>`; code != 200 || prompt != want {
		t.Errorf("template variables of a thinking template: %d %s %q, want %q", code, msg, prompt, want)
	}

	// A template that adds a call's arguments to a string gets their
	// JSON text, as llama-server passes them to it.
	code, prompt, msg = applyTemplate(t, tp, `{"model": "strargs", "messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}]}`)
	if want := ">>>f\n{\"a\": 1}"; code != 200 || prompt != want {
		t.Errorf("arguments added to a string: %d %s %q, want %q", code, msg, prompt, want)
	}

	before := time.Now()
	code, prompt, msg = applyTemplate(t, tp, `{"model": "dated", "messages": [{"role": "user", "content": "Q"}]}`)
	after := time.Now()
	ok := false
	for _, now := range []time.Time{before, after} {
		d := now.Format("02 Jan 2006")
		ok = ok || prompt == d+"/"+now.Format("Jan 02 2006")+"/"+d
	}
	if code != 200 || !ok {
		t.Errorf("date variables: %d %q %s, want today as date_string, datetime and strftime_now", code, prompt, msg)
	}
	// A client's own date_string wins.
	code, prompt, _ = applyTemplate(t, tp, `{"model": "dated", "chat_template_kwargs": {"date_string": "26 Jul 2024"}, "messages": [{"role": "user", "content": "Q"}]}`)
	if code != 200 || !strings.HasPrefix(prompt, "26 Jul 2024/") {
		t.Errorf("date_string from chat_template_kwargs: %d %q", code, prompt)
	}
}
