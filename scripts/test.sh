#!/usr/bin/env bash
# The README's second command: install what is missing, then build and test
# every variant CI checks, each with warnings as errors:
#   build/ci-cpu       Release, CPU backend                 -> ctest
#   build/ci-cuda      Release, CUDA backend (if nvcc)      -> ctest (GPU tests skip without a GPU)
#   build/ci-sanitize  Debug, ASan + UBSan, CPU backend     -> ctest
# Prints the time each build took.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs=$(nproc)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

variant() {
    local name=$1; shift
    local t0=$SECONDS
    echo "== $name: configure and build" >&2
    cmake -S . -B "build/$name" -DGROVE_WERROR=ON "$@" >"build-$name.log" 2>&1 ||
        { cat "build-$name.log"; exit 1; }
    cmake --build "build/$name" -j"$jobs" >>"build-$name.log" 2>&1 ||
        { cat "build-$name.log"; exit 1; }
    echo "== $name: built in $((SECONDS - t0)) s" >&2
    t0=$SECONDS
    (cd "build/$name" && ctest --output-on-failure -j"$jobs")
    echo "== $name: tests took $((SECONDS - t0)) s" >&2
}

mkdir -p build
variant ci-cpu -DCMAKE_BUILD_TYPE=Release -DGROVE_CUDA=OFF
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    variant ci-cuda -DCMAKE_BUILD_TYPE=Release -DGROVE_CUDA=ON
else
    echo "== ci-cuda: skipped, no nvcc on PATH or in /usr/local/cuda/bin" >&2
fi
variant ci-sanitize -DCMAKE_BUILD_TYPE=Debug -DGROVE_CUDA=OFF -DGROVE_SANITIZE=ON
rm -f build-ci-*.log
