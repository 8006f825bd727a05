package anthropic

import (
	"context"
	"encoding/json"
	"math"

	"github.com/tadpole-llm/tadpole/engine/grammar"
	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/openaisampling"
)

// minThinkingBudget is Anthropic's least budget_tokens. The budget is
// checked (at least this, and below max_tokens, as Anthropic requires)
// so that requests valid here are valid there, but not enforced: the
// model thinks until it stops thinking, within max_tokens.
const minThinkingBudget = 1024

// prepared is a validated request: what infer runs, and the stop
// sequences the answer's stop_sequence is chosen from.
type prepared struct {
	req   *infer.Request
	stops []string
}

// prepare validates a Messages request and turns it into a generation
// request. count is for count_tokens, which takes no max_tokens and no
// sampling fields (they are ignored there).
func (h *Handler) prepare(ctx context.Context, r *MessagesRequest, count bool) (*prepared, error) {
	if r.Model == "" {
		return nil, invalid("model: Field required")
	}
	if !count && r.MaxTokens == nil {
		return nil, invalid("max_tokens: Field required")
	}
	if len(r.Messages) == 0 {
		return nil, invalid("messages: at least one message is required")
	}
	system, err := systemText(r.System)
	if err != nil {
		return nil, err
	}
	msgs, mi, err := conversation(r.Messages, r.Model, h.Infer.Limits().Fetcher.Reader(ctx))
	if err != nil {
		return nil, err
	}
	if system != "" {
		msgs = append([]infer.Message{{Role: "system", Content: system}}, msgs...)
		if len(mi.MessageMedia) > 0 {
			mi.MessageMedia = append([][]infer.MediaRef{nil}, mi.MessageMedia...)
		}
	}
	tools, choice, name, err := checkTools(r.Tools, r.ToolChoice)
	if err != nil {
		return nil, err
	}
	think, err := thinking(r.Thinking, r.MaxTokens, count)
	if err != nil {
		return nil, err
	}
	if think != nil && *think && choice == "required" {
		return nil, invalid("tool_choice: thinking may not be enabled when tool_choice forces tool use")
	}
	gram, vars, err := outputConfig(r.OutputConfig)
	if err != nil {
		return nil, err
	}
	if gram != "" && choice == "required" {
		return nil, invalid("output_config.format: a JSON output format cannot be combined with a forced tool call (tool_choice)")
	}
	lora, err := infer.ParseLoRA(r.LoRA)
	if err != nil {
		return nil, invalid("lora: %v", err)
	}
	no := false
	ireq := &infer.Request{
		LoRA:  lora,
		Model: r.Model, Chat: true, Messages: msgs, MediaInput: mi, Grammar: gram,
		Tools: tools, ToolChoice: choice, ToolName: name, Think: think, TemplateVars: vars,
		// Anthropic's models neither cut a long prompt nor slide their
		// context: a prompt too long is a 400, a full context ends the
		// answer.
		Truncate: &no, Shift: &no,
	}
	p := &prepared{req: ireq}
	if count {
		return p, nil
	}
	if ireq.Options, err = h.options(r); err != nil {
		return nil, err
	}
	p.stops = ireq.Options.Stop
	return p, nil
}

// options are the request's sampling options: OpenAI's defaults (every
// non-Ollama door starts from them), the model's parameters, then
// max_tokens, temperature, top_p, top_k and stop_sequences, each checked
// against Anthropic's range and the option table's.
func (h *Handler) options(r *MessagesRequest) (ollamaapi.Options, error) {
	if err := checkRanges(r); err != nil {
		return ollamaapi.Options{}, err
	}
	base := ollamaapi.DefaultOptions()
	openaisampling.Defaults(&base)
	opts, err := h.Infer.ModelOptionsFrom(r.Model, base)
	if err != nil {
		return opts, inferError(err)
	}
	smp := openaisampling.Fields{Temperature: r.Temperature, TopP: r.TopP}
	if r.StopSequences != nil {
		smp.Stop, _ = json.Marshal(r.StopSequences)
	}
	if err := smp.Apply(&opts); err != nil {
		return opts, inferError(err)
	}
	opts.NumPredict = int(*r.MaxTokens)
	if r.TopK != nil {
		opts.TopK = int(*r.TopK)
	}
	return opts, nil
}

// checkRanges checks the numbers and stop sequences before anything
// reaches the engine: max_tokens 1..num_predict's bound, temperature
// 0..1 (Anthropic's range), top_p 0..1, top_k 0..top_k's bound, at most
// ollamaapi.MaxStops stop sequences of at most ollamaapi.MaxStopBytes bytes each.
// JSON has no NaN or infinities; numbers past float64's or int64's range
// fail to decode.
func checkRanges(r *MessagesRequest) error {
	maxTokens := optionMax("num_predict")
	if n := *r.MaxTokens; n < 1 || n > maxTokens {
		return invalid("max_tokens: %d is out of range: expected an integer from 1 to %d", n, maxTokens)
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"temperature", r.Temperature}, {"top_p", r.TopP}} {
		if f.v != nil && (math.IsNaN(*f.v) || *f.v < 0 || *f.v > 1) {
			return invalid("%s: %g is out of range: expected a number from 0 to 1", f.name, *f.v)
		}
	}
	if r.TopK != nil {
		if k, hi := *r.TopK, optionMax("top_k"); k < 0 || k > hi {
			return invalid("top_k: %d is out of range: expected an integer from 0 to %d", k, hi)
		}
	}
	if len(r.StopSequences) > ollamaapi.MaxStops {
		return invalid("stop_sequences: %d sequences are too many: at most %d are allowed", len(r.StopSequences), ollamaapi.MaxStops)
	}
	for i, s := range r.StopSequences {
		if len(s) > ollamaapi.MaxStopBytes {
			return invalid("stop_sequences[%d]: %d bytes is too long: at most %d bytes are allowed", i, len(s), ollamaapi.MaxStopBytes)
		}
	}
	return nil
}

// optionMax is the upper bound of an integer option in the option table
// (what a request may set and the engine accepts).
func optionMax(name string) int64 {
	spec, ok := models.LookupOptionSpec(name)
	if !ok || !spec.Ranged {
		return math.MaxInt32
	}
	return int64(spec.Max)
}

// thinking maps the thinking configuration to infer's switch: enabled
// is on, disabled off; adaptive, between_tools and no configuration leave
// the model's default (a thinking model thinks, as on Ollama). An
// enabled budget must be at least minThinkingBudget and below max_tokens,
// as Anthropic requires.
func thinking(t *Thinking, maxTokens *int64, count bool) (*bool, error) {
	if t == nil {
		return nil, nil
	}
	on, off := true, false
	switch t.Type {
	case "enabled":
		if t.BudgetTokens == nil {
			return nil, invalid("thinking.enabled.budget_tokens: Field required")
		}
		b := *t.BudgetTokens
		if b < minThinkingBudget {
			return nil, invalid("thinking.enabled.budget_tokens: %d is out of range: expected at least %d", b, minThinkingBudget)
		}
		if !count && maxTokens != nil && b >= *maxTokens {
			return nil, invalid("thinking.enabled.budget_tokens: %d must be less than max_tokens (%d)", b, *maxTokens)
		}
		return &on, nil
	case "disabled":
		return &off, nil
	case "adaptive", "between_tools":
		return nil, nil
	}
	return nil, invalid("thinking.type: %q is not one of 'enabled', 'disabled', 'adaptive' and 'between_tools'", t.Type)
}

// outputConfig maps output_config: a json_schema format becomes the
// grammar the answer is held to; an effort reaches the chat template as
// reasoning_effort (as OpenAI's reasoning_effort does; "max" as "high").
func outputConfig(oc *OutputConfig) (string, map[string]any, error) {
	if oc == nil {
		return "", nil, nil
	}
	var vars map[string]any
	switch oc.Effort {
	case "":
	case "low", "medium", "high":
		vars = map[string]any{"reasoning_effort": oc.Effort}
	case "max", "xhigh":
		vars = map[string]any{"reasoning_effort": "high"}
	default:
		return "", nil, invalid("output_config.effort: %q is not one of 'low', 'medium', 'high' and 'max'", oc.Effort)
	}
	if oc.Format == nil {
		return "", vars, nil
	}
	if oc.Format.Type != "json_schema" {
		return "", nil, invalid("output_config.format.type: %q is not supported: expected 'json_schema'", oc.Format.Type)
	}
	if len(oc.Format.Schema) == 0 || oc.Format.Schema[0] != '{' {
		return "", nil, invalid("output_config.format.schema: Field required: a JSON schema object")
	}
	g, err := grammar.FromSchema(oc.Format.Schema)
	if err != nil {
		return "", nil, invalid("output_config.format.schema: %v", err)
	}
	return g, vars, nil
}
