// Package templatediff holds the chat template differential of issue 35:
// its test renders every chat template of the engine's llama.cpp release
// (the source tree's models/templates/*.jinja, read at test time) through
// Tadpole's POST /apply-template and through llama-server of the same
// release (scripts/llama.sh server, `make llama-server`), for a fixed set
// of conversations, and compares the prompts byte for byte. Each
// difference is either listed with its reason ([Listed]) or fails the
// test. The package's only code is that list, which the parse
// differential's family table (server's TestChatParseDifferential)
// reads too.
//
// The test finds llama-server and the templates through LLAMA_SERVER and
// LLAMA_CPP_SRC (the Makefile sets both), or from the engine's build
// directory in CGO_CPPFLAGS; without a built llama-server it skips,
// unless TADPOLE_REQUIRE_LLAMA_SERVER=1 (CI) makes that a failure.
package templatediff
