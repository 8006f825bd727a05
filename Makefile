# Tadpole build. The native engine is llama.cpp's static libraries (llama,
# ggml, mtmd), built once by scripts/llama.sh from the llama.cpp release
# that the npm package node-llama-cpp ships (or from LLAMA_CPP_DIR) into a
# cache outside the checkout (TADPOLE_CACHE), and linked by cgo with the
# flags below; every target that compiles Go code depends on `llama` and
# goes through them.

SHELL     := /bin/bash
GO        ?= go
CPU       ?= auto
BIN       ?= bin/tadpole
HOST      ?= 127.0.0.1:11434
DEMO      ?= stories
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

ISA_FLAGS   := $(shell sh scripts/cpuflags.sh $(CPU))
# The llama.cpp build directory (its name keys the release and the flags;
# scripts/llama.sh). LLAMA_CPP_DIR=/path uses a llama.cpp checkout instead
# of the pinned release.
LLAMA_BUILD := $(shell sh scripts/llama.sh dir "$(ISA_FLAGS)")
LLAMA_SRC   := $(LLAMA_BUILD)/src
LLAMA_LIBS  := $(foreach l,mtmd vendor-hash llama ggml ggml-cpu ggml-base,$(LLAMA_BUILD)/lib$(l).a)
# llama-server of the same release and flags (`make llama-server`), and the
# source tree's models/templates: the chat template differential
# (server/templatediff) renders every template through both servers.
export LLAMA_SERVER  := $(shell sh scripts/llama.sh server-bin "$(ISA_FLAGS)")
export LLAMA_CPP_SRC := $(LLAMA_SRC)

export CGO_ENABLED  := 1
export CGO_CPPFLAGS := -I$(LLAMA_SRC)/include -I$(LLAMA_SRC)/ggml/include -I$(LLAMA_SRC)/tools/mtmd -DNDEBUG
export CGO_CFLAGS   := $(ISA_FLAGS)
export CGO_CXXFLAGS := $(ISA_FLAGS)
export CGO_LDFLAGS  := -Wl,--start-group $(LLAMA_LIBS) -Wl,--end-group -lstdc++ -lm -ldl -lpthread

# What the binary was built from (scripts/llama.sh writes build.env); read
# when a recipe runs, after `llama`.
llama_env = $(shell sed -n 's/^$(1)=//p' $(LLAMA_BUILD)/build.env 2>/dev/null)
LDFLAGS = -X 'github.com/tadpole-llm/tadpole/engine.BuildFlags=$(ISA_FLAGS)' \
          -X 'github.com/tadpole-llm/tadpole/engine.Version=$(VERSION)' \
          -X 'github.com/tadpole-llm/tadpole/engine.LlamaCommit=$(call llama_env,LLAMA_COMMIT)' \
          -X 'github.com/tadpole-llm/tadpole/engine.LlamaOrigin=$(call llama_env,LLAMA_ORIGIN)'

CUDA_ARCHITECTURES ?= 80;86;89;90
LIBDIR ?= lib/tadpole


.PHONY: test-one test-short test-agents test-compat
.PHONY: all build run test bench bench-images bench-ci fmt vet deps llama llama-server flags clean cuda gpu-check-tools fuzz fuzz-ci soak attack

all: build

# llama.cpp's static libraries: fetched and built once per release and
# set of flags (minutes, cold), a no-op afterwards (scripts/llama.sh).
llama:
	@sh scripts/llama.sh build "$(ISA_FLAGS)"

# llama-server of the engine's llama.cpp release, CPU only, built once
# into the same cache (scripts/llama.sh server; cold about 27 min on two
# cores, a no-op afterwards). `make test` needs it: the chat template
# differential (server/templatediff) runs against it.
llama-server: llama
	@sh scripts/llama.sh server "$(ISA_FLAGS)" >/dev/null

deps: llama

flags: llama
	@echo "CPU=$(CPU)"
	@echo "CGO_CPPFLAGS=$(CGO_CPPFLAGS)"
	@echo "CGO_CFLAGS=$(CGO_CFLAGS)"
	@echo "CGO_CXXFLAGS=$(CGO_CXXFLAGS)"
	@echo "CGO_LDFLAGS=$(CGO_LDFLAGS)"

build: deps
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tadpole

# Serve the bundled demo model "stories" (stories260K, see models/testdata/NOTICE).
run: build
	@echo "Try:  curl -s http://$(HOST)/api/generate -d '{\"model\":\"$(DEMO)\",\"prompt\":\"Once upon a time\",\"stream\":false,\"options\":{\"temperature\":0,\"num_predict\":30}}'"
	$(BIN) serve --host $(HOST) --models models/demo --data-dir bin/data

# PKG and RUN narrow a run: make test-one PKG=./server RUN=TestEmbed
PKG ?= ./...
RUN ?= .
test: deps vet build llama-server
	$(GO) test -race -count=1 -timeout 30m ./...
	$(COMPAT_TEST)

# Ollama's official Go client (github.com/ollama/ollama/api) against the
# real bin/tadpole serve, in a Go module of its own (compat/ollamaclient)
# so that the server's module never requires Ollama's. Also part of
# `make test`. A few seconds once bin/tadpole is built.
COMPAT_TEST = cd compat/ollamaclient && TADPOLE_BIN=$(abspath $(BIN)) $(GO) test -race -count=1 -timeout 10m ./...
test-compat: build
	$(COMPAT_TEST)

# The short tier (internal/testkit): everything that runs without the
# engine on a model or a peer process, in about a minute once built.
test-short: deps
	$(GO) test -short -count=1 -timeout 5m ./...

test-one: deps
	$(GO) test -race -count=1 -timeout 30m -run '$(RUN)' $(PKG)

# The official coding agents end to end (server/agents_test.go, also part
# of `make test`): Claude Code and Codex from npm (pinned, cached under
# $$TADPOLE_CACHE/agents) against the server with a generated
# tool-calling model, with each request's transcript. About 20 s.
test-agents: deps
	$(GO) test -race -count=1 -timeout 30m -v -run '^TestAgent' ./server

vet: llama
	$(GO) vet ./...
	cd compat/ollamaclient && $(GO) vet ./...

# The Helm chart (deploy/helm/tadpole) rendered by Helm's own engine with
# its default, CPU, GPU and everything-on values; every manifest decoded
# strictly into the Kubernetes API types (the Inference Extension's
# resources checked against their CRD schemas), bad values refused. A Go
# module of its own (deploy/charttest): the server's module never
# depends on Helm or Kubernetes. No cgo, no cluster.
.PHONY: chart-test
chart-test:
	cd deploy/charttest && CGO_ENABLED=0 $(GO) vet ./... && CGO_ENABLED=0 $(GO) test -count=1 ./...

# A short coverage-guided run of the fuzz targets (the seed corpora also
# run in every `make test`; FuzzOllamaDecoders runs its corpus only).
# FuzzEngine drives the real engine in a child server process; Go prints
# its executions ("execs: N").
FUZZTIME ?= 10s
fuzz: llama
	GO=$(GO) scripts/gofuzz.sh FuzzRead ./models/gguf $(FUZZTIME)
	GO=$(GO) scripts/gofuzz.sh FuzzParseModelfile ./models $(FUZZTIME)
	GO=$(GO) scripts/gofuzz.sh FuzzParser ./server/chatparse $(FUZZTIME)
	GO=$(GO) scripts/gofuzz.sh FuzzEngine ./server $(FUZZTIME) -parallel 1

# CI's bounded variant: the pure-Go fuzzers for a count of executions
# each (about 10 s apiece on 2 cores), and FUZZ_N random FuzzEngine inputs
# through the race-built test binary `make test` already compiled (go test
# -fuzz would rebuild the native engine with coverage instrumentation,
# minutes on 2 cores). Counts, not durations: with a duration Go 1.26's
# fuzz coordinator can race its own deadline and fail with a bare "context
# deadline exceeded" and no failing input (go.dev/issue/75804, fixed in Go
# 1.27); a count has no deadline to race.
FUZZ_N ?= 400
FUZZ_SCALE ?= 1
fuzz-ci: llama
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $$((200000 * $(FUZZ_SCALE)))x ./models/gguf
	$(GO) test -run '^$$' -fuzz '^FuzzParseModelfile$$' -fuzztime $$((30000 * $(FUZZ_SCALE)))x ./models
	$(GO) test -run '^$$' -fuzz '^FuzzParser$$' -fuzztime $$((80000 * $(FUZZ_SCALE)))x ./server/chatparse
	set -o pipefail; TADPOLE_ENGINEFUZZ_N=$(FUZZ_N) $(GO) test -race -count=1 -v -run '^TestEngineFuzzRandom$$' ./server \
		| grep -E '^(ok|FAIL|--- FAIL|panic)|TestEngineFuzzRandom: |request:|server stderr'

# A bounded, self-stopping loopback load test of bin/tadpole: every
# dialect, cancellations, keep_alive 0 churn, two models, Anura jobs; it
# ends with a PASS/FAIL verdict (scripts/soak). CI: SOAK_DURATION=60s
# SOAK_CLIENTS=16.
SOAK_DURATION ?= 10m
SOAK_CLIENTS  ?= 64
soak: build
	$(GO) run -ldflags "$(LDFLAGS)" ./scripts/soak -bin $(BIN) -duration $(SOAK_DURATION) -clients $(SOAK_CLIENTS)

# Issue 40's attacks replayed against bin/tadpole on loopback, one row
# each (status, time, the server's peak RSS, another client's longest
# stall), ending with a PASS/FAIL verdict (scripts/attack; about 2 min).
# ATTACK_FLAGS=-quick: smaller sizes; -only TEXT: the rows naming TEXT.
ATTACK_FLAGS ?=
attack: build
	$(GO) run -ldflags "$(LDFLAGS)" ./scripts/attack -bin $(BIN) $(ATTACK_FLAGS)

fmt:
	gofmt -s -w $$(git ls-files '*.go')

BENCH_MODEL ?=
BENCH_FLAGS ?= -http
bench: build
	$(GO) run -ldflags "$(LDFLAGS)" ./scripts/bench $(BENCH_FLAGS) $(BENCH_MODEL)

# Images (issue 23): the HTTP table plus image requests/s and time to
# first token at 1 and 4 streams, and text tok/s alone and beside 2
# clients sending images, on the generated benchmark vision model (a
# smol135m-shaped Q8_0 text model and a ViT-S-sized projector, 256
# positions per image; a model of your own: make bench
# BENCH_FLAGS="-http -images" BENCH_MODEL=NAME.gguf, with
# NAME.mmproj.gguf beside it). BENCH_FLAGS add to or override these.
bench-images: build
	mkdir -p build/bench-vision && $(GO) run ./scripts/genmodel -kind vision-bench -type q8_0 -o build/bench-vision/vbench.gguf
	$(GO) run -ldflags "$(LDFLAGS)" ./scripts/bench -skip-raw -http -images -n 32 -streams 1,4 -modes stream -temperatures 0 -image-size 224 $(BENCH_FLAGS) build/bench-vision/vbench.gguf

# CI's bounded bench: every case of the table once, a few tokens each, on
# the demo model, so the benchmark itself cannot rot (no figures judged);
# then the image section once, tiny, on the generated vision model.
bench-ci: build
	$(GO) run -ldflags "$(LDFLAGS)" ./scripts/bench -http -n 8 -streams 1,2 -reps 1 -prompt 64 -parallel 2
	mkdir -p build/bench-vision && $(GO) run ./scripts/genmodel -kind vision -o build/bench-vision/vision.gguf
	$(GO) run -ldflags "$(LDFLAGS)" ./scripts/bench -skip-raw -http -images -n 4 -streams 1 -modes stream -temperatures 0 -reps 1 -prompt 16 -parallel 2 \
		-image-requests 2 -image-streams 1,2 -image-tokens 2 -image-size 64 -image-window 300ms build/bench-vision/vision.gguf

# GPU backend (optional): ggml's CUDA backend as loadable libraries in
# $(LIBDIR), found by bin/tadpole at start-up. Needs nvcc and cmake.
cuda: llama
	sh third_party/cuda/build.sh "$(LLAMA_SRC)" "$(LIBDIR)" "$(CUDA_ARCHITECTURES)"

# Tools scripts/gpu-check.sh carries to a CUDA host that has no Go.
gpu-check-tools: deps
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/genmodel ./scripts/genmodel
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/tadpole-bench ./scripts/bench

clean:
	rm -rf bin build
