#!/usr/bin/env bash
# The device choice as a user meets it, in whichever build this is: grove
# version says whether CUDA is compiled in and how many GPUs it sees;
# without a usable GPU, --device cuda is refused by every trainer with one
# line naming the reason and leaves no run folder; --device auto runs on the
# CPU and says so. In a CUDA build, a process that asks for no GPU loads no
# CUDA library (the backend is libgrove_cuda.so, loaded on first GPU use:
# kernels/README.md), and a missing backend library is refused like a
# missing GPU.
#   test_cli_device.sh PATH/TO/grove
set -u
grove=$1
fails=0
checks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$grove" version >"$tmp/v" || fail "grove version: exit $?"
checks=$((checks + 1))
grep -q "^cuda:" "$tmp/v" || fail "grove version: no cuda line"
gpus=$(sed -n 's/^gpus: *\([0-9]*\) visible.*/\1/p' "$tmp/v")
[ -n "$gpus" ] || fail "grove version: no 'gpus: N visible' line"
if grep -q "^cuda: *compiled in" "$tmp/v"; then
    why="no GPU is visible"
else
    why="this build has no CUDA backend"
    [ "$gpus" = 0 ] || fail "a CPU build claims $gpus GPUs"
fi
echo "ok: grove version: $(grep '^cuda:' "$tmp/v"); gpus $gpus"

# a PTB-shaped folder small enough for an instant run
mkdir -p "$tmp/ptb"
for s in train valid test; do
    printf 'the cat sat on the mat\nthe dog sat\n' >"$tmp/ptb/ptb.$s.txt"
done
printf '1\tthe\t_\tDT\tDT\t_\t2\tNP/DT\t_\t_\n2\tdog\t_\tNN\tNN\t_\t3\tS/NP\t_\t_\n3\tsat\t_\tVBD\tVBD\t_\t0\tROOT\t_\t_\n\n' \
    >"$tmp/gold.conll"

# refused CMD...: exit 1 or 2, one stderr line naming the device and why,
# no run folder.
refused() {
    checks=$((checks + 1))
    rm -rf "$tmp/run"
    "$grove" "$@" --device cuda --out "$tmp/run" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -ne 1 ] && [ "$rc" -ne 2 ]; then fail "grove $*: exit $rc"; fi
    if ! grep -q "cuda" "$tmp/err" || ! grep -q "$why" "$tmp/err"; then
        fail "grove $* --device cuda: stderr does not say '$why': $(cat "$tmp/err")"
        return
    fi
    if [ -e "$tmp/run" ]; then
        fail "grove $* --device cuda: left $tmp/run behind"
        return
    fi
    echo "ok: grove $* --device cuda -> $(tail -1 "$tmp/err")"
}

if [ "$gpus" = 0 ]; then
    refused nlp lm train --data "$tmp/ptb" --epochs 0
    refused nlp classify train --task listops --model lstm --epochs 0
    refused nlp mlm train --data "$tmp/ptb" --epochs 0 --trees "$tmp/gold.conll"
else
    echo "skip: --device cuda refusals ($gpus GPUs visible)"
fi

# CUDA build: a process that asks for no GPU does not load the CUDA backend
# (cuBLAS alone costs about a second of start-up); the dynamic loader's own
# log says which libraries a process opened.
cuda_libs='libgrove_cuda|libcublas|libcudart'
if grep -q "^cuda: *compiled in" "$tmp/v"; then
    for args in "--help" "nlp classify train --help" \
        "nlp classify train --task listops --model lstm --epochs 0 --device cpu --out $tmp/cpu"; do
        checks=$((checks + 1))
        # shellcheck disable=SC2086
        LD_DEBUG=libs "$grove" $args >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ "$rc" -eq 0 ] || fail "grove $args: exit $rc"
        if grep -Eq "find library=($cuda_libs)" "$tmp/err"; then
            fail "grove $args loaded a CUDA library: $(grep -Eo "find library=($cuda_libs)[^ ]*" "$tmp/err" | sort -u | tr '\n' ' ')"
        else
            echo "ok: grove $args loads no CUDA library"
        fi
    done
    # A backend library that is not there: no GPU, and the reason named.
    checks=$((checks + 1))
    GROVE_CUDA_LIB="$tmp/missing/libgrove_cuda.so" "$grove" version >"$tmp/v2"
    grep -q "^gpus: *0 visible" "$tmp/v2" ||
        fail "missing backend: grove version does not say 0 GPUs: $(cat "$tmp/v2")"
    grep -q "^cuda: .*GROVE_CUDA_LIB=$tmp/missing/libgrove_cuda.so cannot be read" "$tmp/v2" ||
        fail "missing backend: grove version does not name it: $(grep '^cuda:' "$tmp/v2")"
    checks=$((checks + 1))
    rm -rf "$tmp/run"
    GROVE_CUDA_LIB="$tmp/missing/libgrove_cuda.so" "$grove" nlp lm train \
        --data "$tmp/ptb" --epochs 0 --device cuda --out "$tmp/run" \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -ne 1 ] && [ "$rc" -ne 2 ]; then
        fail "missing backend: nlp lm train --device cuda: exit $rc"
    elif ! tail -1 "$tmp/err" | grep -q "no GPU is visible.*GROVE_CUDA_LIB"; then
        fail "missing backend: the error line does not name it: $(cat "$tmp/err")"
    elif [ -e "$tmp/run" ]; then
        fail "missing backend: left $tmp/run behind"
    else
        echo "ok: missing backend -> $(tail -1 "$tmp/err")"
    fi
else
    echo "skip: CUDA library loading (no CUDA backend in this build)"
fi

# --device auto: the device it resolves to is named
checks=$((checks + 1))
"$grove" nlp classify train --task listops --model lstm --epochs 0 \
    --device auto --out "$tmp/auto" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || fail "classify train --device auto: exit $rc: $(cat "$tmp/err")"
want=cpu
[ "$gpus" = 0 ] || want=cuda
grep -q "on $want" "$tmp/out" "$tmp/err" ||
    fail "classify train --device auto: does not say 'on $want'"
echo "ok: --device auto -> on $want"

echo "cli_device: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
