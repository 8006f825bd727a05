package dialect

import "testing"

func TestOf(t *testing.T) {
	for path, want := range map[string]Dialect{
		"/":                        Ollama,
		"/api/generate":            Ollama,
		"/api/chat":                Ollama,
		"/api/v1/jobs/x":           Anura,
		"/api/v1/chat/completions": Anura,
		"/v1/chat/completions":     OpenAI,
		"/v1/models/a/b":           OpenAI,
		"/api/chat/completions":    OpenAI,
		"/v1":                      Ollama,
		"/api/v1":                  Ollama,
	} {
		if got := Of(path); got != want {
			t.Errorf("Of(%q) = %s, want %s", path, got, want)
		}
	}
}

func TestBody(t *testing.T) {
	e := Error{Status: 401, Message: "invalid API key", Code: "invalid_api_key"}
	o := e.Body(OpenAI).(OpenAIError)
	if o.Error.Type != "invalid_request_error" || *o.Error.Code != "invalid_api_key" || o.Error.Param != nil {
		t.Errorf("openai %+v", o)
	}
	if a := e.Body(Anura).(AnuraError); a.Status != 401 || a.Error != a.Message {
		t.Errorf("anura %+v", a)
	}
	if m := e.Body(Ollama).(map[string]string); m["error"] != "invalid API key" {
		t.Errorf("ollama %v", m)
	}
	for status, typ := range map[int]string{400: "invalid_request_error", 429: "requests", 500: "server_error", 503: "server_error"} {
		if got := (Error{Status: status}).Body(OpenAI).(OpenAIError).Error.Type; got != typ {
			t.Errorf("type of %d: %s", status, got)
		}
	}
}
