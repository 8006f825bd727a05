package infer

import "strings"

// checkEffort checks a reasoning effort of "max" (Ollama's think "max")
// against the model's chat template: a family whose template takes it
// (DeepSeek V4's reasoning_effort == 'max', Kimi K3's thinking_effort)
// gets it, as thinking_effort too where the template reads that name;
// any other model refuses it with a 400 naming the levels it takes, as
// its template would only print a level it never learned.
func checkEffort(req *Request, templates ...string) error {
	e, _ := req.TemplateVars["reasoning_effort"].(string)
	if e != "max" {
		return nil
	}
	for _, src := range templates {
		if !strings.Contains(src, "'max'") && !strings.Contains(src, `"max"`) {
			continue
		}
		if strings.Contains(src, "thinking_effort") {
			if _, ok := req.TemplateVars["thinking_effort"]; !ok {
				req.TemplateVars["thinking_effort"] = e
			}
		}
		if strings.Contains(src, "reasoning_effort") || strings.Contains(src, "thinking_effort") {
			return nil
		}
	}
	return Errorf(BadRequest, "model %q has no reasoning effort \"max\": it takes \"low\", \"medium\" or \"high\" (or true, false)", req.Model)
}
