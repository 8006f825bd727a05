package main

import (
	"testing"

	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// run shows a thinking model's thinking first, as Ollama's CLI does;
// --hidethinking leaves it out, --think false switches it off.
func TestRunThinking(t *testing.T) {
	ts := startServer(t)
	want := "Thinking...\n" + testmodels.ScriptThinking + "\n...done thinking.\n\n" + testmodels.ScriptCall + "\n\n"
	if r := ts.mustRun(t, "run", "script", "Hi", "-p", "temperature=0"); r.stdout != want {
		t.Errorf("run: %s", r)
	}
	if r := ts.mustRun(t, "run", "--hidethinking", "script", "Hi", "-p", "temperature=0"); r.stdout != testmodels.ScriptCall+"\n\n" {
		t.Errorf("--hidethinking: %s", r)
	}
	if r := ts.mustRun(t, "run", "--think", "false", "script", "Hi", "-p", "temperature=0"); r.stdout != testmodels.ScriptCall+"\n\n" {
		t.Errorf("--think false: %s", r)
	}
	if r := ts.run(t, "", "run", "--think", "true", "bigram", "Hi"); r.code == 0 {
		t.Errorf("--think true on a model without thinking: %s", r)
	}
}
