#!/bin/sh
# cpuflags.sh LEVEL — prints the C compiler flags for ggml's CPU backend.
#
# LEVEL is one of:
#   auto      (default) pick from this host's /proc/cpuinfo: avx512 when the
#             CPU has AVX-512 F/CD/VL/DQ/BW, else avx2 when it has
#             AVX2/FMA/F16C/BMI2, else x86-64-v2.
#   avx512    AVX-512 with VBMI/VNNI/BF16 where the host has them (auto) or
#             all of them (explicit).
#   avx2 | x86-64-v3   Haswell-level AVX2/FMA/F16C/BMI2: the portable level
#             for binaries meant for other machines.
#   x86-64-v2 SSE4.2 only.
#
# The flags are spelled out as -m options the way ggml's own CPU variants
# are; never -march=native (measured slower here, see ARCHITECTURE.md) and
# never AMX (its sources are not in the Go package and it crashes on these
# virtual machines).
set -eu
level=${1:-auto}
flags=""
has() { grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | tr ' ' '\n' | grep -qx "$1"; }

v2="-msse4.2"
v3="$v2 -mavx -mf16c -mavx2 -mbmi2 -mfma"
avx512base="$v3 -mavx512f -mavx512cd -mavx512vl -mavx512dq -mavx512bw"

case "$(uname -m)" in
x86_64|amd64) ;;
*) echo "-O3"; exit 0 ;;
esac

case "$level" in
auto)
	if has avx512f && has avx512cd && has avx512vl && has avx512dq && has avx512bw; then
		flags="$avx512base"
		has avx512vbmi && flags="$flags -mavx512vbmi"
		has avx512_vnni && flags="$flags -mavx512vnni"
		has avx512_bf16 && flags="$flags -mavx512bf16"
	elif has avx2 && has fma && has f16c && has bmi2; then
		flags="$v3"
	else
		flags="$v2"
	fi ;;
avx512) flags="$avx512base -mavx512vbmi -mavx512vnni -mavx512bf16" ;;
avx2|x86-64-v3) flags="$v3" ;;
x86-64-v2) flags="$v2" ;;
*) echo "cpuflags.sh: unknown CPU level '$level' (auto, avx512, avx2, x86-64-v3, x86-64-v2)" >&2; exit 2 ;;
esac
echo "-O3 $flags"
