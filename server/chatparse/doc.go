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
// granite "<|tool_call|>[…]", DeepSeek "<｜tool▁calls▁begin｜>…" (V3.2
// and V4: DSML invokes), gpt-oss's harmony channels, Kimi K2's sections
// and Kimi K3's tagged sections (<|open|>tools<|sep|>…), MiniMax M2's
// and M3's invokes, Seed-OSS, Apertus, LFM2's Python calls, Gemma 4's
// "<|tool_call>call:NAME{key:<|"|>…<|"|>}<tool_call|>", Nemotron Nano 2's
// "<TOOLCALL>[…]", Hunyuan 3's ":opensource" tags, "<tool_calls>…"
// (Apriel, MiniMax M1), GigaChat 3's call message and 3.1's
// "<|function_call|>", firefunction's " functools[…]", MiniCPM5's
// "<function name=…><param name=…>", GLM's <arg_key>/<arg_value>
// (GLM, Laguna, Spark, Ling), Muse Glimmer's ATEM messages (" to=self",
// "to=NAME<|message|><atem:function_calls>…"), Solar Open's
// "<|tool_calls|><|tool_call:begin|>…<|calls|>", and, for any model, an answer that starts
// with a call object ({"name", "arguments"|"parameters"}, an array of
// them, or {"tool_calls": […]}). Issue 35's parse differential
// (server's TestChatParseDifferential) holds each against llama-server
// with a scripted model of its family.
// Text after the calls of the open-ended formats is content. Thinking
// comes between "<think>" and "</think>" or an equivalent pair
// ("[THINK]…[/THINK]", "<|START_THINKING|>…<|END_THINKING|>",
// "<thinking>…</thinking>", Gemma 4's "<|channel>thought…<channel|>",
// Kimi K3's think section, MiniMax M3's "<mm:think>…</mm:think>", Apriel
// 1.6's "Here are my reasoning steps:" … "[BEGIN FINAL RESPONSE]"); whether
// to show it is the caller's choice. [OpensThinking] tells whether a
// rendered prompt ends inside a thinking block (Options.StartInThinking).
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
// [Grammar] (tool_choice required or a named function) and [LazyGrammar]
// (auto, from the family's call trigger) write calls in the family's
// own markup: JSON arguments where the family writes JSON, key-value
// fields (engine/grammar's Fields) where it writes parameters
// (Qwen3-Coder, GLM, Seed-OSS, MiniMax M2, DSML, Hunyuan 3, MiniCPM5,
// Kimi K3 with each value's JSON type in its tag), a string property's
// value raw, others JSON; Gemma 4's and LFM2's value syntaxes and
// MiniMax M3's namespaced elements (an object's members nested) over
// keyedCalls; the markup around a JSON call spaced as the family's
// models space it (markupGrammar, one builder for the forced and the
// lazy grammar). The parser types such
// arguments by the tools' schemas (Options.Parameters), as llama-server
// does: a property that allows only strings stays a string.
//
// The package never touches the engine or HTTP: it works on text.
package chatparse
