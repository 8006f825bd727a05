package dialect

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

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

// One error, written in each dialect's shape: the bytes clients see, and
// Retry-After from the error unless a rate limit already set one.
func TestWriteAs(t *testing.T) {
	e := echo.New()
	for _, tc := range []struct {
		d      Dialect
		err    *Error
		preset string
		body   string
		retry  string
	}{
		{Ollama, Unavailable("busy"), "", `{"error":"busy"}`, "5"},
		{OpenAI, Unavailable("busy"), "", `{"error":{"message":"busy","type":"server_error","param":null,"code":null}}`, "5"},
		{Anura, Unavailable("busy"), "", `{"error":"busy","message":"busy","status":503}`, "5"},
		{OpenAI, &Error{Status: 400, Message: "bad n", Param: "n", Code: "unsupported_value"}, "", `{"error":{"message":"bad n","type":"invalid_request_error","param":"n","code":"unsupported_value"}}`, ""},
		{OpenAI, &Error{Status: 429, Message: "slow down", RetryAfter: RetryAfterSeconds}, "7", `{"error":{"message":"slow down","type":"requests","param":null,"code":null}}`, "7"},
	} {
		rec := httptest.NewRecorder()
		c := e.NewContext(httptest.NewRequest(http.MethodPost, "/", nil), rec)
		if tc.preset != "" {
			rec.Header().Set("Retry-After", tc.preset)
		}
		if err := WriteAs(c, tc.d, *tc.err); err != nil {
			t.Fatal(err)
		}
		if rec.Code != tc.err.Status || strings.TrimSpace(rec.Body.String()) != tc.body || rec.Header().Get("Retry-After") != tc.retry {
			t.Errorf("%s %+v: %d %s Retry-After %q, want %s %q", tc.d, tc.err, rec.Code, rec.Body, rec.Header().Get("Retry-After"), tc.body, tc.retry)
		}
	}
}

func TestFrom(t *testing.T) {
	cause := errors.New("disk full")
	for _, tc := range []struct {
		err    error
		status int
		msg    string
	}{
		{fmt.Errorf("wrapped: %w", Errorf(404, "model %q not found", "x")), 404, `model "x" not found`},
		{echo.NewHTTPError(413, "Request Entity Too Large"), 413, "Request Entity Too Large"},
		{cause, 500, "disk full"},
	} {
		if got := From(tc.err); got.Status != tc.status || got.Message != tc.msg || got.Error() != tc.msg {
			t.Errorf("From(%v) = %+v", tc.err, got)
		}
	}
	if !errors.Is(&Error{Status: 500, Message: "x", Err: cause}, cause) {
		t.Error("the cause is lost")
	}
}
