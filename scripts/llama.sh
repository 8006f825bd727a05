#!/bin/sh
# llama.sh — gets and builds the llama.cpp the engine links (issue 34).
#
#   sh scripts/llama.sh dir   "ISA FLAGS"   prints the build directory (no work)
#   sh scripts/llama.sh build "ISA FLAGS"   makes sure that directory is built
#   sh scripts/llama.sh server "ISA FLAGS"  builds llama-server of the same
#                                           release (once), prints its path
#   sh scripts/llama.sh server-bin "ISA FLAGS"  prints that path (no work)
#
# The sources: the llama.cpp release that the npm package node-llama-cpp
# ships as a git bundle (llama/gitRelease.bundle, its tag in
# llama/llama.cpp.info.json), fetched with `npm pack`, checked against the
# package's published sha512 integrity and cloned once per release. Or, with
# LLAMA_CPP_DIR set, a llama.cpp checkout of the user's, whose release must
# be one the binding supports (SUPPORTED below).
#
# Everything lives in a cache directory outside the checkout,
# ${TADPOLE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tadpole}, so a second
# clone of the repository reuses it. A build directory is named by the
# release, the commit and a hash of the compiler flags and CMake options:
# Go's build cache does not see the content of the libraries and headers
# cgo uses, but it sees their paths, so a different engine is a different
# path. A finished build leaves a stamp (build.env); a later run that finds
# it does nothing.
#
# CMake builds static libraries of llama, ggml (base + CPU backend) and mtmd
# only: ggml's CPU ISA options follow the -m flags scripts/cpuflags.sh
# chose (never -march=native, never AMX), CPU repack on, no OpenMP (ggml's
# own thread pool), no curl/OpenSSL, no tools, tests, examples or server.
set -eu

NLC_VERSION=3.22.1
NLC_INTEGRITY=sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJJiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw==
# Releases the binding supports: llama.cpp's semver releases v0.5.x.
SUPPORTED_MIN=0.5.0
SUPPORTED_BELOW=0.6.0
SUPPORTED="v0.5.x (>= v$SUPPORTED_MIN, < v$SUPPORTED_BELOW)"
# Bump when the CMake options below change: it is part of the build key.
RECIPE=1

cmd=${1:-build}
isa=${2:-}
cache=${TADPOLE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tadpole}
jobs=${LLAMA_JOBS:-$(nproc 2>/dev/null || echo 2)}

die() { echo "llama.sh: $*" >&2; exit 1; }
log() { echo "llama.sh: $*" >&2; }

# CMake options from the ISA flags: ggml-cpu spells out the same -m flags
# from its GGML_* options.
cmake_isa() {
	o="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_AVX_VNNI=OFF"
	for f in sse4.2:SSE42 avx:AVX avx2:AVX2 f16c:F16C fma:FMA bmi2:BMI2 avx512f:AVX512 \
		avx512vbmi:AVX512_VBMI avx512vnni:AVX512_VNNI avx512bf16:AVX512_BF16; do
		flag=${f%%:*} opt=${f#*:}
		case " $isa " in
		*" -m$flag "*) o="$o -DGGML_$opt=ON" ;;
		*) o="$o -DGGML_$opt=OFF" ;;
		esac
	done
	echo "$o"
}

CMAKE_OPTS="-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
 -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
 -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_MTMD=ON -DLLAMA_BUILD_IS_DEV=OFF \
 -DLLAMA_OPENSSL=OFF -DLLAMA_SUBPROCESS=OFF -DMTMD_VIDEO=OFF \
 -DGGML_OPENMP=OFF -DGGML_CPU_REPACK=ON -DGGML_LLAMAFILE=ON -DGGML_CCACHE=OFF -DGGML_BACKEND_DL=OFF \
 -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF $(cmake_isa)"

hash() { printf '%s' "$*" | sha256sum | cut -c1-12; }

# release DIR: "0.5.0" from llama.cpp's CMakeLists.txt (LLAMA_VERSION_*),
# empty for a tree from before the semver releases (bNNNN build tags).
release() {
	awk '/^set\(LLAMA_VERSION_(MAJOR|MINOR|PATCH) /{gsub(/\)/,"",$2); v[$1]=$2}
		END{ if (v["set(LLAMA_VERSION_MAJOR"]!="") print v["set(LLAMA_VERSION_MAJOR"] "." v["set(LLAMA_VERSION_MINOR"] "." v["set(LLAMA_VERSION_PATCH"] }' "$1/CMakeLists.txt"
}

# vnum 0.5.0 -> 5000 comparable integer (major*1e6+minor*1e3+patch).
vnum() { echo "$1" | awk -F. '{printf "%d\n", $1*1000000+$2*1000+$3}'; }

check_release() { # dir
	rel=$(release "$1")
	if [ -z "$rel" ]; then
		b=$(git -C "$1" describe --tags 2>/dev/null || echo "of an unknown release")
		die "$1 is llama.cpp $b (no LLAMA_VERSION_* in its CMakeLists.txt: from before the semver releases); the engine supports $SUPPORTED"
	fi
	n=$(vnum "$rel")
	if [ "$n" -lt "$(vnum $SUPPORTED_MIN)" ] || [ "$n" -ge "$(vnum $SUPPORTED_BELOW)" ]; then
		die "$1 is llama.cpp v$rel; the engine supports $SUPPORTED"
	fi
}

# Where the sources are and what they are: sets src, origin, key.
if [ -n "${LLAMA_CPP_DIR:-}" ]; then
	src=$(cd "$LLAMA_CPP_DIR" 2>/dev/null && pwd) || die "LLAMA_CPP_DIR=$LLAMA_CPP_DIR: no such directory"
	[ -f "$src/include/llama.h" ] && [ -f "$src/CMakeLists.txt" ] || die "LLAMA_CPP_DIR=$src is not a llama.cpp source tree (no include/llama.h)"
	head=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo nogit)
	# A tree with local changes: its diff (and its untracked files' names)
	# is part of the key too, so an edit is a build of its own.
	dirty=$( (git -C "$src" diff HEAD; git -C "$src" ls-files --others --exclude-standard) 2>/dev/null | sha256sum | cut -c1-12)
	origin="LLAMA_CPP_DIR=$src"
	key="dir-$(hash "$src")-$(hash "$head $dirty $RECIPE $isa $CMAKE_OPTS")"
else
	base="$cache/llama.cpp/node-llama-cpp-$NLC_VERSION"
	src="$base/src"
	origin="npm node-llama-cpp@$NLC_VERSION"
	key="nlc$NLC_VERSION-$(hash "$RECIPE $isa $CMAKE_OPTS")"
fi
build="$cache/llama.cpp/build/$key"

# llama-server of the engine's own release (issue 35: the chat template
# differential runs Tadpole's renderer against it). A CMake build of its
# own beside the engine's, from the same sources and ISA flags: CPU only,
# common + tools on for the server target alone, no UI assets (no npm, no
# Hugging Face download), no curl/OpenSSL. Keyed like the engine's build
# plus its own recipe number; stamped (server.env) when finished.
SERVER_RECIPE=1
SERVER_OPTS="-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
 -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF \
 -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_MTMD=ON -DLLAMA_BUILD_IS_DEV=OFF \
 -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
 -DLLAMA_SUBPROCESS=OFF -DMTMD_VIDEO=OFF -DLLAMA_LLGUIDANCE=OFF \
 -DGGML_OPENMP=OFF -DGGML_CPU_REPACK=ON -DGGML_LLAMAFILE=ON -DGGML_CCACHE=OFF -DGGML_BACKEND_DL=OFF \
 -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF $(cmake_isa)"
server_build="$build-server$SERVER_RECIPE-$(hash "$SERVER_RECIPE $isa $SERVER_OPTS")"

case "$cmd" in
dir)
	echo "$build"
	exit 0
	;;
server-bin)
	echo "$server_build/llama-server"
	exit 0
	;;
build | server) ;;
*) die "usage: llama.sh dir|build|server|server-bin ISA_FLAGS" ;;
esac

if [ "$cmd" = server ] && [ -f "$server_build/server.env" ] && [ -x "$server_build/llama-server" ]; then
	echo "$server_build/llama-server"
	exit 0
fi
if [ "$cmd" = build ] && [ -f "$build/build.env" ] && [ -f "$build/libllama.a" ]; then
	exit 0
fi

# The npm package: packed, checked against its integrity, its bundle cloned.
if [ -z "${LLAMA_CPP_DIR:-}" ] && [ ! -f "$src/.tadpole-release" ]; then
	command -v npm >/dev/null || die "npm is needed to fetch node-llama-cpp@$NLC_VERSION (apt-get install npm), or set LLAMA_CPP_DIR"
	command -v git >/dev/null || die "git is needed to clone llama.cpp's bundle"
	mkdir -p "$base"
	tgz="$base/node-llama-cpp-$NLC_VERSION.tgz"
	if [ ! -f "$tgz" ]; then
		log "fetching node-llama-cpp@$NLC_VERSION with npm (llama.cpp's sources)"
		tmp=$(mktemp -d "$base/pack.XXXXXX")
		(cd "$tmp" && npm pack --silent "node-llama-cpp@$NLC_VERSION" >/dev/null) || { rm -rf "$tmp"; die "npm pack node-llama-cpp@$NLC_VERSION failed"; }
		mv "$tmp/node-llama-cpp-$NLC_VERSION.tgz" "$tgz.part"
		rm -rf "$tmp"
	else
		cp "$tgz" "$tgz.part"
	fi
	got="sha512-$(openssl dgst -sha512 -binary "$tgz.part" | base64 | tr -d '\n')"
	if [ "$got" != "$NLC_INTEGRITY" ]; then
		rm -f "$tgz.part" "$tgz"
		die "node-llama-cpp-$NLC_VERSION.tgz: integrity $got, want $NLC_INTEGRITY (removed; run again)"
	fi
	mv "$tgz.part" "$tgz"
	rm -rf "$base/pkg" "$src"
	mkdir -p "$base/pkg"
	tar -xzf "$tgz" -C "$base/pkg" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
	tag=$(sed -n 's/.*"tag": *"\([^"]*\)".*/\1/p' "$base/pkg/package/llama/llama.cpp.info.json")
	git -c advice.detachedHead=false clone -q "$base/pkg/package/llama/gitRelease.bundle" "$src.part"
	rm -rf "$base/pkg"
	[ "v$(release "$src.part")" = "$tag" ] || die "the bundle's CMakeLists.txt says v$(release "$src.part"), its info file $tag"
	echo "$tag" >"$src.part/.tadpole-release"
	mv "$src.part" "$src"
fi
check_release "$src"

command -v cmake >/dev/null || die "cmake is needed to build llama.cpp (apt-get install cmake)"
rel="v$(release "$src")"
commit=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)

if [ "$cmd" = server ]; then
	start=$(date +%s)
	log "building llama-server $rel ($origin) in $server_build: many minutes, once"
	mkdir -p "$server_build"
	# shellcheck disable=SC2086
	cmake -S "$src" -B "$server_build/cmake" $SERVER_OPTS -DCMAKE_C_FLAGS="$isa" -DCMAKE_CXX_FLAGS="$isa" >"$server_build/cmake.log" 2>&1 ||
		{ tail -n 30 "$server_build/cmake.log" >&2; die "cmake configure (server) failed (log: $server_build/cmake.log)"; }
	cmake --build "$server_build/cmake" -j "$jobs" --target llama-server >>"$server_build/cmake.log" 2>&1 ||
		{ tail -n 30 "$server_build/cmake.log" >&2; die "cmake build (server) failed (log: $server_build/cmake.log)"; }
	bin=$(find "$server_build/cmake" -type f -name llama-server -perm -u+x | head -n 1)
	[ -n "$bin" ] || die "llama-server not built (log: $server_build/cmake.log)"
	ln -sf "$bin" "$server_build/llama-server"
	cat >"$server_build/server.env" <<EOF
LLAMA_RELEASE=$rel
LLAMA_COMMIT=$commit
LLAMA_ORIGIN=$origin
EOF
	end=$(date +%s)
	log "llama-server $rel built in $((end - start)) s"
	echo "$server_build/llama-server"
	exit 0
fi

start=$(date +%s)
[ -f "$build/build.env" ] || log "building llama.cpp $rel ($origin) in $build: a few minutes, once"
mkdir -p "$build"
# shellcheck disable=SC2086
cmake -S "$src" -B "$build/cmake" $CMAKE_OPTS -DCMAKE_C_FLAGS="$isa" -DCMAKE_CXX_FLAGS="$isa" >"$build/cmake.log" 2>&1 ||
	{ tail -n 30 "$build/cmake.log" >&2; die "cmake configure failed (log: $build/cmake.log)"; }
cmake --build "$build/cmake" -j "$jobs" --target llama ggml ggml-base ggml-cpu mtmd >>"$build/cmake.log" 2>&1 ||
	{ tail -n 30 "$build/cmake.log" >&2; die "cmake build failed (log: $build/cmake.log)"; }

# The archives, in one flat directory, in link order.
for lib in mtmd vendor-hash llama ggml ggml-cpu ggml-base; do
	a=$(find "$build/cmake" -name "lib$lib.a" | head -n 1)
	[ -n "$a" ] || die "lib$lib.a not built (log: $build/cmake.log)"
	ln -sf "$a" "$build/lib$lib.a"
done
ln -sfn "$src" "$build/src"
cat >"$build/build.env" <<EOF
LLAMA_RELEASE=$rel
LLAMA_COMMIT=$commit
LLAMA_ORIGIN=$origin
EOF
end=$(date +%s)
[ "$end" -gt "$((start + 5))" ] && log "llama.cpp $rel built in $((end - start)) s"
exit 0
