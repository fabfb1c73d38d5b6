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
# a call brings back only a few files: the tests' logs as one archive
trap 'tar -C "$out" -cJf "$out/logs.tar.xz" logs && rm -rf "$out/logs"' EXIT
. bench/gpu/device_env.sh
nvidia-smi -L
echo "== missing libraries:"; ldd $bin/grove | grep "not found" || echo none
export GROVE_REQUIRE_GPU=1
t=$bin/tests
status=0
run_one() { # NAME COMMAND...: one test, its verdict on one line
    local name=$1; shift
    local t0=$SECONDS
    if timeout "${GROVE_TEST_LIMIT:-150}" "$@" >"$out/logs/$name.log" 2>&1; then
        echo "PASS $name ($((SECONDS - t0)) s)"
    else
        echo "FAIL $name (exit $?, $((SECONDS - t0)) s)"; tail -25 "$out/logs/$name.log"
        return 1
    fi
}
# GROVE_TEST_JOBS=N runs N tests at once (they share the GPU; their
# verdicts are printed together once all are done)
test_jobs=${GROVE_TEST_JOBS:-1}
test_pids=()
run() { # NAME COMMAND...
    if [ "$test_jobs" -gt 1 ]; then
        while [ "$(jobs -rp | wc -l)" -gt "$test_jobs" ]; do sleep 0.2; done
        run_one "$@" >"$out/logs/$1.verdict" </dev/null &
        test_pids+=($!)
    else
        run_one "$@" || status=1
    fi
}
# GROVE_DEVICE_TESTS=0: the benchmarks alone (a second call on a warm
# machine whose tests already ran)
if [ "${GROVE_DEVICE_TESTS:-1}" != 0 ]; then
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
    # the same attention parity cases through the composition only (the fused
    # kernels serve them where they apply by default)
    [ -x $t/kernels/test_kernels_attention ] && GROVE_ATTN_FUSED=0 run \
        kernels_attention_cuda_parity_composed $t/kernels/test_kernels_attention --parity
    [ -x $t/nlp/test_nlp_fasttrees_cuda ] && run nlp_fasttrees_cuda $t/nlp/test_nlp_fasttrees_cuda
    if [ -f $bin/cuda_tests.txt ]; then
        # every other CUDA test of the build (pack.sh listed them)
        while IFS=$'\t' read -r name env cmd; do
            case $name in
            kernels_cuda_parity|agents_ocn_cuda|agents_ppo_cuda|nlp_lm_cuda|nlp_om_cuda|\
            agents_ompn_cuda|agents_compile_cuda|kernels_attention_cuda_parity|nlp_fasttrees_cuda) continue ;;
            esac
            # shellcheck disable=SC2086
            [ "$env" = - ] && env=
            run "$name" env $env bash -c "$cmd" </dev/null
        done <$bin/cuda_tests.txt
    fi
    for extra in "$@"; do # more test binaries (with arguments) named on the command line
        name=${extra%% *}
        # shellcheck disable=SC2086
        run "$(basename "$name")" $bin/$extra
    done
    if [ "$test_jobs" -gt 1 ]; then
        wait "${test_pids[@]}" # (a bare wait would also wait for the log's tee)
        cat "$out"/logs/*.verdict
        grep -q "^FAIL" "$out"/logs/*.verdict && status=1
    fi
fi
if [ "${GROVE_DEVICE_BENCH:-1}" = 0 ]; then
    echo "== benchmarks skipped (GROVE_DEVICE_BENCH=0)"
    exit $status
fi
step() { # NAME SECONDS COMMAND...: one benchmark, its table in $OUT/NAME.md
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    echo "== $name: $*"
    timeout "$limit" "$@" >"$out/$name.md" 2>&1 ||
        { echo "FAIL/TIMEOUT $name (exit $?)"; status=1; }
    grep -E "^\|" "$out/$name.md"
    echo "($((SECONDS - t0)) s)"
}
if [ "${GROVE_DEVICE_BENCH:-1}" = ppo ]; then
    # PPO at GPU scale (issue 20 §5: 1M frames/s with 4,096 worlds): the
    # update on the device, acting on 1, 4 and 16 host threads (one
    # iteration of 4,096 worlds x 16 decisions after a warm-up one)
    for th in 16 4 1; do
        step bench_ppo_4096_t$th 150 $bin/grove bench ppo --device cuda \
            --num-envs 4096 --num-steps 16 --threads $th --no-baseline \
            --runs 1 --iterations 1 --quiet
    done
    exit $status
fi
if [ "${GROVE_DEVICE_BENCH:-1}" = models ]; then
    # the models' benchmarks that the fused ops changed, most wanted first,
    # each bounded so that one slow case leaves time for the next; each
    # table is written to $OUT as soon as it is done
    step bench_om 150 $bin/grove bench om --device cuda --python $py --rounds 2 --quiet
    GROVE_OM_UNFUSED=1 step bench_om_unfused 60 $bin/grove bench om --device cuda \
        --no-baseline --rounds 1 --quiet
    step bench_transformer 120 $bin/grove bench nlp \
        --model transformer --device cuda --python $py --rounds 2 --quiet
    GROVE_ATTN_FUSED=0 step bench_transformer_composed 60 $bin/grove bench nlp \
        --model transformer --device cuda --no-baseline --rounds 2 --quiet
    step bench_fasttrees 150 $bin/grove bench nlp --models onlstm,ft,cft,fft \
        --cases published,small --device cuda --python $py --rounds 1 --quiet
    # against udgn_ref.py on the same GPU (--device cuda since 2026-11-27)
    step bench_udgn 90 $bin/grove bench nlp --model udgn --device cuda --python $py \
        --rounds 1 --quiet
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
