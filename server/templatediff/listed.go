package templatediff

import "strings"

// Listed are the known differences between Tadpole's /apply-template and
// llama-server's, by template file and conversation ("*": every
// conversation of that template that differs). In the package's test a
// difference not listed fails; so does an entry that no longer differs.
var Listed = join(
	[]Difference{
		{"Apertus-8B-Instruct.jinja", "*", "enable_thinking's default: llama-server's autoparser finds no reasoning markers in this template and passes false (\"Deliberation: disabled\"); Tadpole sees enable_thinking in it and passes true"},
		{"Kimi-K2-Instruct.jinja", "tool_call", toolName},
		{"Kimi-K2-Instruct.jinja", "parallel", toolName},
		{"Kimi-K2-Thinking.jinja", "tool_call", toolName},
		{"Kimi-K2-Thinking.jinja", "parallel", toolName},
		{"meetkai-functionary-medium-v3.1.jinja", "tools", markupEscape},
		{"meetkai-functionary-medium-v3.1.jinja", "tool_call", markupEscape},
		{"meetkai-functionary-medium-v3.1.jinja", "parallel", markupEscape},
		{"mistralai-Ministral-3-14B-Reasoning-2512.jinja", "reasoning", "llama-server's Ministral 3 handler writes an assistant turn's reasoning_content into the history as [THINK]…[/THINK]; Tadpole renders the template as written, which leaves it out"},
		{"unsloth-mistral-Devstral-Small-2507.jinja", "reasoning", "llama-server renders an assistant turn that has reasoning_content without its content (\"4\"); Tadpole keeps the content (cause on llama-server's side not traced)"},
	},
	each("think_on", "Tadpole refuses enable_thinking=true on a model whose template knows no thinking (400 \"does not support thinking\", as Ollama does); llama-server renders without it",
		"CohereForAI-c4ai-command-r-plus-tool_use.jinja", "GigaChat3-10B-A1.8B.jinja", "GigaChat3.1-10B-A1.8B.jinja", "Kimi-K2-Instruct.jinja",
		"LFM2-8B-A1B.jinja", "MiMo-VL.jinja", "MiniMax-M1.jinja", "Mistral-Small-3.2-24B-Instruct-2506.jinja",
		"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", "Qwen-Qwen2.5-7B-Instruct.jinja",
		"Qwen3-Coder.jinja", "fireworks-ai-llama-3-firefunction-v2.jinja", "google-gemma-2-2b-it.jinja", "ibm-granite-granite-4.0.jinja",
		"ibm-granite-granite-4.1.jinja", "meetkai-functionary-medium-v3.1.jinja", "meetkai-functionary-medium-v3.2.jinja",
		"meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja", "meta-llama-Llama-3.3-70B-Instruct.jinja",
		"microsoft-Phi-3.5-mini-instruct.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja", "moonshotai-Kimi-K2.jinja",
		"unsloth-Apriel-1.5.jinja", "unsloth-mistral-Devstral-Small-2507.jinja", "upstage-Solar-Open-100B.jinja"),
)

const (
	toolName     = "Tadpole names a tool result's function (name, from its tool_call_id); llama-server passes name only when the client sends it, so Kimi's template writes \"tool\""
	markupEscape = "jinja2's Markup: a string added to '...'|safe is HTML-escaped (&#34;), as transformers renders this template; llama.cpp's Jinja engine does not escape"
)

// Difference is a known difference: the template file, the
// conversation of the test ("*" for all) and why.
type Difference struct{ Template, Conversation, Reason string }

func each(conv, reason string, tmpls ...string) []Difference {
	var out []Difference
	for _, t := range tmpls {
		out = append(out, Difference{t, conv, reason})
	}
	return out
}

func join(lists ...[]Difference) []Difference {
	var out []Difference
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// Rendering sums up Listed for a template file: "equal" when no
// conversation's prompt differs, else the conversations that do.
func Rendering(tmpl string) string {
	var convs []string
	for _, d := range Listed {
		if d.Template == tmpl {
			convs = append(convs, d.Conversation)
		}
	}
	switch {
	case len(convs) == 0:
		return "equal"
	case len(convs) == 1 && convs[0] == "*":
		return "differs in every conversation (listed)"
	}
	return "equal but " + strings.Join(convs, ", ") + " (listed)"
}
