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
// transformers' ImmutableSandboxedEnvironment); panic (a recovered panic
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
// Choice of engine: its own, standard library only. Tried on these
// templates against Python jinja2 with transformers' settings,
// github.com/nikolalohinski/gonja/v2 failed about a third of them
// (no .lstrip(), str.replace without a count, key order lost, …), and
// github.com/ardanlabs/jinja (v1.8.0; later versions need Go 1.27) sorts
// keys in tojson(indent=…) and has no bounds: a recursive macro kills
// the process with a Go stack overflow.
package chattemplate
