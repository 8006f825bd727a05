// Package chattemplate renders a model's own chat template: the Jinja
// string in a GGUF file's tokenizer.chat_template, as HuggingFace
// transformers' apply_chat_template renders it.
//
// It is a small Jinja engine of its own, in pure Go, with transformers'
// settings built in: trim_blocks and lstrip_blocks on, a single trailing
// newline of the template dropped, the loop-controls extension
// ({% break %}, {% continue %}), {% generation %} blocks, and the globals
// raise_exception (a Go *Exception carrying the message) and
// strftime_now (Python's strftime on Input.Now, so tests can fix the
// clock). Values behave as Python's: truthiness, None/True/False and
// repr() when printed, str/dict/list methods (.strip(), .split(),
// .items(), .get(), …), and jinja2's undefined values, filters and
// tests. JSON objects given to templates (tool definitions, tool-call
// arguments) keep their key order, and tojson is Python's json.dumps
// as transformers calls it: ", " and ": " separators, ensure_ascii off,
// indent, keys in their given order.
//
// Messages reach templates as dicts: role, content (always a string),
// reasoning_content (when set), tool_calls (id, type "function",
// function {name, arguments as an object}), tool_call_id and name.
// Input.Tools nil leaves `tools` undefined (transformers passes None;
// templates test both with `is defined` and `is not none`).
//
// What it must not do: run anything but the template (there is no
// include, import or extends, no access to Go values beyond the input,
// and the methods that change a list or dict in place fail, as in
// transformers' ImmutableSandboxedEnvironment, but for list.append and
// list.pop, which llama.cpp's engine allows and Kimi K2's template uses,
// on the render's own values); panic (a recovered panic
// is returned as an error); or let a template hang or exhaust the
// server: a rendering stops with an error wrapping ErrLimit after 2
// million steps (statements, loop iterations, calls), 256 MiB of
// strings and lists built, 16 MiB of output, or calls nested 100 deep.
// It imports nothing from engine/ or server/.
//
// Not supported: *args/**kwargs in calls, printf-style "%" formatting of
// strings, format specs in str.format, {% include %}/{% import %}/
// {% extends %}/{% block %}, and jinja2's Markup beyond a string added
// to the result of |safe or |escape (which is escaped, as functionary's
// template expects). Where jinja2 fails and this package renders
// (mapping over a generator-returning filter before tojson, for one),
// the package is the more lenient.
//
// Where llama.cpp's Jinja engine (llama-server's) is more lenient than
// jinja2 and real templates depend on it, the package follows llama.cpp:
// a string joined ("+" or "~") with None or an undefined value is the
// string (firefunction v2 adds an undefined `functions`), and an
// attribute or item of an undefined value is undefined (Command R+'s
// template reads additionalProperties of every object parameter). The
// older Gemma 4 templates get tool results folded into the assistant
// turn that called them (tool_responses), as llama-server passes them.
// Input.StringArguments gives tool call arguments as their JSON text, as
// llama-server does for templates that do not read them as an object.
//
// Own renderer or llama.cpp's common chat layer (issue 35's "How"): the
// differential (server/templatediff) renders the 70 templates of the
// engine's llama.cpp release (v0.5.0, models/templates) with 11
// conversations through Tadpole's /apply-template and llama-server's of
// the same release, 770 prompts. Before its fixes: 416 equal, 349
// different, 5 refused by both. After them (tools as llama-server passes
// them, enable_thinking and preserve_reasoning defined as it defines
// them, the date variables, reasoning_content in the history, the first
// system message merged where a template refuses one, image markers,
// list.append/pop, None + string, string arguments): 717 equal, 48
// listed, 5 refused by both (llama-server: "Unable to generate parser";
// Tadpole: the template's own raise), 0 unlisted. Of the 48, 31 are
// Tadpole's choices (thinking asked of a model without it is a 400, as
// in Ollama: 28; jinja2's Markup escaping, as transformers renders
// functionary v3.1: 3); the other 17 come from llama.cpp's per-family C++
// around the template, not from Jinja: its autoparser's thinking
// detection (Apertus, 9), tool results' names (Kimi K2, 4), message
// rewrites in the Gemma 4 and Ministral 3 handlers (3), Devstral (1). So
// for rendering the numbers point to keeping this Go renderer, with
// llama.cpp's variables and leniencies mirrored here, and the
// differential keeping it honest against each new llama.cpp release: a
// C shim would close at most 17 of 770 prompts while adding a C++
// build of llama.cpp's common library (the llama-server build takes
// about 27 minutes cold on 2 cores) to every Tadpole build. What it does
// not settle is output parsing (format detection, common_chat_parse,
// grammar triggers), where llama.cpp keeps most of its per-family code;
// that is issue 35's next part.
//
// Choice of engine: its own, standard library only. Tried on these
// templates against Python jinja2 with transformers' settings,
// github.com/nikolalohinski/gonja/v2 failed about a third of them
// (no .lstrip(), str.replace without a count, key order lost, …), and
// github.com/ardanlabs/jinja (v1.8.0; later versions need Go 1.27) sorts
// keys in tojson(indent=…) and has no bounds: a recursive macro kills
// the process with a Go stack overflow.
package chattemplate
