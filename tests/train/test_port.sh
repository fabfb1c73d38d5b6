#!/usr/bin/env bash
# train/'s port test: `grove train bc` and `grove nlp lm train`, moved onto
# train/, write the same metrics.csv (less the timing columns) and the same
# checkpoints (config and every tensor's CRC-32) on a fixed seed as before
# the move: the goldens of tests/fixtures/train/port/ were written by the
# binary of commit 45fbf6f (make.sh there says how).
#   test_port.sh GROVE CKPT_DIGEST FIXTURES
# Float bits depend on the BLAS kernels: the goldens' OPENBLAS_CORETYPE is
# pinned below; where this machine is not the goldens' (machine.txt), a
# difference is reported as such.
set -u
grove=$1
digest=$2
fx=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$fx/runs.sh"
# The goldens were written with OpenBLAS's Haswell kernels
# (OPENBLAS_CORETYPE in machine.txt): pin the same kernels where the
# processor has them, so that a processor OpenBLAS would give other
# kernels (AVX-512 ones, say) still compares bit for bit.
coretype=$(sed -n 's/^OPENBLAS_CORETYPE: //p' "$fx/machine.txt")
if [ -n "$coretype" ] && [ "$coretype" != unset ] &&
    grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=$coretype
fi
fails=0
run_bc "$grove" "$tmp/bc" || { echo "FAIL: train bc exited $?"; exit 1; }
run_lm "$grove" "$fx/corpus" "$tmp/lm" || { echo "FAIL: nlp lm train exited $?"; exit 1; }
for k in bc lm; do
    if ! diff <(cut_timing "$tmp/$k/metrics.csv") "$fx/$k.metrics.csv"; then
        echo "FAIL: $k metrics.csv differs from the golden"
        fails=$((fails + 1))
    fi
    for c in best last; do
        if ! diff <("$digest" "$tmp/$k/$c.ckpt" --ignore state-wall) "$fx/$k.$c.digest"; then
            echo "FAIL: $k $c.ckpt differs from the golden"
            fails=$((fails + 1))
        fi
    done
done
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
if [ "$fails" -ne 0 ] && ! grep -qF "cpu: $cpu" "$fx/machine.txt"; then
    echo "note: the goldens come from another processor ($(grep cpu: "$fx/machine.txt")); this one is $cpu"
fi
echo "train port: 6 files compared, $fails differ"
[ "$fails" -eq 0 ]
