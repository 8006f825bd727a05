module github.com/tadpole-llm/tadpole/compat/ollamaclient

go 1.26.8

require (
	github.com/ollama/ollama v0.24.0
	github.com/tadpole-llm/tadpole v0.0.0
)

require (
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/buger/jsonparser v1.1.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/wk8/go-ordered-map/v2 v2.1.8 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

// The server's own module, for its test models (models/testmodels) and
// the local registry (models/registry/registrytest); pure Go, no cgo.
replace github.com/tadpole-llm/tadpole => ../..
