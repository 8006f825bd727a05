#!/bin/sh
# build.sh LLAMA_SRC OUT_DIR [CUDA_ARCHITECTURES]
#
# Builds ggml's CUDA backend as loadable libraries (libggml-cuda.so and the
# libggml-base.so it links) from LLAMA_SRC, the llama.cpp source tree the
# tadpole binary links (scripts/llama.sh: the pinned node-llama-cpp
# release, or LLAMA_CPP_DIR), so the backend's ggml is the same one
# compiled into the binary. The libraries land in OUT_DIR (lib/tadpole
# beside bin/, where tadpole looks for them by default).
#
# Used by `make cuda` and by Dockerfile.cuda; needs nvcc and cmake (and
# uses ninja when present).
set -eu
SRC=${1:?usage: build.sh LLAMA_SRC OUT_DIR [CUDA_ARCHITECTURES]}
OUT=${2:?usage: build.sh LLAMA_SRC OUT_DIR [CUDA_ARCHITECTURES]}
ARCHS=${3:-80;86;89;90}
BUILD=${CUDA_BUILD_DIR:-build/cuda}

if ! command -v nvcc >/dev/null 2>&1; then
	echo "make cuda: nvcc not found. Install the CUDA toolkit (nvcc, on PATH) to build the GPU backend." >&2
	echo "make build and make test do not need CUDA: without the backend Tadpole runs on the CPU." >&2
	exit 1
fi
if ! command -v cmake >/dev/null 2>&1; then
	echo "make cuda: cmake not found (3.24 or newer is needed to build the CUDA backend)." >&2
	exit 1
fi
for p in CMakeLists.txt ggml/src/ggml-cuda include/llama.h; do
	[ -e "$SRC/$p" ] || { echo "make cuda: $SRC/$p is missing: is LLAMA_SRC a llama.cpp source tree?" >&2; exit 1; }
done

GEN=""
command -v ninja >/dev/null 2>&1 && GEN="-G Ninja"
echo "make cuda: configuring for CUDA architectures $ARCHS"
# Shared ggml with loadable backends; the CPU backend is not built here
# (the binary links its own), nor llama.cpp's tools.
# shellcheck disable=SC2086
cmake -S "$SRC" -B "$BUILD/out" $GEN \
	-DCMAKE_BUILD_TYPE=Release \
	-DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON -DGGML_CUDA=ON -DGGML_CPU=OFF -DGGML_NATIVE=OFF \
	-DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	-DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DGGML_CCACHE=OFF \
	-DCMAKE_CUDA_ARCHITECTURES="$ARCHS" \
	-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON \
	-DCMAKE_BUILD_RPATH='$ORIGIN'
cmake --build "$BUILD/out" --target ggml-cuda --parallel "$(nproc 2>/dev/null || echo 4)"

mkdir -p "$OUT"
found=0
for lib in $(find "$BUILD/out" -name 'libggml-cuda.so*' -o -name 'libggml-base.so*'); do
	cp -P "$lib" "$OUT/"
	found=1
done
[ "$found" = 1 ] || { echo "make cuda: the build produced no libggml-*.so under $BUILD/out" >&2; exit 1; }
echo "make cuda: backend libraries in $OUT:"
ls -l "$OUT"
