#!/usr/bin/env bash
# Runs kernels/attention_fused_cuda.cu's kernels on the host (no GPU, no
# nvcc): the file with its <<<>>> launches rewritten to emu_launch, built
# with g++, checked against a double truth (fused_attention_emu.cpp).
# About 1 CPU-minute of user time and a few of system time (a barrier per
# shuffle among 256 threads): a manual check, not a ctest.
#   bash bench/gpu/emulate/run.sh [N]   (N: only the first N cases)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e 's|#include <cuda_runtime.h>|#include "emu.h"|' \
    -e 's/\(k_fused_[a-z_]*\)<<<\(.*\), kBlock>>>(/EMU_LAUNCH(\1, \2, kBlock, /' \
    "$root/kernels/attention_fused_cuda.cu" >"$tmp/fused.cpp"
grep -q '<<<' "$tmp/fused.cpp" && { echo "run.sh: a launch was not rewritten" >&2; exit 1; }
g++ -std=c++17 -O1 -Wall -Wno-unknown-pragmas -I"$root" -I"$here" \
    -DGROVE_HAVE_CUDA_BACKEND=1 "$tmp/fused.cpp" \
    "$here/fused_attention_emu.cpp" -lpthread -lm -o "$tmp/emu"
"$tmp/emu" "$@"
