#!/usr/bin/env bash
# gpu-check.sh — prove Tadpole's GPU path on a CUDA host.
#
# On this (CPU) machine:  make build CPU=x86-64-v3 && make gpu-check-tools
# Carry the repository (with bin/) to the CUDA host, then there:
#   scripts/gpu-check.sh
#
# It builds the CUDA backend with `make cuda` unless lib/tadpole already has
# one (no Go needed: bin/tadpole, bin/genmodel and bin/tadpole-bench are
# built here), writes random-weight 1B Llama models (Q4_0 and Q8_0), starts
# the server and prints: prompt-eval and decode tok/s at 1 and 8 streams on
# the GPU and on the CPU, whether /api/ps shows a full offload
# (size_vram = size), and NVML's memory use next to the scheduler's
# estimate.
set -euo pipefail
cd "$(dirname "$0")/.."
LIB=${LIBDIR:-lib/tadpole}
WORK=${WORK:-$(mktemp -d)}
PORT=${PORT:-11488}
ARCH=${CUDA_ARCHITECTURES:-90}

for b in bin/tadpole bin/genmodel bin/tadpole-bench; do
	[ -x "$b" ] || { echo "$b missing: run 'make build CPU=x86-64-v3 && make gpu-check-tools' on a machine with Go" >&2; exit 1; }
done
if ! ls "$LIB"/libggml-cuda*.so >/dev/null 2>&1; then
	SRC=${LLAMA_SRC:?set LLAMA_SRC to a copy of the llama.cpp tree bin/tadpole was built from (TADPOLE_CACHE/llama.cpp/node-llama-cpp-3.22.1/src on the build machine), or put libggml-cuda.so in $LIB}
	sh third_party/cuda/build.sh "$SRC" "$LIB" "$ARCH"
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version --format=csv

mkdir -p "$WORK/models"
for q in q4_0 q8_0; do
	[ -f "$WORK/models/llama1b-$q.gguf" ] || bin/genmodel -kind llama1b -type "$q" -o "$WORK/models/llama1b-$q.gguf"
done

echo
echo "## Raw engine and runner (no HTTP)"
for q in q4_0 q8_0; do
	echo "### $q on the GPU"
	bin/tadpole-bench -backends "$LIB" -gpu-layers -1 -n 128 -streams 1,8 "$WORK/models/llama1b-$q.gguf"
	echo "### $q on the CPU"
	bin/tadpole-bench -backends "$LIB" -gpu-layers 0 -n 32 -streams 1,8 "$WORK/models/llama1b-$q.gguf"
done

echo
echo "## Server placement"
bin/tadpole serve --host 127.0.0.1:$PORT --models "$WORK/models" --backends "$LIB" > "$WORK/serve.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$PORT/" >/dev/null && break; sleep 0.2; done
for q in q4_0 q8_0; do
	used_before=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1 || echo 0)
	curl -fs "http://127.0.0.1:$PORT/api/generate" -d "{\"model\":\"llama1b-$q\",\"keep_alive\":-1}" >/dev/null
	used_after=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1 || echo 0)
	ps=$(curl -fs "http://127.0.0.1:$PORT/api/ps")
	echo "$q: /api/ps: $(echo "$ps" | python3 -c 'import json,sys; [print(m["name"], "size", m["size"], "size_vram", m["size_vram"], "full offload" if m["size"]==m["size_vram"] or m["tadpole"]["processor"]=="100% GPU" else "PARTIAL", m["tadpole"]["processor"]) for m in json.load(sys.stdin)["models"]]')"
	echo "$q: NVML memory used grew by $((used_after - used_before)) MiB"
	curl -fs "http://127.0.0.1:$PORT/api/generate" -d "{\"model\":\"llama1b-$q\",\"keep_alive\":0}" >/dev/null
done
grep -E "model loaded|GPU backend|device" "$WORK/serve.log" || true
