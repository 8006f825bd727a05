package server

import "github.com/tadpole-llm/tadpole/server/openai"

// MaxTokenizeTokensForTest is openai.MaxTokenizeTokens.
const MaxTokenizeTokensForTest = openai.MaxTokenizeTokens
