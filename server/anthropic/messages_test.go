package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/server/infer"
)

// convert reads a messages array (JSON) as a request's messages.
func convert(t *testing.T, msgs string) ([]infer.Message, infer.MediaInput, error) {
	t.Helper()
	var m []MessageParam
	if err := json.Unmarshal([]byte(msgs), &m); err != nil {
		t.Fatal(err)
	}
	return conversation(m, "m", func(string) ([]byte, error) { t.Fatal("no URL is fetched here"); return nil, nil })
}

// A 1×1 PNG.
const png1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// The block types of the current Messages API (issue 41): documents
// with a text or content source and search results, in a user turn and
// in a tool result, reach the model as text in the tags they are given
// in; cache_control and citations on any block are ignored; the blocks
// of Anthropic's server tools echoed back in an assistant turn are
// dropped.
func TestDocumentAndSearchResultBlocks(t *testing.T) {
	msgs, mi, err := convert(t, `[
	 {"role": "user", "content": [
	  {"type": "text", "text": "Summarise.", "cache_control": {"type": "ephemeral"}},
	  {"type": "document", "title": "Notes", "context": "From the wiki", "citations": {"enabled": true},
	   "source": {"type": "text", "media_type": "text/plain", "data": "Tadpoles are frogs."}, "cache_control": {"type": "ephemeral", "ttl": "1h"}},
	  {"type": "search_result", "source": "https://example.com/a", "title": "A", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}]},
	 {"role": "assistant", "content": [
	  {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "frogs"}},
	  {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [{"type": "web_search_result", "url": "https://example.com", "title": "x", "encrypted_content": "abc"}]},
	  {"type": "text", "text": "Looking.", "citations": [{"type": "char_location", "cited_text": "x", "document_index": 0, "start_char_index": 0, "end_char_index": 1}]},
	  {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/a"}}]},
	 {"role": "user", "content": [
	  {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true, "content": [
	   {"type": "text", "text": "see"},
	   {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "`+png1+`"}},
	   {"type": "document", "source": {"type": "content", "content": [{"type": "text", "text": "inner"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "`+png1+`"}}]}},
	   {"type": "search_result", "source": "kb:7", "title": "B", "content": [{"type": "text", "text": "three"}]}]},
	  {"type": "text", "text": "Go on."}]}
	]`)
	if err != nil {
		t.Fatal(err)
	}
	want := []infer.Message{
		{Role: "user", Content: "Summarise.\n<document>\n<title>Notes</title>\n<context>From the wiki</context>\n<document_content>\nTadpoles are frogs.\n</document_content>\n</document>\n" +
			"<search_result>\n<source>https://example.com/a</source>\n<title>A</title>\n<content>\none\ntwo\n</content>\n</search_result>"},
		{Role: "assistant", Content: "Looking.", ToolCalls: []infer.ToolCall{{ID: "toolu_1", Name: "Read", Arguments: json.RawMessage(`{"file_path": "/a"}`)}}},
		{Role: "tool", ToolCallID: "toolu_1", ToolName: "Read", Content: "Error: see\n<document>\n<document_content>\ninner\n</document_content>\n</document>\n" +
			"<search_result>\n<source>kb:7</source>\n<title>B</title>\n<content>\nthree\n</content>\n</search_result>"},
		{Role: "user", Content: "Go on."},
	}
	if len(msgs) != len(want) {
		t.Fatalf("%d messages: %+v", len(msgs), msgs)
	}
	for i := range want {
		g, w := msgs[i], want[i]
		if g.Role != w.Role || g.Content != w.Content || g.ToolCallID != w.ToolCallID || g.ToolName != w.ToolName || len(g.ToolCalls) != len(w.ToolCalls) {
			t.Errorf("message %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	// Two images, both in the tool message: one after "Error: see", one
	// after "inner" inside the document.
	if len(mi.Media) != 2 || len(mi.MessageMedia) != 3 || len(mi.MessageMedia[2]) != 2 {
		t.Fatalf("media %+v", mi.MessageMedia)
	}
	tool := msgs[2].Content
	if a, b := mi.MessageMedia[2][0].Offset, mi.MessageMedia[2][1].Offset; tool[:a] != "Error: see" || !strings.HasSuffix(tool[:b], "\ninner") {
		t.Errorf("image offsets %d, %d in %q", a, b, tool)
	}
	if mi.Media[0].Field != "messages[2].content[0].content[1]" || mi.Media[1].Field != "messages[2].content[0].content[2].source.content[1]" {
		t.Errorf("image fields %q, %q", mi.Media[0].Field, mi.Media[1].Field)
	}
}

// What this server cannot serve is a 400 naming the field and saying
// what to send instead.
func TestBlocksRefused(t *testing.T) {
	for _, c := range []struct{ name, msgs, want string }{
		{"pdf", `[{"role": "user", "content": [{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}}]}]`,
			`messages[0].content[0].source: PDF documents are not supported by this server: send the document's text as a "text" source`},
		{"pdf url", `[{"role": "user", "content": [{"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}}]}]`,
			`messages[0].content[0].source: PDF documents are not supported`},
		{"file", `[{"role": "user", "content": [{"type": "document", "source": {"type": "file", "file_id": "file_1"}}]}]`,
			`messages[0].content[0].source.file_id: the Files API is not available on this server`},
		{"image file", `[{"role": "user", "content": [{"type": "image", "source": {"type": "file", "file_id": "file_1"}}]}]`,
			`messages[0].content[0].source.file_id: the Files API is not available on this server`},
		{"text media type", `[{"role": "user", "content": [{"type": "document", "source": {"type": "text", "media_type": "text/html", "data": "x"}}]}]`,
			`messages[0].content[0].source.media_type: "text/html" is not supported for a text source`},
		{"no source", `[{"role": "user", "content": [{"type": "document"}]}]`, `messages[0].content[0].source: Field required`},
		{"source not an object", `[{"role": "user", "content": [{"type": "document", "source": "x"}]}]`, `messages[0].content[0].source: expected an object`},
		{"search result without source", `[{"role": "user", "content": [{"type": "search_result", "title": "t", "content": [{"type": "text", "text": "x"}]}]}]`,
			`messages[0].content[0].source: Field required`},
		{"search result without title", `[{"role": "user", "content": [{"type": "search_result", "source": "s", "content": [{"type": "text", "text": "x"}]}]}]`,
			`messages[0].content[0].title: Field required`},
		{"search result image", `[{"role": "user", "content": [{"type": "search_result", "source": "s", "title": "t", "content": [{"type": "image"}]}]}]`,
			`messages[0].content[0].content[0]: image blocks are not supported here`},
		{"document in an assistant turn", `[{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "document", "source": {"type": "text", "data": "x"}}]}]`,
			`messages[1].content[0]: document blocks are not supported here: only in a user message's content or a tool result`},
		{"container upload", `[{"role": "user", "content": [{"type": "container_upload", "file_id": "file_1"}]}]`,
			`messages[0].content[0]: container_upload blocks need Anthropic's code execution tool`},
		{"unknown", `[{"role": "user", "content": [{"type": "hologram"}]}]`,
			`messages[0].content[0].type: "hologram" is not supported here: expected text, image, document, search_result and tool_result blocks`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := convert(t, c.msgs)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
