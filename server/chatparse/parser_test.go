package chatparse

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

type call struct{ name, args string }

type parseCase struct {
	name     string
	o        Options
	text     string
	content  string
	thinking string
	calls    []call
	warn     bool
}

var weather = []string{"get_weather", "get_time"}

var parseCases = []parseCase{
	{name: "no tools: markup passes through", o: Options{Format: Hermes},
		text: `Hi <tool_call>{"name": "get_weather", "arguments": {}}</tool_call>`, content: `Hi <tool_call>{"name": "get_weather", "arguments": {}}</tool_call>`},
	{name: "hermes", o: Options{Format: Hermes, Tools: weather},
		text:  "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n</tool_call>",
		calls: []call{{"get_weather", `{"city":"Paris","unit":"c"}`}}},
	{name: "hermes: text, two calls", o: Options{Format: Hermes, Tools: weather},
		text:    "Let me check.\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>\n<tool_call>{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": \\\"CET\\\"}\"}</tool_call>",
		content: "Let me check.", calls: []call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{"tz":"CET"}`}}},
	{name: "hermes: unknown function", o: Options{Format: Hermes, Tools: weather},
		text: `<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>`, content: `<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>`, warn: true},
	{name: "hermes: bad JSON, then text", o: Options{Format: Hermes, Tools: weather},
		text: `<tool_call>{"name": "get_weather", "arguments": {</tool_call> ok`, content: `<tool_call>{"name": "get_weather", "arguments": {</tool_call> ok`, warn: true},
	{name: "hermes: arguments not an object", o: Options{Format: Hermes, Tools: weather},
		text: `<tool_call>{"name": "get_weather", "arguments": [1]}</tool_call>`, content: `<tool_call>{"name": "get_weather", "arguments": [1]}</tool_call>`, warn: true},
	{name: "hermes: unterminated but complete", o: Options{Format: Hermes, Tools: weather},
		text: `<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}`, calls: []call{{"get_weather", `{"city":"Oslo"}`}}},
	{name: "hermes: unterminated and cut off", o: Options{Format: Hermes, Tools: weather},
		text: `<tool_call>{"name": "get_weather", "argu`, content: `<tool_call>{"name": "get_weather", "argu`, warn: true},
	{name: "hermes: bare JSON stays content", o: Options{Format: Hermes, Tools: weather},
		text: `{"name": "get_weather", "arguments": {}}`, content: `{"name": "get_weather", "arguments": {}}`},
	{name: "llama3: bare JSON", o: Options{Format: Llama3, Tools: weather},
		text: ` {"name": "get_weather", "parameters": {"city": "Rome"}}`, calls: []call{{"get_weather", `{"city":"Rome"}`}}},
	{name: "llama3: python_tag, two calls", o: Options{Format: Llama3, Tools: weather},
		text:  `<|python_tag|>{"name": "get_weather", "parameters": {"city": "Rome"}}; {"name": "get_time", "parameters": {}}`,
		calls: []call{{"get_weather", `{"city":"Rome"}`}, {"get_time", `{}`}}},
	{name: "llama3: JSON that is not a call", o: Options{Format: Llama3, Tools: weather},
		text: `{"answer": 42}`, content: `{"answer": 42}`, warn: true},
	{name: "llama3: text", o: Options{Format: Llama3, Tools: weather},
		text: "The answer is {42}.", content: "The answer is {42}."},
	{name: "mistral: array", o: Options{Format: Mistral, Tools: weather},
		text:  `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Nice"}, "id": "abc123def"}, {"name": "get_time", "arguments": {}, "id": "xyz987uvw"}]`,
		calls: []call{{"get_weather", `{"city":"Nice"}`}, {"get_time", `{}`}}},
	{name: "mistral: [ARGS] form", o: Options{Format: Mistral, Tools: weather},
		text:  `[TOOL_CALLS]get_weather[ARGS]{"city": "Nice"}[TOOL_CALLS]get_time[ARGS]{}`,
		calls: []call{{"get_weather", `{"city":"Nice"}`}, {"get_time", `{}`}}},
	{name: "mistral: cut off", o: Options{Format: Mistral, Tools: weather},
		text: `Sure. [TOOL_CALLS][{"name": "get_weather", "arg`, content: `Sure. [TOOL_CALLS][{"name": "get_weather", "arg`, warn: true},
	{name: "mistral: text after the calls", o: Options{Format: Mistral, Tools: weather},
		text: "[TOOL_CALLS] [{\"name\":\"get_time\",\"arguments\":{}}] done", content: "done", calls: []call{{"get_time", `{}`}}},
	{name: "mistral: [ARGS] with an id, then text", o: Options{Format: Mistral, Tools: weather},
		text: "[TOOL_CALLS]get_time[CALL_ID]a1b2c3d4e[ARGS]{\"tz\": \"UTC\"} ok", content: "ok", calls: []call{{"get_time", `{"tz":"UTC"}`}}},
	{name: "llama3: call, then text", o: Options{Format: Llama3, Tools: weather},
		text: "{\"name\":\"get_time\",\"parameters\":{}}\nHope this helps", content: "Hope this helps", calls: []call{{"get_time", `{}`}}},
	{name: "llama3: calls on lines, python_tag twice", o: Options{Format: Llama3, Tools: weather},
		text:  "<|python_tag|>{\"name\":\"get_time\",\"parameters\":{}}\n<|python_tag|>{\"name\":\"get_weather\",\"parameters\":{\"city\":\"Oslo\"}}",
		calls: []call{{"get_time", `{}`}, {"get_weather", `{"city":"Oslo"}`}}},
	{name: "llama3: built-in tool", o: Options{Format: Llama3, Tools: []string{"brave_search"}},
		text: `<|python_tag|>brave_search.call(query='it\'s "x"', n=3, safe=True, lang=None)`, calls: []call{{"brave_search", `{"query":"it's \"x\"","n":3,"safe":true,"lang":null}`}}},
	{name: "llama3: undeclared built-in", o: Options{Format: Llama3, Tools: weather},
		text: `<|python_tag|>wolfram_alpha.call(query="2+2")`, content: `<|python_tag|>wolfram_alpha.call(query="2+2")`, warn: true},
	{name: "llama3: code", o: Options{Format: Llama3, Tools: []string{"python"}},
		text: "<|python_tag|>print(1 < 2)\n", calls: []call{{"python", `{"code":"print(1 < 2)"}`}}},
	{name: "hermes: fenced JSON", o: Options{Format: Hermes, Tools: weather},
		text: "<tool_call>\n```json\n{\"name\":\"get_time\",\"arguments\":{}}\n```\n</tool_call>", calls: []call{{"get_time", `{}`}}},
	{name: "qwen3-coder parameters", o: Options{Format: Hermes, Tools: weather},
		text:    "Checking.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
		content: "Checking.", calls: []call{{"get_weather", `{"city":"Paris","days":3}`}}},
	{name: "hermes: a good call, a bad one, text kept", o: Options{Format: Hermes, Tools: weather},
		text:    "<tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>\n<tool_call>{\"name\":\"nope\",\"arguments\":{}}</tool_call> x",
		content: "<tool_call>{\"name\":\"nope\",\"arguments\":{}}</tool_call> x", calls: []call{{"get_time", `{}`}}, warn: true},
	{name: "generic: array, arguments as a string", o: Options{Format: Generic, Tools: weather},
		text:  "[{\"name\":\"get_time\",\"arguments\":{}}, {\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"x\\\"}\"}]",
		calls: []call{{"get_time", `{}`}, {"get_weather", `{"city":"x"}`}}},
	{name: "generic: OpenAI's shape", o: Options{Format: Generic, Tools: weather},
		text: `{"function": {"name": "get_time", "arguments": "{}"}}`, calls: []call{{"get_time", `{}`}}},
	{name: "generic: JSON after text is content", o: Options{Format: Generic, Tools: weather},
		text: `Sure: {"name": "get_time", "arguments": {}}`, content: `Sure: {"name": "get_time", "arguments": {}}`},
	{name: "generic: thinking, then a call", o: Options{Format: Generic, Tools: weather, Thinking: true},
		text: "<think>x</think>\n{\"name\":\"get_time\",\"arguments\":{}}", thinking: "x", calls: []call{{"get_time", `{}`}}},
	{name: "magistral: thinking, then a call", o: Options{Format: Mistral, Tools: weather, Thinking: true},
		text:     "[THINK]Weather first.[/THINK]\n[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}",
		thinking: "Weather first.", calls: []call{{"get_weather", `{"city":"Paris"}`}}},
	{name: "llama3: a thinking tag is not a JSON answer", o: Options{Format: Llama3, Tools: weather, Thinking: true},
		text: "[THINK]x[/THINK] {\"name\": \"get_time\", \"parameters\": {}}", thinking: "x", calls: []call{{"get_time", `{}`}}},
	{name: "function tag", o: Options{Format: FunctionTag, Tools: weather},
		text: `Checking.<function=get_weather>{"city": "Bern"}</function>`, content: "Checking.", calls: []call{{"get_weather", `{"city":"Bern"}`}}},
	{name: "functionary v3.2", o: Options{Format: Functionary, Tools: weather},
		text: "all\nLet me see.>>>get_weather\n{\"city\": \"Lima\"}", content: "Let me see.", calls: []call{{"get_weather", `{"city":"Lima"}`}}},
	{name: "functionary: text, then a call", o: Options{Format: Functionary, Tools: weather},
		text: "all\nHi there.\n>>>get_time\n{}", content: "Hi there.", calls: []call{{"get_time", `{}`}}},
	{name: "functionary: a call first", o: Options{Format: Functionary, Tools: weather},
		text: "get_time\n{\"tz\": \"UTC\"}>>>all\nDone.", content: "Done.", calls: []call{{"get_time", `{"tz":"UTC"}`}}},
	{name: "functionary: plain text", o: Options{Format: Functionary, Tools: weather},
		text: "Hello there.", content: "Hello there."},
	{name: "command-r7b", o: Options{Format: CommandR, Tools: weather},
		text:  `<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Kyiv"}}]<|END_ACTION|>`,
		calls: []call{{"get_weather", `{"city":"Kyiv"}`}}},
	{name: "command-r-plus", o: Options{Format: CommandRPlus, Tools: weather},
		text:    "I will look it up.\nAction: ```json\n[\n    {\n        \"tool_name\": \"get_weather\",\n        \"parameters\": {\"city\": \"Oslo\"}\n    }\n]\n```",
		content: "I will look it up.", calls: []call{{"get_weather", `{"city":"Oslo"}`}}},
	{name: "command-r-plus: text after the block", o: Options{Format: CommandRPlus, Tools: weather},
		text: "Action: ```json\n[{\"tool_name\": \"get_time\", \"parameters\": {}}]\n```\nDone.", content: "Done.", calls: []call{{"get_time", `{}`}}},
	{name: "command-r-plus: Action in prose", o: Options{Format: CommandRPlus, Tools: weather},
		text: "Action: none needed.", content: "Action: none needed.", warn: true},
	{name: "granite", o: Options{Format: Granite, Tools: weather},
		text: `<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Oslo"}}]`, calls: []call{{"get_weather", `{"city":"Oslo"}`}}},
	{name: "deepseek r1", o: Options{Format: DeepSeek, Tools: weather, Thinking: true},
		text:     "<think>ok</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Oslo\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		thinking: "ok", calls: []call{{"get_weather", `{"city":"Oslo"}`}}},
	{name: "deepseek v3.1", o: Options{Format: DeepSeek, Tools: weather},
		text:    "Sure<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Oslo\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		content: "Sure", calls: []call{{"get_time", `{}`}, {"get_weather", `{"city":"Oslo"}`}}},
	{name: "generic: tool_calls wrapper", o: Options{Format: Generic, Tools: weather},
		text: `{"tool_calls": [{"name": "get_time", "arguments": {}}]}`, calls: []call{{"get_time", `{}`}}},
	{name: "generic: JSON answer without arguments is content", o: Options{Format: Generic, Tools: weather},
		text: `{"name": "get_time"}`, content: `{"name": "get_time"}`, warn: true},
	{name: "thinking", o: Options{Thinking: true},
		text: "<think>\nHmm, 2+2.\n</think>\n\nIt is 4.", thinking: "Hmm, 2+2.", content: "It is 4."},
	{name: "apriel 1.6: reasoning to its marker, then calls", o: Options{Format: ToolCallsTag, Tools: weather, Thinking: true, StartInThinking: true, ThinkingEnd: "[BEGIN FINAL RESPONSE]"},
		text:     "Paris, so get_weather.\n[BEGIN FINAL RESPONSE]\n<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]</tool_calls>",
		thinking: "Paris, so get_weather.", calls: []call{{"get_weather", `{"city":"Paris"}`}}},
	{name: "muse: thinking, then a call", o: Options{Format: Muse, Tools: weather},
		text:     " to=self<|message|>Paris, so get_weather.<|eom|><|start|>assistant to=get_weather<|message|><atem:function_calls>\n<atem:invoke name=\"get_weather\">\n<atem:parameter name=\"city\">Paris</atem:parameter>\n<atem:parameter name=\"days\">3</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eot|>",
		thinking: "Paris, so get_weather.", calls: []call{{"get_weather", `{"city":"Paris","days":3}`}}},
	{name: "muse: thinking, then the answer", o: Options{Format: Muse},
		text:     " to=self<|message|>Easy.<|eom|><|start|>assistant to=user<|message|>It is 4.<|eot|>",
		thinking: "Easy.", content: "It is 4."},
	{name: "solar open: two calls", o: Options{Format: SolarOpen, Tools: weather},
		text:  "<|tool_calls|><|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>get_weather<|tool_call:args|>{\"city\": \"Paris\"}<|tool_call:end|><|tool_call:begin|>f6g7h8i9j0<|tool_call:name|>get_time<|tool_call:args|>{}<|tool_call:end|><|calls|>",
		calls: []call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{}`}}},
	{name: "solar open: an answer", o: Options{Format: SolarOpen, Tools: weather},
		text: "<|content|>It is 4.", content: "It is 4."},
	{name: "muse: an answer without a header", o: Options{Format: Muse},
		text: "It is 4.", content: "It is 4."},
	{name: "muse: a call without tools is content, warned", o: Options{Format: Muse},
		text: " to=get_weather<|message|><atem:function_calls></atem:function_calls>", content: "<atem:function_calls></atem:function_calls>", warn: true},
	{name: "thinking already open", o: Options{Thinking: true, StartInThinking: true},
		text: "Hmm.</think>It is 4.", thinking: "Hmm.", content: "It is 4."},
	{name: "thinking not closed", o: Options{Thinking: true},
		text: "<think>Hmm, long", thinking: "Hmm, long"},
	{name: "thinking tags of other families", o: Options{Thinking: true},
		text: "[THINK]a b[/THINK]c <|START_THINKING|>d<|END_THINKING|> e", thinking: "a bd", content: "ce"},
	{name: "thinking then call", o: Options{Format: Hermes, Tools: weather, Thinking: true},
		text:     "<think>I need the weather.</think><tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>",
		thinking: "I need the weather.", calls: []call{{"get_weather", `{"city":"Paris"}`}}},
	{name: "thinking off: tags stay text", o: Options{},
		text: "<think>x</think>y", content: "<think>x</think>y"},
	{name: "near-markers are text", o: Options{Format: Hermes, Tools: weather, Thinking: true},
		text: "a <tool b <thin c < d <tool_cal", content: "a <tool b <thin c < d <tool_cal"},
	// gpt-oss (harmony): control tokens (<|end|>, <|call|>, <|return|>)
	// are not in the text, user-defined ones are.
	// GLM 4.5-4.7 (Hermes' <tool_call> with <arg_key>/<arg_value> pairs)
	// and Kimi K2, as llama-server reads them (issue 35's differential).
	{name: "glm: arguments as key/value pairs", o: Options{Format: Hermes, Tools: weather, Thinking: true},
		text:     "\n<think>Weather.</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>unit</arg_key>\n<arg_value>{\"scale\": \"c\", \"precise\": true}</arg_value>\n<arg_key>note</arg_key>\n<arg_value>say \"hi\"\nbye</arg_value>\n</tool_call>",
		thinking: "Weather.", calls: []call{{"get_weather", `{"city":"Paris","unit":{"scale":"c","precise":true},"note":"say \"hi\"\nbye"}`}}},
	{name: "glm: no arguments", o: Options{Format: Hermes, Tools: weather},
		text: "<tool_call>get_time</tool_call>", calls: []call{{"get_time", `{}`}}},
	{name: "glm: a value without its close is content", o: Options{Format: Hermes, Tools: weather},
		text: "<tool_call>get_time\n<arg_key>tz</arg_key><arg_value>CET</tool_call>", content: "<tool_call>get_time\n<arg_key>tz</arg_key><arg_value>CET</tool_call>", warn: true},
	{name: "kimi: two calls", o: Options{Format: Kimi, Tools: weather},
		text:    "Checking.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\", \"note\": \"say \\\"hi\\\"\\nbye\"}<|tool_call_end|><|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
		content: "Checking.", calls: []call{{"get_weather", `{"city":"Paris","note":"say \"hi\"\nbye"}`}, {"get_time", `{}`}}},
	{name: "kimi: an undeclared function is content", o: Options{Format: Kimi, Tools: weather},
		text: "<|tool_calls_section_begin|><|tool_call_begin|>functions.rm:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>", content: "<|tool_calls_section_begin|><|tool_call_begin|>functions.rm:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>", warn: true},
	{name: "minimax: two invokes after thinking", o: Options{Format: MiniMax, Tools: weather, Thinking: true, StartInThinking: true},
		text:     "Weather.\n</think>\n\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n<parameter name=\"unit\">{\"scale\": \"c\"}</parameter>\n<parameter name=\"note\">say \"hi\"\nbye</parameter>\n</invoke>\n<invoke name=\"get_time\">\n</invoke>\n</minimax:tool_call>",
		thinking: "Weather.", calls: []call{{"get_weather", `{"city":"Paris","unit":{"scale":"c"},"note":"say \"hi\"\nbye"}`}, {"get_time", `{}`}}},
	{name: "minimax: a parameter without its close is content", o: Options{Format: MiniMax, Tools: weather},
		text: "<minimax:tool_call><invoke name=\"get_time\"><parameter name=\"tz\">CET</invoke></minimax:tool_call>", content: "<minimax:tool_call><invoke name=\"get_time\"><parameter name=\"tz\">CET</invoke></minimax:tool_call>", warn: true},
	{name: "seed: seed:think, then a function block", o: Options{Format: Seed, Tools: weather, Thinking: true},
		text:     "<seed:think>Weather.</seed:think>\n<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n<parameter=unit>{\"scale\": \"c\"}</parameter>\n</function>\n</seed:tool_call>",
		thinking: "Weather.", calls: []call{{"get_weather", `{"city":"Paris","unit":{"scale":"c"}}`}}},
	{name: "apertus: inner thoughts, then two calls", o: Options{Format: Apertus, Tools: weather, Thinking: true},
		text:     "<|inner_prefix|>Weather.<|inner_suffix|><|tools_prefix|>[{\"get_weather\": {\"city\": \"Paris\", \"note\": \"say \\\"hi\\\"\\nbye\"}}, {\"get_time\": {}}]<|tools_suffix|>",
		thinking: "Weather.", calls: []call{{"get_weather", `{"city":"Paris","note":"say \"hi\"\nbye"}`}, {"get_time", `{}`}}},
	{name: "apertus: an object with two members is content", o: Options{Format: Apertus, Tools: weather},
		text: "<|tools_prefix|>[{\"get_weather\": {}, \"get_time\": {}}]<|tools_suffix|>", content: "<|tools_prefix|>[{\"get_weather\": {}, \"get_time\": {}}]<|tools_suffix|>", warn: true},
	{name: "lfm2: Python-style calls", o: Options{Format: LFM2, Tools: weather},
		text:    "Checking.<|tool_call_start|>[get_weather(city=\"Paris\", unit={\"scale\": 'c', \"precise\": True, \"n\": [1, -2.5, None]}, note=\"say \\\"hi\\\"\\nbye\"), get_time()]<|tool_call_end|>",
		content: "Checking.", calls: []call{{"get_weather", `{"city":"Paris","unit":{"scale":"c","precise":true,"n":[1,-2.5,null]},"note":"say \"hi\"\nbye"}`}, {"get_time", `{}`}}},
	{name: "lfm2: an unclosed string is content", o: Options{Format: LFM2, Tools: weather},
		text: "<|tool_call_start|>[get_time(tz=\"CET)]<|tool_call_end|>", content: "<|tool_call_start|>[get_time(tz=\"CET)]<|tool_call_end|>", warn: true},
	{name: "dsml: string and JSON parameters", o: Options{Format: DSML, Tools: weather, Thinking: true, StartInThinking: true},
		text:     "Weather.</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">18</｜DSML｜parameter>\n<｜DSML｜parameter name=\"unit\" string=\"false\">{\"scale\": \"c\"}</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
		thinking: "Weather.", calls: []call{{"get_weather", `{"city":"18","unit":{"scale":"c"}}`}}},
	{name: "dsml: DeepSeek V4's tool_calls block", o: Options{Format: DSML, Tools: weather, Thinking: true, StartInThinking: true},
		text:     "Weather.</think>\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n<｜DSML｜parameter name=\"unit\" string=\"false\">{\"scale\": \"c\"}</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
		thinking: "Weather.", calls: []call{{"get_weather", `{"city":"Paris","unit":{"scale":"c"}}`}}},
	{name: "gemma4: thought, then a call", o: Options{Format: Gemma4, Tools: weather, Thinking: true},
		text:     "<|channel>thought\nI will look.<channel|><|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,unit:{scale:<|\"|>celsius<|\"|>,precise:true},days:[1, 2.5,null],note:<|\"|>say \"hi\"\nbye<|\"|>}<tool_call|>",
		thinking: "I will look.", calls: []call{{"get_weather", `{"city":"Paris","unit":{"scale":"celsius","precise":true},"days":[1,2.5,null],"note":"say \"hi\"\nbye"}`}}},
	{name: "gemma4: text, two calls", o: Options{Format: Gemma4, Tools: weather},
		text:    "Checking.<|tool_call>call:get_time{}<tool_call|><|tool_call>call:get_weather{city:<|\"|>a, b: {c}<|\"|>}<tool_call|>",
		content: "Checking.", calls: []call{{"get_time", `{}`}, {"get_weather", `{"city":"a, b: {c}"}`}}},
	{name: "gemma4: a bare string is content", o: Options{Format: Gemma4, Tools: weather},
		text: "<|tool_call>call:get_weather{city:Paris}<tool_call|>", content: "<|tool_call>call:get_weather{city:Paris}<tool_call|>", warn: true},
	{name: "gemma4: unterminated string is content", o: Options{Format: Gemma4, Tools: weather},
		text: "<|tool_call>call:get_weather{city:<|\"|>Paris}<tool_call|>", content: "<|tool_call>call:get_weather{city:<|\"|>Paris}<tool_call|>", warn: true},
	{name: "nemotron-v2: thinking, then two calls", o: Options{Format: NemotronV2, Tools: weather, Thinking: true, StartInThinking: true},
		text:     "Look it up.\n</think>\n\n<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {}}]</TOOLCALL>",
		thinking: "Look it up.", calls: []call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{}`}}},
	{name: "nemotron-v2: text, then a call", o: Options{Format: NemotronV2, Tools: weather},
		text: "Sure.\n<TOOLCALL>[{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}]</TOOLCALL>", content: "Sure.", calls: []call{{"get_time", `{"tz":"CET"}`}}},
	{name: "nemotron-v2: bad JSON is content", o: Options{Format: NemotronV2, Tools: weather},
		text: "<TOOLCALL>[{\"name\": \"get_time\"</TOOLCALL>", content: "<TOOLCALL>[{\"name\": \"get_time\"</TOOLCALL>", warn: true},
	{name: "hy3: thinking, then two calls", o: Options{Format: Hy3, Tools: weather, Thinking: true},
		text:     "<think:opensource>Look.</think:opensource><tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Paris</arg_value:opensource>\n<arg_key:opensource>unit</arg_key:opensource>\n<arg_value:opensource>{\"scale\": \"c\"}</arg_value:opensource>\n</tool_call:opensource>\n<tool_call:opensource>get_time<tool_sep:opensource>\n</tool_call:opensource>\n</tool_calls:opensource>",
		thinking: "Look.", calls: []call{{"get_weather", `{"city":"Paris","unit":{"scale":"c"}}`}, {"get_time", `{}`}}},
	{name: "hy3: a call without its end is content", o: Options{Format: Hy3, Tools: weather},
		text: "<tool_calls:opensource><tool_call:opensource>get_time<tool_sep:opensource></tool_calls:opensource>", content: "<tool_calls:opensource><tool_call:opensource>get_time<tool_sep:opensource></tool_calls:opensource>", warn: true},
	{name: "kimi-k3: think, empty response, two calls", o: Options{Format: KimiK3, Tools: weather, Thinking: true, StartInThinking: true},
		text:     "Look it up.<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" type=\"string\"<|sep|>18<|close|>argument<|sep|><|open|>argument key=\"unit\" type=\"object\"<|sep|>{\"scale\": \"c\"}<|close|>argument<|sep|><|close|>call<|sep|><|open|>call tool=\"get_time\" index=\"2\"<|sep|><|open|>json type=\"object\"<|sep|>{\"tz\": \"a&b\"}<|close|>json<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>",
		thinking: "Look it up.", calls: []call{{"get_weather", `{"city":"18","unit":{"scale":"c"}}`}, {"get_time", `{"tz":"a&b"}`}}},
	{name: "kimi-k3: response text", o: Options{Format: KimiK3, Tools: weather, Thinking: true, StartInThinking: true},
		text: "Hmm.<|close|>think<|sep|><|open|>response<|sep|>It is sunny.\n<|close|>response<|sep|><|close|>message<|sep|>", thinking: "Hmm.", content: "It is sunny.\n"},
	{name: "kimi-k3 without tools: the response's tags are no text", o: Options{Format: KimiK3},
		text: "<|open|>response<|sep|>It is sunny.\n<|close|>response<|sep|><|close|>message<|sep|>", content: "It is sunny.\n"},
	{name: "minimax-m3 without tools: a bare </mm:think> is no text", o: Options{Format: MiniMaxM3},
		text: "</mm:think>It is sunny.", content: "It is sunny."},
	{name: "kimi-k3: an argument without its close is content", o: Options{Format: KimiK3, Tools: weather},
		text: "<|open|>tools<|sep|><|open|>call tool=\"get_time\" index=\"1\"<|sep|><|open|>argument key=\"tz\" type=\"string\"<|sep|>CET<|close|>call<|sep|><|close|>tools<|sep|>", content: "<|open|>tools<|sep|><|open|>call tool=\"get_time\" index=\"1\"<|sep|><|open|>argument key=\"tz\" type=\"string\"<|sep|>CET<|close|>call<|sep|><|close|>tools<|sep|>", warn: true},
	{name: "tool-calls-tag: Apriel's list", o: Options{Format: ToolCallsTag, Tools: weather},
		text: "\n<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"x1\"}, {\"name\": \"get_time\", \"arguments\": {}}]</tool_calls>", calls: []call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{}`}}},
	{name: "tool-calls-tag: MiniMax M1's lines", o: Options{Format: ToolCallsTag, Tools: weather},
		text: "Checking.\n<tool_calls>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_calls>", content: "Checking.", calls: []call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{}`}}},
	{name: "gigachat: text, then the call message", o: Options{Format: GigaChat, Tools: weather},
		text: "Let me look.<|message_sep|>\n\nfunction call<|role_sep|>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}", content: "Let me look.", calls: []call{{"get_weather", `{"city":"Paris"}`}}},
	{name: "gigachat: a call message that is no call is content", o: Options{Format: GigaChat, Tools: weather},
		text: "<|message_sep|>\n\nfunction call<|role_sep|>\n{\"name\": \"rm\"}", content: "<|message_sep|>\n\nfunction call<|role_sep|>\n{\"name\": \"rm\"}", warn: true},
	{name: "gigachat-3.1: text, then a call", o: Options{Format: GigaChat31, Tools: weather},
		text: "Let me look.<|function_call|>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}", content: "Let me look.", calls: []call{{"get_weather", `{"city":"Paris"}`}}},
	{name: "firefunction: functools list", o: Options{Format: FireFunction, Tools: weather},
		text: " functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {}}]", calls: []call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{}`}}},
	{name: "firefunction: the word in text", o: Options{Format: FireFunction, Tools: weather},
		text: "Python's functools module.", content: "Python's functools module."},
	{name: "minicpm5: thinking, then a call", o: Options{Format: MiniCPM5, Tools: weather, Thinking: true, StartInThinking: true},
		text:     "Look.\n</think>\n\n<function name=\"get_weather\"><param name=\"city\">Paris</param><param name=\"unit\">{\"scale\": \"c\"}</param><param name=\"note\"><![CDATA[a <b>\n& c]]></param></function>",
		thinking: "Look.", calls: []call{{"get_weather", `{"city":"Paris","unit":{"scale":"c"},"note":"a <b>\n& c"}`}}},
	{name: "minicpm5: an unterminated param is content", o: Options{Format: MiniCPM5, Tools: weather},
		text: "<function name=\"get_time\"><param name=\"tz\">CET</function>", content: "<function name=\"get_time\"><param name=\"tz\">CET</function>", warn: true},
	{name: "minimax-m3: thinking, then a call with an object and a list", o: Options{Format: MiniMaxM3, Tools: weather, Thinking: true},
		text:     "<mm:think>Look.</mm:think>]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name=\"get_weather\">]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[<unit>]<]minimax[>[<scale>celsius]<]minimax[>[</scale>]<]minimax[>[<precise>true]<]minimax[>[</precise>]<]minimax[>[</unit>]<]minimax[>[<days>]<]minimax[>[<item>1]<]minimax[>[</item>]<]minimax[>[<item>2]<]minimax[>[</item>]<]minimax[>[</days>]<]minimax[>[<note>say \"hi\"\nbye]<]minimax[>[</note>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>",
		thinking: "Look.", calls: []call{{"get_weather", `{"city":"Paris","unit":{"scale":"celsius","precise":true},"days":[1,2],"note":"say \"hi\"\nbye"}`}}},
	{name: "minimax-m3: a bare </mm:think>, then the answer", o: Options{Format: MiniMaxM3, Tools: weather, Thinking: true},
		text: "</mm:think>It is sunny.", content: "It is sunny."},
	{name: "minimax-m3: an element without its close is content", o: Options{Format: MiniMaxM3, Tools: weather},
		text: "]<]minimax[>[<tool_call>]<]minimax[>[<invoke name=\"get_time\">]<]minimax[>[<tz>CET]<]minimax[>[</invoke>]<]minimax[>[</tool_call>", content: "]<]minimax[>[<tool_call>]<]minimax[>[<invoke name=\"get_time\">]<]minimax[>[<tz>CET]<]minimax[>[</invoke>]<]minimax[>[</tool_call>", warn: true},
	{name: "gemma4: thinking without tools", o: Options{Thinking: true},
		text: "<|channel>thought\nHmm.\n<channel|>Hello.", thinking: "Hmm.", content: "Hello."},
	{name: "dsml: string=false that is not JSON is content", o: Options{Format: DSML, Tools: weather},
		text: "<｜DSML｜function_calls><｜DSML｜invoke name=\"get_time\"><｜DSML｜parameter name=\"tz\" string=\"false\">CET</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>", content: "<｜DSML｜function_calls><｜DSML｜invoke name=\"get_time\"><｜DSML｜parameter name=\"tz\" string=\"false\">CET</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>", warn: true},
	{name: "harmony: analysis then final", o: Options{Format: Harmony, Thinking: true},
		text:     "<|channel|>analysis<|message|>User says hi. Reply.<|start|>assistant<|channel|>final<|message|>Hello! How can I help?",
		thinking: "User says hi. Reply.", content: "Hello! How can I help?"},
	{name: "harmony: a call, recipient after the channel", o: Options{Format: Harmony, Tools: weather, Thinking: true},
		text:     "<|channel|>analysis<|message|>Need weather.<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\", \"note\": \"a \\\"b\\\"\\nc\"}",
		thinking: "Need weather.", calls: []call{{"get_weather", `{"city":"Paris","note":"a \"b\"\nc"}`}}},
	{name: "harmony: a call, recipient after the role; end tokens written out", o: Options{Format: Harmony, Tools: weather},
		text:     "<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>{}<|call|>",
		thinking: "x", calls: []call{{"get_time", `{}`}}},
	{name: "harmony: two calls", o: Options{Format: Harmony, Tools: weather},
		text:  "<|channel|>commentary to=functions.get_weather<|message|>{\"city\":\"A\"}<|start|>assistant<|channel|>commentary to=functions.get_time<|message|>{}",
		calls: []call{{"get_weather", `{"city":"A"}`}, {"get_time", `{}`}}},
	{name: "harmony: a preamble is content", o: Options{Format: Harmony, Tools: weather},
		text:    "<|channel|>commentary<|message|>Let me check.<|start|>assistant<|channel|>commentary to=functions.get_time<|message|>{}",
		content: "Let me check.", calls: []call{{"get_time", `{}`}}},
	{name: "harmony: a bare call object in commentary (a forced call)", o: Options{Format: Harmony, Tools: weather},
		text:  `<|channel|>commentary<|message|>{"name": "get_weather", "arguments": {"city": "B"}}`,
		calls: []call{{"get_weather", `{"city":"B"}`}}},
	{name: "harmony: an undeclared recipient is content", o: Options{Format: Harmony, Tools: weather},
		text:    "<|channel|>commentary to=functions.rm_rf<|message|>{}",
		content: "{}", warn: true},
	{name: "harmony: bad arguments are content", o: Options{Format: Harmony, Tools: weather},
		text:    "<|channel|>commentary to=functions.get_time<|message|>{oops",
		content: "{oops", warn: true},
	{name: "harmony: no header at all", o: Options{Format: Harmony, Tools: weather},
		text:    "Just text.",
		content: "Just text."},
	{name: "harmony: thinking dropped", o: Options{Format: Harmony, DropThinking: true},
		text:    "<|channel|>analysis<|message|>secret<|start|>assistant<|channel|>final<|message|>ok",
		content: "ok"},
}

func check(t *testing.T, c parseCase, d Delta, warnings []string, how string) {
	t.Helper()
	var calls []call
	for i, tc := range d.ToolCalls {
		calls = append(calls, call{tc.Name, string(tc.Arguments)})
		if tc.Index != i || tc.ID == "" {
			t.Errorf("%s (%s): call %d has index %d, id %q", c.name, how, i, tc.Index, tc.ID)
		}
	}
	if d.Content != c.content || d.Thinking != c.thinking || !reflect.DeepEqual(calls, c.calls) || (len(warnings) > 0) != c.warn {
		t.Errorf("%s (%s):\n got content %q thinking %q calls %v warnings %v\nwant content %q thinking %q calls %v warn %v",
			c.name, how, d.Content, d.Thinking, calls, warnings, c.content, c.thinking, c.calls, c.warn)
	}
}

func TestParse(t *testing.T) {
	for _, c := range parseCases {
		d, w := Parse(c.o, c.text)
		check(t, c, d, w, "whole")
	}
}

// streamed feeds text in the given pieces and adds up the deltas; it
// fails if content ever holds markup that the whole parse left out.
func streamed(o Options, pieces []string) (Delta, []string) {
	p := NewParser(o)
	var d Delta
	for _, s := range pieces {
		d.Append(p.Add(s))
	}
	d.Append(p.Finish())
	return d, p.Warnings()
}

// Random runs of every format's markup, whitespace of one and of several
// bytes and call JSON, cut at a random place, decide as the whole does
// in every format (the fuzzer explores from the parse cases; this walks
// the markup the cases do not combine).
func TestStreamingRandomMarkup(t *testing.T) {
	pieces := []string{"\v", "\f", "\u0085", "\u00a0", "\r", "\n", " ", "0", "x=1", "all", "get_time", "get_time(", ")",
		`{"nAme":"get_time","pArAmeters":{}}`, `{"name":"get_time","arguments":{}}`, "[", "]", "{", "}", "```json", "```", ";", ",",
		"<|channel|>", "<|message|>", "commentary", "analysis", "final", "<|start|>", "assistant", "<|constrain|>", "json",
		" to=functions.get_time", "<|end|>", "<|call|>", "<|return|>", "<|eom|>", "<|eot|>", " to=self", " to=get_time",
		"<atem:function_calls>", "</atem:function_calls>", `<atem:invoke name="get_time">`, "</atem:invoke>",
		"[ARGS]", "[CALL_ID]"}
	for f := range formatNames {
		for _, m := range markers(f) {
			pieces = append(pieces, m.open, m.close)
		}
	}
	for _, tag := range thinkingTags {
		pieces = append(pieces, tag[0], tag[1])
	}
	r := rand.New(rand.NewPCG(5, 8))
	for n, fails := 0, 0; n < 200000 && fails < 5; n++ {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		text := b.String()
		o := Options{Format: Format(r.IntN(len(formatNames))), Tools: weather, Thinking: r.IntN(2) == 0}
		whole, _ := Parse(o, text)
		i := r.IntN(len(text) + 1)
		parts, _ := streamed(o, []string{text[:i], text[i:]})
		for _, d := range []*Delta{&whole, &parts} {
			for j := range d.ToolCalls {
				d.ToolCalls[j].ID = ""
			}
		}
		if !reflect.DeepEqual(whole, parts) {
			fails++
			t.Errorf("%q in format %v (thinking %v), cut at %d: %+v, whole %+v", text, o.Format, o.Thinking, i, parts, whole)
		}
	}
}

// Cut anywhere, and in random pieces, the stream decides the same.
func TestStreaming(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for _, c := range parseCases {
		for i := 0; i <= len(c.text); i++ {
			d, w := streamed(c.o, []string{c.text[:i], c.text[i:]})
			check(t, c, d, w, "cut at "+string(rune('0'+i%10)))
		}
		for range 20 {
			var pieces []string
			for s := c.text; s != ""; {
				n := min(len(s), 1+r.IntN(5))
				pieces = append(pieces, s[:n])
				s = s[n:]
			}
			d, w := streamed(c.o, pieces)
			check(t, c, d, w, "random pieces")
		}
		// Byte by byte, no delta's content holds markup that the whole
		// parse did not return as content.
		p := NewParser(c.o)
		for i := 0; i < len(c.text); i++ {
			d := p.Add(c.text[i : i+1])
			if d.Content != "" && !strings.Contains(c.content, d.Content) {
				t.Errorf("%s: streamed content %q is not in %q", c.name, d.Content, c.content)
			}
		}
	}
}

// Text that cannot be markup comes out at once, not at the end.
func TestContentStreams(t *testing.T) {
	for _, c := range []struct {
		o           Options
		piece, want string
	}{
		{Options{Format: Hermes, Tools: weather, Thinking: true}, "Hello <tool", "Hello"},
		{Options{Format: Mistral, Tools: weather}, "Sure, [TOOL", "Sure,"},
		{Options{Format: Functionary, Tools: weather}, "all\nHello >>", "Hello"},
		{Options{Format: Functionary, Tools: weather}, "Hello", "Hello"},
		{Options{Format: Llama3, Tools: weather}, "It is 4 {", "It is 4 {"},
		{Options{Thinking: true, StartInThinking: true}, "Let me see </thi", ""},
	} {
		p := NewParser(c.o)
		if d := p.Add(c.piece); d.Content != c.want {
			t.Errorf("%v %q: content %q, want %q", c.o.Format, c.piece, d.Content, c.want)
		}
	}
	p := NewParser(Options{Thinking: true, StartInThinking: true})
	if d := p.Add("Let me see </thi"); d.Thinking != "Let me see" {
		t.Errorf("thinking %q", d.Thinking)
	}
}

// The real templates of model families pick their formats.
func TestDetectFormatRealTemplates(t *testing.T) {
	for file, want := range map[string]Format{
		"llama3.1": Llama3, "llama3.2": Llama3, "llama3.3": Llama3, "qwen2.5": Hermes, "qwen3": Hermes,
		"mistral-nemo": Mistral, "command-r7b": CommandR, "command-r-plus": CommandRPlus, "granite3.3": Granite,
		"deepseek-r1-distill-qwen": DeepSeek, "deepseek-v3.1": DeepSeek, "gemma2": Generic, "phi3.5": Generic,
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", "models", "chattemplate", "testdata", "templates", file+".jinja"))
		if err != nil {
			t.Fatal(err)
		}
		if got := DetectFormat(string(b)); got != want {
			t.Errorf("%s: %v, want %v", file, got, want)
		}
	}
}

func TestDetectFormat(t *testing.T) {
	for tmpl, want := range map[string]Format{
		"{{ '<tool_call>' }}":                           Hermes,
		"[TOOL_CALLS] {{ tools }}":                      Mistral,
		"<|start|>assistant<|channel|>final<|message|>": Harmony,
		"<|python_tag|>":                                Llama3,
		"<|start_header_id|>ipython<|end_header_id|>":   Llama3,
		">>>all":                  Functionary,
		"<function=":              FunctionTag,
		"<tool_call>\n<function=": Hermes,
		"<|START_ACTION|>":        CommandR,
		"<|tool_calls_section_begin|>{{ x }}<|tool_call_begin|>":                                             Kimi,
		"{%- set t = '<minimax:tool_call>' -%}":                                                              MiniMax,
		"'<seed:tool_call>' + '\n<function='":                                                                Seed,
		"{% for m in messages %}{{ m.content }}{% endfor %}":                                                 Generic,
		"{{- '<|tool_call>call:' + function['name'] + '{' -}}":                                               Gemma4,
		"List of tools: <|tool_list_start|>[":                                                                LFM2,
		"{%- set dsml_token = '｜DSML｜' -%}<' + dsml_token + 'tool_calls>":                                    DSML,
		"{{- '<TOOLCALL>[' -}}":                                                                              NemotronV2,
		"{%- set HYTK = ':opensource' %}{%- set t = '<tool_calls{}>'.format(HYTK) %}":                        Hy3,
		"{{- '<|open|>' + tag -}}{{- '<|close|>' + tag + '<|sep|>' -}}{{- '<|end_of_msg|>' -}}":              KimiK3,
		"<tool_call></tool_call> XML tags … <tool_calls>[{\"name\": <function-name-1>}]</tool_calls>":        ToolCallsTag,
		"role_sep=\"<|role_sep|>\\n\", message_sep=\"<|message_sep|>\\n\\n\" … 'function call'":              GigaChat,
		"role_sep=\"<|role_sep|>\\n\", function_call=\"<|function_call|>\" … 'function call'":                GigaChat31,
		"{%- set ns.content = ns.content + ' functools[' + tool.calls | join(', ') + ']' -%}":                FireFunction,
		"{{- '<function name=\"' ~ tool_call.name ~ '\">' }}{{- '<param name=\"' ~ param_name ~ '\">' }}":    MiniCPM5,
		"{%- set ns_token = ']<]minimax[>[' -%}{{- ns_token + '<invoke name=\"' + tool_call.name + '\">' }}": MiniMaxM3,
	} {
		if got := DetectFormat(tmpl); got != want {
			t.Errorf("%q: %v, want %v", tmpl, got, want)
		}
	}
}

// Mistral's own call ids are kept; others get OpenAI-style ids.
func TestCallIDs(t *testing.T) {
	d, _ := Parse(Options{Format: Mistral, Tools: weather}, `[TOOL_CALLS][{"name": "get_time", "arguments": {}, "id": "abc123def"}]`)
	if d.ToolCalls[0].ID != "abc123def" {
		t.Fatal(d.ToolCalls[0].ID)
	}
	d, _ = Parse(Options{Format: Hermes, Tools: weather}, `<tool_call>{"name": "get_time", "arguments": {}}</tool_call>`)
	if id := d.ToolCalls[0].ID; len(id) != 29 || !strings.HasPrefix(id, "call_") {
		t.Fatal(id)
	}
}

func FuzzParser(f *testing.F) {
	for _, c := range parseCases {
		f.Add(c.text, uint8(c.o.Format), uint16(len(c.text)/2), c.o.Thinking)
	}
	// Cut inside a space of more than one byte (U+00A0, U+0085), or next
	// to one Go's strings.TrimSpace knows and JSON does not.
	f.Add("\u00a0{\"name\":\"get_time\",\"parameters\":{}}<|start|>x", uint8(FunctionTag), uint16(1), true)
	f.Add("all\u00a0", uint8(Functionary), uint16(4), false)
	f.Add("\u0085all", uint8(Functionary), uint16(1), true)
	f.Add("\f[TOOL_CALLS]<think>\u00a0", uint8(Generic), uint16(2), true)
	// A Muse <|start|> that opens no header once spun the parser forever.
	f.Add("get_time\v<|start|><|channel|>>>>", uint8(Muse), uint16(3), false)
	f.Add("get_time[/THINK]<|start|><|message|>", uint8(Muse), uint16(34), false)
	f.Add("\r\n<|message|>", uint8(Muse), uint16(8), false)
	f.Fuzz(func(t *testing.T, text string, format uint8, cut uint16, thinking bool) {
		o := Options{Format: Format(int(format) % len(formatNames)), Tools: weather, Thinking: thinking}
		whole, warnings := Parse(o, text)
		i := int(cut) % (len(text) + 1)
		parts, _ := streamed(o, []string{text[:i], text[i:]})
		strip := func(d Delta) Delta {
			for j := range d.ToolCalls {
				d.ToolCalls[j].ID = ""
			}
			return d
		}
		if !reflect.DeepEqual(strip(whole), strip(parts)) {
			t.Fatalf("cut at %d: %+v, whole %+v", i, parts, whole)
		}
		for _, c := range whole.ToolCalls {
			if !json.Valid(c.Arguments) || c.Arguments[0] != '{' {
				t.Fatalf("arguments %s", c.Arguments)
			}
		}
		// Without a warning, no call markup is left in the content.
		if len(warnings) == 0 {
			for _, m := range markers(o.Format) {
				if m.open != "Action:" && strings.Contains(whole.Content, m.open) {
					t.Fatalf("%q in content %q", m.open, whole.Content)
				}
			}
		}
	})
}

// The markup a format's parser reads, which a vocabulary's control
// tokens must print for it.
func TestMarkup(t *testing.T) {
	m := strings.Join(Markup(Options{Format: Mistral, Thinking: true}), " ")
	for _, want := range []string{"[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]"} {
		if !strings.Contains(m, want) {
			t.Errorf("Mistral with thinking: %s, want %s", m, want)
		}
	}
	if m := Markup(Options{Format: Hermes}); strings.Contains(strings.Join(m, " "), "<think>") {
		t.Errorf("Hermes without thinking: %v", m)
	}
}

func TestOpensThinking(t *testing.T) {
	for prompt, want := range map[string]bool{
		"<｜Assistant｜><think>\n":                                           true,
		"<|im_start|>assistant\n<think>\n":                                 true,
		"<｜hy_Assistant:opensource｜><think:opensource>":                    true,
		"[/INST][THINK]":                                                   true,
		"\n<|begin_assistant|>\nHere are my reasoning steps:\n":            true,
		"<｜hy_Assistant:opensource｜><think:opensource></think:opensource>": false,
		"<|im_start|>assistant\n":                                          false,
	} {
		if got := OpensThinking(prompt); got != want {
			t.Errorf("%q: %v, want %v", prompt, got, want)
		}
	}
}
