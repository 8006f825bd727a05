package engine

// #include <stdlib.h>
// #include "llama.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// ChatMessage is one turn of a conversation.
type ChatMessage struct {
	Role    string
	Content string
}

// ChatMLTemplate is the template used when a model has none.
const ChatMLTemplate = "chatml"

// ApplyChatTemplate formats messages with tmpl (a Jinja template string or
// the name of one of llama.cpp's built-in templates) and, if addAssistant,
// ends with the opening of an assistant turn. An empty tmpl uses the
// model's own template, or ChatML when it has none. llama.cpp recognises
// templates by their shape; it does not run Jinja.
func (m *Model) ApplyChatTemplate(tmpl string, msgs []ChatMessage, addAssistant bool) (string, error) {
	if tmpl == "" {
		tmpl = m.Meta.ChatTemplate
	}
	return FormatChat(tmpl, msgs, addAssistant)
}

// FormatChat formats messages with llama.cpp's built-in formatter for
// tmpl, which it recognises by shape (a Jinja template string) or by name
// ("chatml", "llama3", …); an empty tmpl is ChatML. It needs no model.
// If addAssistant, the text ends with the opening of an assistant turn.
func FormatChat(tmpl string, msgs []ChatMessage, addAssistant bool) (string, error) {
	if tmpl == "" {
		tmpl = ChatMLTemplate
	}
	ctmpl := C.CString(tmpl)
	defer C.free(unsafe.Pointer(ctmpl))
	cmsgs := make([]C.struct_llama_chat_message, len(msgs))
	var frees []unsafe.Pointer
	defer func() {
		for _, p := range frees {
			C.free(p)
		}
	}()
	size := 64
	for i, msg := range msgs {
		r, c := C.CString(msg.Role), C.CString(msg.Content)
		frees = append(frees, unsafe.Pointer(r), unsafe.Pointer(c))
		cmsgs[i] = C.struct_llama_chat_message{role: r, content: c}
		size += 2 * (len(msg.Role) + len(msg.Content) + 16)
	}
	var first *C.struct_llama_chat_message
	if len(cmsgs) > 0 {
		first = &cmsgs[0]
	}
	for {
		buf := make([]byte, size)
		n := int(C.llama_chat_apply_template(ctmpl, first, C.size_t(len(cmsgs)), C.bool(addAssistant), (*C.char)(unsafe.Pointer(&buf[0])), C.int32_t(size)))
		if n < 0 {
			return "", fmt.Errorf("chat template not supported by llama.cpp's built-in templates")
		}
		if n <= size {
			return string(buf[:n]), nil
		}
		size = n
	}
}
