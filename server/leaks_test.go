package server

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// A schema that refers outside itself is a 400 naming the reference as
// the client wrote it, through format and through tool parameters alike;
// no message shows the server's working directory or reads a local file.
func TestSchemaExternalRefNoPath(t *testing.T) {
	ts := startServer(t)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	refs := []string{`other.json`, `file:///etc/passwd`, `other.json#/a`}
	for _, ref := range refs {
		schema := `{"type":"object","properties":{"a":{"$ref":"` + ref + `"}}}`
		bodies := map[string]string{
			"/api/generate":        `{"model":"stories","prompt":"x","format":{"$ref":"` + ref + `"}}`,
			"/api/chat":            `{"model":"bigram","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":` + schema + `}}]}`,
			"/v1/chat/completions": `{"model":"bigram","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"$ref":"` + ref + `"}}}]}`,
		}
		for path, body := range bodies {
			resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 {
				t.Errorf("%s $ref %q: status %d: %s", path, ref, resp.StatusCode, msg)
			}
			if strings.Contains(string(msg), wd) || strings.Contains(string(msg), "/etc") && ref != `file:///etc/passwd` ||
				strings.Contains(string(msg), "root:") || !strings.Contains(string(msg), ref) {
				t.Errorf("%s $ref %q: message %s", path, ref, msg)
			}
			t.Logf("%s %s: %s", path, ref, msg)
		}
	}
}
