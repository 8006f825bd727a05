// Package chatparse splits a chat model's raw output into the answer's
// content, its thinking and its tool calls, as the text streams in, and
// builds the grammars that force a tool call.
//
// A model writes tool calls in its own syntax, which its chat template
// implies ([DetectFormat]): Hermes/Qwen "<tool_call>{…}</tool_call>"
// (Qwen3-Coder: "<tool_call><function=name><parameter=key>…"), Llama 3.x
// JSON objects (after "<|python_tag|>" or as the answer; built-in tools'
// "<|python_tag|>tool.call(key=value)"), Mistral "[TOOL_CALLS][{…}]"
// (and the newer "[TOOL_CALLS]name[ARGS]{…}"), functionary v3.2
// ">>>name\n{…}" blocks, functionary v3.1 / Llama 3.1
// "<function=name>{…}</function>", Command-R7B
// "<|START_ACTION|>[…]<|END_ACTION|>", Command-R+ "Action: ```json […]```",
// granite "<|tool_call|>[…]", DeepSeek "<｜tool▁calls▁begin｜>…", and, for
// any model, an answer that starts with a call object ({"name",
// "arguments"|"parameters"}, an array of them, or {"tool_calls": […]}).
// Text after the calls of the open-ended formats is content. Thinking
// comes between "<think>" and "</think>" or an equivalent pair
// ("[THINK]…[/THINK]", "<|START_THINKING|>…<|END_THINKING|>",
// "<thinking>…</thinking>"); whether to show it is the caller's choice.
//
// The [Parser] is streaming-safe: text that might still turn into markup
// (a marker's prefix, a JSON answer that may be a call, whitespace next
// to markup) is held back until it is decided, so no markup reaches the
// content however the text is cut into pieces, and the pieces' results
// add up to [Parse] of the whole text. Output that looks like a call but
// is not a valid one (bad JSON, an undeclared function, arguments that are
// not an object, an unterminated block) is returned as content, unchanged,
// with a warning.
//
// The package never touches the engine or HTTP: it works on text.
package chatparse
