package models

import (
	"strings"
	"testing"
)

func TestParseName(t *testing.T) {
	tests := []struct {
		in      string
		want    Name
		display string
	}{
		{"llama3", Name{DefaultHost, DefaultNamespace, "llama3", "latest"}, "llama3:latest"},
		{"llama3:8b", Name{DefaultHost, DefaultNamespace, "llama3", "8b"}, "llama3:8b"},
		{" stories ", Name{DefaultHost, DefaultNamespace, "stories", "latest"}, "stories:latest"},
		{"someone/model", Name{DefaultHost, "someone", "model", "latest"}, "someone/model:latest"},
		{"library/llama3:latest", Name{DefaultHost, DefaultNamespace, "llama3", "latest"}, "llama3:latest"},
		{"registry.ollama.ai/library/llama3", Name{DefaultHost, DefaultNamespace, "llama3", "latest"}, "llama3:latest"},
		{"hf.co/someone/model:Q4_0", Name{"hf.co", "someone", "model", "Q4_0"}, "hf.co/someone/model:Q4_0"},
		{"hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M", Name{"hf.co", "bartowski", "Llama-3.2-1B-Instruct-GGUF", "Q4_K_M"}, "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M"},
		{"localhost:5000/ns/m", Name{"localhost:5000", "ns", "m", "latest"}, "localhost:5000/ns/m:latest"},
		{"127.0.0.1:8080/ns/m:v1.2", Name{"127.0.0.1:8080", "ns", "m", "v1.2"}, "127.0.0.1:8080/ns/m:v1.2"},
		{"a..b:c..d", Name{DefaultHost, DefaultNamespace, "a..b", "c..d"}, "a..b:c..d"},
	}
	for _, tt := range tests {
		got, err := ParseName(tt.in)
		if err != nil {
			t.Errorf("ParseName(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseName(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if s := got.String(); s != tt.display {
			t.Errorf("ParseName(%q).String() = %q, want %q", tt.in, s, tt.display)
		}
		// The display form parses back to the same name.
		if again, err := ParseName(got.String()); err != nil || again != got {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v", got.String(), again, err, got)
		}
		if again, err := ParseName(got.Full()); err != nil || again != got {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v", got.Full(), again, err, got)
		}
	}
}

func TestParseNameRejects(t *testing.T) {
	bad := []string{
		"", "   ", "../../etc/passwd", "..", ".", "./x", "x/..", "../x:latest",
		"a/b/c/d", "/abs", "x/", "/x", "x:", "x:../y", "x:.hidden", ".hidden",
		"x y", "x\\y", "x\x00", "ns:1/m", "a/b:c/d", "h/../m", "host:1/../m",
		strings.Repeat("a", 129), "x:" + strings.Repeat("t", 129), "héllo",
	}
	for _, s := range bad {
		if n, err := ParseName(s); err == nil {
			t.Errorf("ParseName(%q) = %+v, want an error", s, n)
		}
	}
}

func TestNameEqualFold(t *testing.T) {
	a, _ := ParseName("Llama3:Latest")
	b, _ := ParseName("registry.ollama.ai/library/llama3")
	if !a.EqualFold(b) {
		t.Errorf("%v and %v should be the same model", a, b)
	}
	c, _ := ParseName("llama3:8b")
	if a.EqualFold(c) {
		t.Errorf("%v and %v should differ", a, c)
	}
}
