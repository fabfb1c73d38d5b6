#!/usr/bin/env bash
# The README's second command: install what is missing, then build and test
# every variant CI checks, each with warnings as errors:
#   build/ci-cpu       Release, CPU backend                 -> ctest
#   build/ci-cuda      Release, CUDA backend (if nvcc)      -> ctest (without a GPU: the CUDA
#                      tests, which skip, the kernel ops and the device CLI test)
#   build/ci-sanitize  Debug, ASan + UBSan, CPU backend     -> ctest
#   python/tests       over build/ci-cpu's libgrove.so      -> python3 -m unittest
# Prints the time each build took.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs=$(nproc)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# A test that misses data or a GPU skips (exit 77); where they are meant to
# be there, that is a failure instead (tests/test.h, tests/skip.sh): the
# data when ../shared/data exists (CI has it), a GPU when nvidia-smi sees
# one (GPU tests still skip in the builds without CUDA). A value already
# in the environment wins.
if [ -z "${GROVE_REQUIRE_DATA:-}" ] && [ -d ../shared/data ]; then
    export GROVE_REQUIRE_DATA=1
fi
if [ -z "${GROVE_REQUIRE_GPU:-}" ] && command -v nvidia-smi >/dev/null 2>&1 &&
    nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    export GROVE_REQUIRE_GPU=1
fi
echo "== GROVE_REQUIRE_DATA=${GROVE_REQUIRE_DATA:-0} GROVE_REQUIRE_GPU=${GROVE_REQUIRE_GPU:-0}" >&2

variant() { # NAME [ctest -R REGEX, after --tests] CMAKE_ARGS...
    local name=$1; shift
    local only=""
    if [ "${1:-}" = "--tests" ]; then only=$2; shift 2; fi
    local t0=$SECONDS
    echo "== $name: configure and build" >&2
    cmake -S . -B "build/$name" -DGROVE_WERROR=ON "$@" >"build-$name.log" 2>&1 ||
        { cat "build-$name.log"; exit 1; }
    cmake --build "build/$name" -j"$jobs" >>"build-$name.log" 2>&1 ||
        { cat "build-$name.log"; exit 1; }
    echo "== $name: built in $((SECONDS - t0)) s" >&2
    t0=$SECONDS
    if [ -n "$only" ]; then
        (cd "build/$name" && ctest --output-on-failure -j"$jobs" -R "$only")
    else
        (cd "build/$name" && ctest --output-on-failure -j"$jobs")
    fi
    echo "== $name: tests took $((SECONDS - t0)) s" >&2
}

mkdir -p build
variant ci-cpu -DCMAKE_BUILD_TYPE=Release -DGROVE_CUDA=OFF
# The Python package (python/) over the ci-cpu build's libgrove.so and
# grove binary. Debian's python3 (deps.sh installs its numpy and msgpack),
# named by path: a python3 earlier on PATH may lack them.
t0=$SECONDS
echo "== python: tests over build/ci-cpu/libgrove.so" >&2
GROVE_LIB="$PWD/build/ci-cpu/libgrove.so" GROVE_BIN="$PWD/build/ci-cpu/grove" \
    /usr/bin/python3 -m unittest discover -s python/tests -t python
echo "== python: tests took $((SECONDS - t0)) s" >&2
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    if [ "${GROVE_REQUIRE_GPU:-0}" = 1 ]; then
        variant ci-cuda -DCMAKE_BUILD_TYPE=Release -DGROVE_CUDA=ON
    else
        # No GPU: every CPU test already ran in ci-cpu, and the CUDA tests
        # skip. What this build adds is that it compiles, that its GPU
        # tests skip cleanly, and that its CPU fallback behaves: the CUDA
        # tests, the kernel ops and cli_device_cuda (--device cuda refused,
        # auto on the CPU). Not the whole cli test: each grove process of
        # this build spends about a second in libcublasLt's start-up, which
        # made that one test 156 s here.
        variant ci-cuda --tests 'cuda|^kernels_ops$|^kernels_tensor$' \
            -DCMAKE_BUILD_TYPE=Release -DGROVE_CUDA=ON
    fi
else
    echo "== ci-cuda: skipped, no nvcc on PATH or in /usr/local/cuda/bin" >&2
fi
# without MPI: OpenMPI's own allocations would read as leaks under ASan
variant ci-sanitize -DCMAKE_BUILD_TYPE=Debug -DGROVE_CUDA=OFF -DGROVE_SANITIZE=ON -DGROVE_MPI=OFF
# Every reader's libFuzzer target (tests/fuzz/: replays, checkpoints, the
# treebank and its zip path, the PTB corpus, the OCN and LM configs, the
# syneval TSV, the ListOps, logic and SST readers), each for a few seconds from its seeds, where clang is
# present. A crash fails the run and its input is kept in
# tests/fuzz/regressions/NAME/, which ctest replays in every build from
# then on: fix the reader, then commit the input.
if command -v clang >/dev/null 2>&1; then
    t0=$SECONDS
    fz=build/ci-fuzz
    # NAME:SECONDS; about 80 s in all. The targets that take a path write
    # each input to a scratch file (in memory where /dev/shm exists).
    targets="replay_reader:18 checkpoint:12 treebank:12 corpus:10 ocn_config:8 nlp_text:8 nlp_data:10"
    echo "== ci-fuzz: configure and build (clang, libFuzzer)" >&2
    CC=clang cmake -S . -B "$fz" -DGROVE_WERROR=ON -DGROVE_CUDA=OFF \
        -DGROVE_MPI=OFF -DGROVE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        >build-ci-fuzz.log 2>&1 || { cat build-ci-fuzz.log; exit 1; }
    # shellcheck disable=SC2046
    cmake --build "$fz" -j"$jobs" --target $(for t in $targets; do
        echo "fuzz_${t%%:*}"; done) >>build-ci-fuzz.log 2>&1 ||
        { cat build-ci-fuzz.log; exit 1; }
    echo "== ci-fuzz: built in $((SECONDS - t0)) s" >&2
    scratch=/tmp
    [ -d /dev/shm ] && [ -w /dev/shm ] && scratch=/dev/shm
    for t in $targets; do
        name=${t%%:*} secs=${t##*:}
        work="$fz/run/$name"
        rm -rf "$work"
        mkdir -p "$work/corpus" "$work/crashes"
        for d in "tests/fuzz/seeds/$name" "tests/fuzz/regressions/$name"; do
            if [ -d "$d" ]; then cp "$d"/* "$work/corpus/"; fi
        done
        if [ "$name" = replay_reader ]; then
            cp tests/fixtures/replays/*.replay "$work/corpus/"
        fi
        if ! TMPDIR=$scratch "$fz/tests/fuzz/fuzz_$name" \
            -max_total_time="$secs" -rss_limit_mb=2048 \
            -artifact_prefix="$work/crashes/" "$work/corpus" \
            >"$work/fuzz.log" 2>&1; then
            tail -40 "$work/fuzz.log"
            mkdir -p "tests/fuzz/regressions/$name"
            for c in "$work"/crashes/*; do
                [ -f "$c" ] && cp "$c" "tests/fuzz/regressions/$name/" &&
                    echo "== ci-fuzz: kept tests/fuzz/regressions/$name/$(basename "$c")" >&2
            done
            exit 1
        fi
        echo "== ci-fuzz: $name: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$work/fuzz.log"), no crash" >&2
    done
    echo "== ci-fuzz: $((SECONDS - t0)) s in all" >&2
else
    echo "== ci-fuzz: skipped, no clang" >&2
fi
rm -f build-ci-*.log
