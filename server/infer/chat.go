package infer

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tadpole-llm/tadpole/engine"
	"github.com/tadpole-llm/tadpole/engine/grammar"
	"github.com/tadpole-llm/tadpole/engine/runner"
	"github.com/tadpole-llm/tadpole/models/chattemplate"
	"github.com/tadpole-llm/tadpole/server/chatparse"
)

// chatPrompt renders a chat. The fallbacks, in order: the request's or the
// manifest's TEMPLATE (Ollama's Go-template syntax), the model's Jinja
// chat template (its "tool_use" variant when tools are given and it has
// one), llama.cpp's built-in template detection, ChatML.
func chatPrompt(m *engine.Model, req *Request) (string, chatparse.Options, error) {
	msgs := req.Messages
	if req.System != "" && (len(msgs) == 0 || msgs[0].Role != "system") {
		msgs = append([]Message{{Role: "system", Content: req.System}}, msgs...)
	}
	if req.Template != "" {
		text, err := execTemplate(req.Template, goTemplateData(req, msgs))
		if err == nil || !req.modelTemplate {
			return text, outputOptions(req, req.Template, text), err
		}
		// A manifest template this renderer cannot run (Ollama templates
		// may call functions it lacks): the GGUF's template instead.
		slog.Warn("the model's TEMPLATE failed; using its chat template", "model", m.Path(), "error", err)
	}
	return modelTemplate(m, req, msgs)
}

// modelTemplate renders messages with the model's own chat template.
func modelTemplate(m *engine.Model, req *Request, msgs []Message) (string, chatparse.Options, error) {
	src := m.Meta.ChatTemplate
	tools := req.Tools
	if req.ToolChoice == "none" {
		tools = nil
	}
	if len(tools) > 0 && m.Meta.ChatTemplates["tool_use"] != "" {
		src = m.Meta.ChatTemplates["tool_use"]
	}
	if src == "" {
		text, err := applyChatTemplate(m, msgs)
		return text, outputOptions(req, "", text), err
	}
	t, err := parseTemplate(src)
	if err != nil {
		// A template our Jinja engine cannot parse: llama.cpp may still
		// recognise its family.
		slog.Warn("cannot parse the model's Jinja chat template; trying llama.cpp's built-in templates", "model", req.Model, "error", err)
		text, berr := m.ApplyChatTemplate(src, engineMessages(msgs), true)
		if berr != nil {
			// The model's template, not the server, fails: a 400 naming
			// the template's error, as llama-server answers.
			return "", chatparse.Options{}, Errorf(BadRequest, "model %q: chat template: %v", req.Model, err)
		}
		return text, outputOptions(req, src, text), nil
	}
	vars := map[string]any{}
	for k, v := range req.TemplateVars {
		vars[k] = v
	}
	if req.Think != nil {
		vars["enable_thinking"] = *req.Think
	} else if _, ok := vars["enable_thinking"]; !ok {
		// llama-server always defines enable_thinking: true where the
		// template knows thinking (its --reasoning default), false where
		// it does not. Templates that think only when asked (DeepSeek
		// V3.1/V4, Gemma 4, Laguna, QwQ's edition, …) then think.
		vars["enable_thinking"] = thinkingTemplate(src)
	}
	// llama-server's default --reasoning-preserve: preserve_reasoning
	// on, and the variables templates read it by (jinja caps: GLM's
	// clear_thinking, Nemotron's truncate_history_thinking, …), unless
	// the client sets them.
	preserve := true
	if v, ok := vars["preserve_reasoning"].(bool); ok {
		preserve = v
	} else if _, ok := vars["preserve_reasoning"]; !ok {
		vars["preserve_reasoning"] = true
	}
	for k, v := range map[string]bool{"preserve_thinking": preserve, "clear_thinking": !preserve, "truncate_history_thinking": !preserve, "drop_thinking": !preserve} {
		if _, ok := vars[k]; !ok {
			vars[k] = v
		}
	}
	if e, ok := vars["reasoning_effort"].(string); ok && e != "" {
		if _, ok := vars["reasoning_strength"]; !ok {
			vars["reasoning_strength"] = e
		}
	}
	// The date variables llama-server gives every template (common/chat.cpp:
	// strftime "%d %b %Y" and "%b %d %Y", local time), which Llama 3.x's
	// templates print as "Today Date"; a client's own values win.
	now := time.Now()
	if _, ok := vars["date_string"]; !ok {
		vars["date_string"] = now.Format("02 Jan 2006")
	}
	if _, ok := vars["datetime"]; !ok {
		vars["datetime"] = now.Format("Jan 02 2006")
	}
	in := chattemplate.Input{
		Messages: msgs, Tools: tools, AddGenerationPrompt: true,
		BOSToken: specialText(m, m.BOS()), EOSToken: specialText(m, m.EOS()), Vars: vars,
	}
	text, err := t.Render(in)
	if err != nil && laterSystem(msgs) {
		// Templates that allow a system message only first (Gemma's,
		// Qwen3.5's) raise on one later in the chat, as Anthropic's
		// clients send: it is folded into the turn before it, in place.
		slog.Debug("the chat template refused a system message after the first; folding it into the turn before", "model", req.Model, "error", err)
		in.Messages = foldSystem(msgs)
		text, err = t.Render(in)
	}
	if err != nil && hasToolCalls(in.Messages) {
		// A template that cannot take arguments as an object (it adds
		// them to a string): their JSON text, as llama-server passes
		// arguments to such templates.
		in.StringArguments = true
		if text2, err2 := t.Render(in); err2 == nil {
			text, err = text2, nil
		} else {
			in.StringArguments = false
		}
	}
	if err != nil && len(in.Messages) > 1 && in.Messages[0].Role == "system" {
		// Templates without a system role (Gemma 2's raises): the system
		// prompt goes before the first turn's text, joined by a newline,
		// as llama-server does for them.
		slog.Debug("the chat template refused a system message; merging it into the first turn", "model", req.Model, "error", err)
		merged := append([]Message(nil), in.Messages[1:]...)
		merged[0].Content = in.Messages[0].Content + "\n" + merged[0].Content
		retry := in
		retry.Messages = merged
		if text2, err2 := t.Render(retry); err2 == nil {
			text, err = text2, nil
		}
	}
	if err != nil {
		// A template that raises (raise_exception) or fails on this chat:
		// a 400 with the template's message, as llama-server answers.
		return "", chatparse.Options{}, Errorf(BadRequest, "model %q: chat template: %v", req.Model, err)
	}
	// The tokenizer adds BOS itself: a template that writes it would
	// double it.
	if in.BOSToken != "" && m.AddBOS() {
		text = strings.TrimPrefix(text, in.BOSToken)
	}
	return text, outputOptions(req, src, text), nil
}

// hasToolCalls tells whether a chat has an assistant turn with calls.
func hasToolCalls(msgs []Message) bool {
	for _, m := range msgs {
		if len(m.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// laterSystem tells whether a chat has a system message after its first
// message.
func laterSystem(msgs []Message) bool {
	for i, m := range msgs {
		if i > 0 && m.Role == "system" {
			return true
		}
	}
	return false
}

// foldSystem joins each system message after the first message to the
// user or tool turn before it (a new user turn when there is none), so
// its text stays where it was sent for a template that takes a system
// message only first.
func foldSystem(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	for i, m := range msgs {
		if i == 0 || m.Role != "system" {
			out = append(out, m)
			continue
		}
		if n := len(out); n > 0 && (out[n-1].Role == "user" || out[n-1].Role == "tool") {
			prev := out[n-1]
			prev.Content += "\n\n" + m.Content
			out[n-1] = prev
			continue
		}
		out = append(out, Message{Role: "user", Content: m.Content})
	}
	return out
}

// outputOptions says how to parse a chat's output: tool calls in the
// format the template implies (when the request has tools to call) and
// thinking when the template knows thinking tags.
func outputOptions(req *Request, tmpl, prompt string) chatparse.Options {
	var o chatparse.Options
	// Harmony's channels hold the thinking and the answer, and Kimi K3's
	// and MiniMax M3's answers carry markup that is no text (section
	// tags, a bare close of the thinking), so their parsers run with
	// tools or without.
	switch f := chatparse.DetectFormat(tmpl); f {
	case chatparse.Harmony, chatparse.KimiK3, chatparse.MiniMaxM3, chatparse.Muse:
		o.Format = f
	}
	if len(req.Tools) > 0 && req.ToolChoice != "none" {
		o.Format = chatparse.DetectFormat(tmpl)
		o.Tools = toolNames(req.Tools)
		o.XMLCalls = chatparse.XMLCalls(tmpl)
		o.ArgKeyCalls = chatparse.ArgKeyCalls(tmpl)
		o.DSMLToolCalls = chatparse.DSMLToolCalls(tmpl)
		o.FencedCalls = chatparse.FencedCalls(tmpl)
		o.ArgsCalls = chatparse.ArgsCalls(tmpl)
		o.CallIDCalls = chatparse.CallIDCalls(tmpl)
		o.Parameters = toolParameters(req.Tools)
	}
	if thinkingTemplate(tmpl) {
		o.Thinking = true
		o.ThinkingEnd = chatparse.ThinkingEnd(tmpl)
		o.DropThinking = req.Think != nil && !*req.Think
		// A generation prompt that opens the thinking block (DeepSeek R1,
		// QwQ, Hunyuan 3 at a high effort, Kimi K3 thinking, …): the
		// output starts inside it.
		o.StartInThinking = chatparse.OpensThinking(prompt)
	}
	return o
}

// thinkingTemplate tells whether a template is a thinking model's: it
// mentions a thinking tag or switch. (LFM2.5-Instruct's names only
// "</think>", to cut past thinking from history: its models think.)
func thinkingTemplate(src string) bool {
	for _, s := range []string{"<think>", "</think>", "enable_thinking", "reasoning_content", "[THINK]", "<|START_THINKING|>", "<|channel|>analysis"} {
		if strings.Contains(src, s) {
			return true
		}
	}
	return false
}

// toolFunction is the part of a tool object chat templates and grammars
// use.
type toolFunction struct {
	Function struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// toolParameters are the tools' parameter schemas by name, for the
// parser to type key-value arguments (chatparse.Options.Parameters).
func toolParameters(tools []json.RawMessage) map[string]json.RawMessage {
	params := map[string]json.RawMessage{}
	for _, t := range tools {
		var f toolFunction
		if json.Unmarshal(t, &f) == nil && f.Function.Name != "" && len(f.Function.Parameters) > 0 {
			params[f.Function.Name] = f.Function.Parameters
		}
	}
	return params
}

func toolNames(tools []json.RawMessage) []string {
	var names []string
	for _, t := range tools {
		var f toolFunction
		if json.Unmarshal(t, &f) == nil && f.Function.Name != "" {
			names = append(names, f.Function.Name)
		}
	}
	return names
}

// toolGrammar is the request's grammar, or, for tool_choice "required" or
// a named function, one that makes the output a call in the model's
// format. For "auto" with tools and no response format, where the format
// starts a call with a special token of the model's vocabulary, it is a
// lazy grammar instead (runner.Lazy, chatparse.LazyGrammar): a call the
// model starts keeps to its function's schema.
func toolGrammar(m *engine.Model, req *Request, out chatparse.Options) (grammar string, lazy *runner.Lazy, err error) {
	if req.ToolChoice != "required" {
		if req.Grammar != "" || len(out.Tools) == 0 {
			return req.Grammar, nil, nil
		}
		return lazyToolGrammar(m, req, out)
	}
	if req.Grammar != "" {
		return "", nil, Errorf(BadRequest, "a response format cannot be combined with a required tool call")
	}
	tools, err := grammarTools(req)
	if err != nil {
		return "", nil, err
	}
	g, err := chatparse.Grammar(out, tools, req.ToolName)
	if err != nil {
		return "", nil, Errorf(BadRequest, "%v", err)
	}
	return g, nil, nil
}

func grammarTools(req *Request) ([]chatparse.Tool, error) {
	var tools []chatparse.Tool
	for _, t := range req.Tools {
		var f toolFunction
		if err := json.Unmarshal(t, &f); err != nil {
			return nil, Errorf(BadRequest, "invalid tool: %v", err)
		}
		tools = append(tools, chatparse.Tool{Name: f.Function.Name, Parameters: f.Function.Parameters})
	}
	return tools, nil
}

// lazyToolGrammar is toolGrammar's "auto" case. The trigger must be one
// token whose text is the call markup's, and the grammar names it by id,
// so that the grammar takes the very token that woke it (a grammar that
// refused it would throw inside llama.cpp). A thinking model's trigger
// is armed by the end of its thinking (the close tag, one token too).
// Without such tokens, or where the tools' schemas are beyond the
// grammar converter, the output is free, as before, and the parser reads
// whatever call the model writes.
func lazyToolGrammar(m *engine.Model, req *Request, out chatparse.Options) (string, *runner.Lazy, error) {
	text := chatparse.CallTrigger(out)
	if text == "" || m == nil {
		return "", nil, nil
	}
	trigger, ok := oneToken(m, text)
	if !ok {
		return "", nil, nil
	}
	lazy := &runner.Lazy{Trigger: trigger}
	if out.Thinking && !out.DropThinking {
		end, ok := oneToken(m, out.ThinkingEnd)
		if !ok {
			return "", nil, nil
		}
		lazy.After = &end
	}
	rule := fmt.Sprintf("<[%d]>", trigger)
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%t\x00%t\x00%t\x00%t\x00%t\x00%t\x00%s\x00", out.Format, out.XMLCalls, out.ArgKeyCalls, out.DSMLToolCalls, out.FencedCalls, out.ArgsCalls, out.CallIDCalls, rule)
	for _, t := range req.Tools {
		h.Write(t)
		h.Write([]byte{0})
	}
	key := string(h.Sum(nil))
	g, ok := lazyGrammars.get(key)
	if !ok {
		tools, err := grammarTools(req)
		if err != nil {
			return "", nil, err
		}
		if g, err = chatparse.LazyGrammar(out, tools, rule); err != nil {
			g = "" // beyond the converter: free output, remembered too
		}
		lazyGrammars.put(key, g)
	}
	if g == "" {
		return "", nil, nil
	}
	lazy.Grammar = g
	return "", lazy, nil
}

// lazyGrammars keeps the lazy grammars of recent tool sets: an agent
// sends the same tools with every turn, and building the grammar of 24
// tools takes about 9 ms.
var lazyGrammars = grammarCache{max: 64, maxBytes: 16 << 20}

// grammarCache is a small map of grammars by their inputs' hash; when
// full (max entries or maxBytes of grammar) it starts over: a working
// set larger than that rebuilds.
type grammarCache struct {
	mu            sync.Mutex
	max, maxBytes int
	bytes         int
	m             map[string]string
}

func (c *grammarCache) get(k string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.m[k]
	return g, ok
}

func (c *grammarCache) put(k, g string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= c.max || c.bytes+len(g) > c.maxBytes {
		c.m, c.bytes = map[string]string{}, 0
	}
	c.m[k] = g
	c.bytes += len(g)
}

// oneToken is text's token when the vocabulary has it as one token
// (parsing special tokens) that writes exactly text.
func oneToken(m *engine.Model, text string) (engine.Token, bool) {
	if text == "" {
		return 0, false
	}
	toks, err := m.Tokenize(text, false, true)
	if err != nil || len(toks) != 1 || string(m.TokenPiece(toks[0], true)) != text {
		return 0, false
	}
	return toks[0], true
}

// CheckTools checks that each tool names its function and that its
// parameters, when given, are a valid JSON schema (checked against the
// schema's meta-schema). Keywords a forced call's grammar cannot hold the
// output to are reported when a call is forced (tool_choice "required").
func CheckTools(tools []json.RawMessage) error {
	for i, t := range tools {
		var f toolFunction
		if err := json.Unmarshal(t, &f); err != nil {
			return fmt.Errorf("tools[%d]: %v", i, err)
		}
		if f.Function.Name == "" {
			return fmt.Errorf("tools[%d]: the function has no name", i)
		}
		p := bytes.TrimSpace(f.Function.Parameters)
		if len(p) == 0 || string(p) == "null" {
			continue
		}
		// The grammar's caps first: the meta-schema check below costs
		// minutes on a 20,000-branch anyOf.
		if err := grammar.CheckLimits(p); err != nil {
			return fmt.Errorf("tools[%d]: function %q: parameters: %v", i, f.Function.Name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(p))
		if err != nil {
			return fmt.Errorf("tools[%d]: function %q: parameters: %v", i, f.Function.Name, err)
		}
		if _, ok := doc.(map[string]any); !ok {
			return fmt.Errorf("tools[%d]: function %q: parameters must be a JSON schema object", i, f.Function.Name)
		}
		if err := compileSchema(doc); err != nil {
			return fmt.Errorf("tools[%d]: function %q: parameters are not a valid JSON schema: %v", i, f.Function.Name, err)
		}
	}
	return nil
}

// templates caches parsed Jinja templates by source: a model's template
// is parsed once, not per request.
var templates sync.Map // string → *chattemplate.Template or error

func parseTemplate(src string) (*chattemplate.Template, error) {
	if v, ok := templates.Load(src); ok {
		if t, ok := v.(*chattemplate.Template); ok {
			return t, nil
		}
		return nil, v.(error)
	}
	t, err := chattemplate.Parse(src)
	if err != nil {
		templates.Store(src, err)
		return nil, err
	}
	templates.Store(src, t)
	return t, nil
}

// specialText is a special token's text ("" if the model has none).
func specialText(m *engine.Model, t engine.Token) string {
	if t < 0 {
		return ""
	}
	return string(m.TokenPiece(t, true))
}

func lastUser(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content
		}
	}
	return ""
}

func engineMessages(msgs []Message) []engine.ChatMessage {
	em := make([]engine.ChatMessage, len(msgs))
	for i, msg := range msgs {
		em[i] = engine.ChatMessage{Role: msg.Role, Content: msg.Content}
	}
	return em
}

// applyChatTemplate formats messages with llama.cpp's built-in template
// for the model (ChatML for a model without a template).
func applyChatTemplate(m *engine.Model, msgs []Message) (string, error) {
	s, err := m.ApplyChatTemplate("", engineMessages(msgs), true)
	if err != nil {
		return "", Errorf(Internal, "chat template: %v", err)
	}
	return s, nil
}

// TemplateCapabilities are the capabilities of Ollama's /api/show that
// a model's chat templates imply: "tools" when one renders tools (a Jinja
// template's tools variable, a Go template's .Tools), "thinking" when one
// knows thinking tags or switches.
func TemplateCapabilities(templates ...string) []string {
	var tools, thinking bool
	for _, t := range templates {
		tools = tools || strings.Contains(t, "tools") || strings.Contains(t, ".Tools")
		thinking = thinking || thinkingTemplate(t)
	}
	var caps []string
	if tools {
		caps = append(caps, "tools")
	}
	if thinking {
		caps = append(caps, "thinking")
	}
	return caps
}
