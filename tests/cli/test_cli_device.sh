#!/usr/bin/env bash
# The device choice as a user meets it, in whichever build this is: grove
# version says whether CUDA is compiled in and how many GPUs it sees;
# without a usable GPU, --device cuda is refused by every trainer with one
# line naming the reason and leaves no run folder; --device auto runs on the
# CPU and says so. A short test on purpose: the CUDA build's ci run (no GPU)
# pays about a second of cuBLAS start-up per grove process, so the full cli
# test runs in ci-cpu only.
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
