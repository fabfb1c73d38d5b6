#!/usr/bin/env bash
# One call on a lent GPU machine: the CUDA parity tests, then the kernel and
# Ordered Memory benchmarks against PyTorch on the same GPU (README.md).
# Runs from the repository root there, over the CUDA build and libraries
# that pack.sh put in .devbin and .devpack, both carried with the call:
#   bash bench/gpu/device_check.sh [EXTRA_TEST_BINARY...]
# (extra binaries as paths under .devbin). Logs go to $OUT.
set -u
root=$PWD
out=${OUT:-/tmp/grove-device}
mkdir -p "$out/logs"
exec > >(tee "$out/device.log") 2>&1
# The build records absolute paths of this checkout (fixtures, the
# benchmark scripts): make them resolve there.
if [ "$root" != /work/main ] && [ ! -e /work/main ]; then
    mkdir -p /work && ln -s "$root" /work/main
fi
bin=.devbin
libs=/tmp/grove-devlibs
mkdir -p "$libs"
tar -C "$libs" -xJf .devpack/libs.tar.xz 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        .devpack/libs.tar.xz "$libs"
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -e "$d/libcublas.so.13" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
if ldd $bin/grove | grep -q "libcublas.*not found"; then
    # the PyTorch wheels' copy of cuBLAS 13
    d=$(find /usr/local /opt /usr/lib -name 'libcublas.so.13' -printf '%h\n' \
        2>/dev/null | head -1)
    LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
fi
export LD_LIBRARY_PATH
# PyTorch's baseline runs under the image's own libraries, not the carried
py=/tmp/grove-python3
printf '#!/bin/sh\nunset LD_LIBRARY_PATH\nexec python3 "$@"\n' >"$py"
chmod +x "$py"
nvidia-smi -L
echo "== missing libraries:"; ldd $bin/grove | grep "not found" || echo none
export GROVE_REQUIRE_GPU=1
# grove loads its CUDA backend from here (the build folder's path is not
# this machine's)
export GROVE_CUDA_LIB=$root/$bin/libgrove_cuda.so
t=$bin/tests
status=0
run() { # NAME COMMAND...: one test, its verdict on one line
    local name=$1; shift
    local t0=$SECONDS
    if "$@" >"$out/logs/$name.log" 2>&1; then
        echo "PASS $name ($((SECONDS - t0)) s)"
    else
        echo "FAIL $name (exit $?, $((SECONDS - t0)) s)"; tail -25 "$out/logs/$name.log"
        status=1
    fi
}
echo "== CUDA parity tests"
for mode in auto cublas skinny; do
    GROVE_CUDA_GEMM=$mode run "kernels_cuda_parity_$mode" $t/kernels/test_kernels_ops --parity
done
run agents_ocn_cuda $t/agents/test_agents_ocn_cuda
run agents_ppo_cuda $t/agents/test_agents_ppo_cuda
run nlp_lm_cuda $t/nlp/test_nlp_lm_cuda
run nlp_om_cuda $t/nlp/test_nlp_om_cuda
[ -x $t/agents/test_agents_ompn_cuda ] && run agents_ompn_cuda $t/agents/test_agents_ompn_cuda
[ -x $t/agents/test_agents_compile_cuda ] && run agents_compile_cuda $t/agents/test_agents_compile_cuda
[ -x $t/kernels/test_kernels_attention ] && run kernels_attention_cuda_parity $t/kernels/test_kernels_attention --parity
[ -x $t/nlp/test_nlp_fasttrees_cuda ] && run nlp_fasttrees_cuda $t/nlp/test_nlp_fasttrees_cuda
if [ -f $bin/cuda_tests.txt ]; then
    # every other CUDA test of the build (pack.sh listed them)
    while IFS=$'\t' read -r name env cmd; do
        case $name in
        kernels_cuda_parity|agents_ocn_cuda|agents_ppo_cuda|nlp_lm_cuda|nlp_om_cuda|\
        agents_ompn_cuda|agents_compile_cuda|kernels_attention_cuda_parity|nlp_fasttrees_cuda) continue ;;
        esac
        # shellcheck disable=SC2086
        run "$name" env $env bash -c "$cmd" </dev/null
    done <$bin/cuda_tests.txt
fi
for extra in "$@"; do # more test binaries named on the command line
    run "$(basename "$extra")" "$bin/$extra"
done
if [ "${GROVE_DEVICE_BENCH:-1}" = 0 ]; then
    echo "== benchmarks skipped (GROVE_DEVICE_BENCH=0)"
    exit $status
fi
if [ "${GROVE_DEVICE_BENCH:-1}" = rnn ]; then
    # the recurrent layers only: bench kernels, and the FastTrees cells'
    # epoch time against ON-LSTM's (grove's and the PyTorch reference's)
    echo "== grove bench kernels --device cuda"
    $bin/grove bench kernels --device cuda --threads 1 --python $py \
        --rounds 3 --quiet >"$out/bench_kernels.md" 2>&1
    echo "== grove bench nlp --models onlstm,lstm,ft,cft,fft --device cuda"
    $bin/grove bench nlp --models onlstm,lstm,ft,cft,fft --cases published,small \
        --device cuda --threads 1 --python $py --rounds 2 --quiet \
        >"$out/bench_nlp.md" 2>&1 || { echo "FAIL bench nlp"; status=1; }
    grep -E "^\| (LSTM|ON-LSTM|GEMM)" "$out/bench_kernels.md" | grep -v peak
    cat "$out/bench_nlp.md"
    exit $status
fi
echo "== grove bench kernels --device cuda (skinny GEMM off, then on)"
GROVE_CUDA_GEMM=cublas $bin/grove bench kernels --device cuda \
    --threads 1 --no-baseline --rounds 3 --quiet >"$out/bench_kernels_cublas.md" 2>&1
$bin/grove bench kernels --device cuda --threads 1 --python $py \
    --rounds 3 --quiet >"$out/bench_kernels.md" 2>&1
echo "== grove bench om --device cuda"
$bin/grove bench om --device cuda --python $py --rounds 2 --quiet \
    >"$out/bench_om.md" 2>&1
echo "== train bc, 20 updates of each model on CUDA (published sizes)"
for model in ocn ompn compile; do
    t0=$SECONDS
    $bin/grove train bc --model $model --updates 20 --eval-every 10 \
        --device cuda --quiet --out /tmp/bc_$model >"$out/logs/bc_$model.log" 2>&1 ||
        { echo "FAIL train bc --model $model"; tail -3 "$out/logs/bc_$model.log"; status=1; }
    echo "$model: $((SECONDS - t0)) s for 20 updates with 3 validations, demos included"
done
echo "== grove bench ppo at 4,096 worlds on CUDA (no baseline)"
for dev in cuda; do
    $bin/grove bench ppo --device $dev --threads 0 --no-baseline --num-envs 4096 \
        --iterations 2 --runs 1 --quiet >"$out/bench_ppo_$dev.md" 2>&1 ||
        { echo "FAIL bench ppo --device $dev"; status=1; }
done
cat "$out/bench_ppo_cuda.md"
echo "== bench kernels with GROVE_CUDA_GEMM=cublas (grove alone)"
grep -E "^\| (GEMM|LSTM|ON-LSTM) step|^\| GEMM" "$out/bench_kernels_cublas.md" | grep -v peak
cat "$out/bench_kernels.md" "$out/bench_om.md"
exit $status
