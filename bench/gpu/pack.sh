#!/usr/bin/env bash
# Prepares what a device call carries (bench/gpu/README.md):
#   .devbin/   grove, libgrove_cuda.so and the CUDA test binaries of a CUDA
#              build, with cuda_tests.txt (every ctest whose name has "cuda")
#   .devpack/libs.tar.xz  the shared libraries they need that a GPU image
#              lacks (SDL2, libpng, msgpack-c, OpenBLAS, libzip and theirs;
#              not the C and C++ libraries', not CUDA's), compressed to fit the
#              call's 64 MiB
#   bash bench/gpu/pack.sh [BUILD_DIR] [EXTRA_TEST_BINARY...]
# BUILD_DIR (default build/gpu) configured with -DGROVE_CUDA=ON
# -DGROVE_MPI=OFF -DCMAKE_CUDA_ARCHITECTURES=90 and built.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/gpu}
shift || true
rm -rf .devbin .devpack
mkdir -p .devbin .devpack
bins=(grove tests/kernels/test_kernels_ops tests/agents/test_agents_ocn_cuda
      tests/agents/test_agents_ppo_cuda tests/nlp/test_nlp_lm_cuda
      tests/nlp/test_nlp_om_cuda tests/agents/test_agents_ompn_cuda
      tests/agents/test_agents_compile_cuda tests/kernels/test_kernels_attention
      tests/nlp/test_nlp_fasttrees_cuda "$@")
# every CUDA test of the build (ctest names with "cuda"), as
# NAME<TAB>ENV<TAB>COMMAND lines (ENV - when none) with the build folder's paths made
# relative to .devbin; device_check.sh runs them all
abs=$(cd "$build" && pwd)
(cd "$build" && ctest --show-only=json-v1) | /usr/bin/python3 -c '
import json, shlex, sys
abs_build = sys.argv[1]
for t in json.load(sys.stdin)["tests"]:
    if "cuda" not in t["name"] or "command" not in t:
        continue
    cmd = [c.replace(abs_build + "/", ".devbin/") for c in t["command"]]
    env = "-"  # a field of its own: bash read collapses two tabs
    for p in t.get("properties", []):
        if p["name"] == "ENVIRONMENT":
            env = " ".join(p["value"])
    print("%s\t%s\t%s" % (t["name"], env, shlex.join(cmd)))
' "$abs" >.devbin/cuda_tests.txt
while IFS=$'\t' read -r _ _ cmd; do
    for w in $cmd; do
        case $w in .devbin/*) [ -f "$build/${w#.devbin/}" ] && bins+=("${w#.devbin/}") ;; esac
    done
done <.devbin/cuda_tests.txt
for b in "${bins[@]}"; do
    mkdir -p ".devbin/$(dirname "$b")"
    cp "$build/$b" ".devbin/$b"
done
# the CUDA backend, which grove loads on first GPU use (kernels/README.md)
cp "$build/libgrove_cuda.so" .devbin/
echo "$(wc -l <.devbin/cuda_tests.txt) CUDA tests listed in .devbin/cuda_tests.txt"
libs=$(mktemp -d)
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so|libcudart\.so|libcublas\.so|libcublasLt\.so)'
for b in "${bins[@]}"; do
    ldd ".devbin/$b" | awk '/=> \//{print $1, $3}' | while read -r name path; do
        if [[ $name =~ $skip ]]; then continue; fi
        [ -e "$libs/$name" ] || cp -L "$path" "$libs/$name"
    done
done
strip --strip-unneeded "$libs"/* 2>/dev/null || true
tar -C "$libs" -cf - . | xz -6 -T2 >.devpack/libs.tar.xz
rm -rf "$libs"
du -sh .devbin .devpack
