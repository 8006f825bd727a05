#!/bin/sh
# build.sh OLLAMA_DIR OUT_DIR [CUDA_ARCHITECTURES]
#
# Builds ggml's CUDA backend as loadable libraries (libggml-cuda.so and the
# libggml-base.so it links) from the pinned github.com/ollama/ollama
# module's sources — its root CMakeLists.txt, CMakePresets.json and
# ml/backend/ggml/ggml — so the backend's ggml is the same one compiled into
# the tadpole binary. The libraries land in OUT_DIR (lib/tadpole beside
# bin/, where tadpole looks for them by default).
#
# Used by `make cuda` and by Dockerfile.cuda; needs nvcc and cmake (and
# uses ninja when present).
set -eu
OL=${1:?usage: build.sh OLLAMA_DIR OUT_DIR [CUDA_ARCHITECTURES]}
OUT=${2:?usage: build.sh OLLAMA_DIR OUT_DIR [CUDA_ARCHITECTURES]}
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
for p in CMakeLists.txt CMakePresets.json ml/backend/ggml/ggml; do
	[ -e "$OL/$p" ] || { echo "make cuda: $OL/$p is missing: is OLLAMA_DIR the pinned module's directory?" >&2; exit 1; }
done

# The module cache is read-only: configure a writable copy of the three
# paths the build needs.
SRC=$BUILD/src
rm -rf "$SRC"
mkdir -p "$SRC/ml/backend/ggml"
cp "$OL/CMakeLists.txt" "$OL/CMakePresets.json" "$SRC/"
cp -R "$OL/ml/backend/ggml/ggml" "$SRC/ml/backend/ggml/"
chmod -R u+w "$SRC"

GEN=""
command -v ninja >/dev/null 2>&1 && GEN="-G Ninja"
echo "make cuda: configuring for CUDA architectures $ARCHS"
# shellcheck disable=SC2086
cmake -S "$SRC" -B "$BUILD/out" $GEN \
	-DCMAKE_BUILD_TYPE=Release \
	-DCMAKE_CUDA_ARCHITECTURES="$ARCHS" \
	-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON \
	-DCMAKE_BUILD_RPATH='$ORIGIN'
cmake --build "$BUILD/out" --target ggml-cuda --parallel "$(nproc 2>/dev/null || echo 4)"

mkdir -p "$OUT"
found=0
for lib in "$BUILD"/out/lib/ollama/libggml-*.so*; do
	[ -e "$lib" ] || continue
	cp -P "$lib" "$OUT/"
	found=1
done
[ "$found" = 1 ] || { echo "make cuda: the build produced no libggml-*.so under $BUILD/out/lib/ollama" >&2; exit 1; }
echo "make cuda: backend libraries in $OUT:"
ls -l "$OUT"
