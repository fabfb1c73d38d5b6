#!/usr/bin/env bash
# grove train ppo --policy compile --init A[,B] end to end, tiny (issue 26
# §2): the run folder with one compILE model and with two (S2: the
# controller also picks the model; eval.replay's "option" is the model);
# --resume of a finished run trains nothing and keeps last.ckpt; the
# refusals (no --init, an OMPN checkpoint, too many files), one line each.
#   test_compile_ppo_cli.sh PATH/TO/grove
set -u
grove=$1
fails=0
checks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

ok() {
    checks=$((checks + 1))
    if ! "$grove" "$@" >"$tmp/out" 2>"$tmp/err"; then
        fail "grove $*: exit $?"
        cat "$tmp/err"
    fi
}

expect() {
    local want=$1 pat=$2
    shift 2
    checks=$((checks + 1))
    "$grove" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "grove $*: exit $rc, want $want"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || { fail "grove $*: not one stderr line"; cat "$tmp/err"; }
    grep -q -- "$pat" "$tmp/err" || fail "grove $*: stderr lacks '$pat': $(cat "$tmp/err")"
}

cpu="--device cpu --threads 1 --quiet"
bc="--model compile --hidden 16 --demos-per-task 40 --batch 16 --updates 4 --eval-every 4 $cpu"
ok train bc $bc --tasks AC,CD --out "$tmp/a"
ok train bc $bc --tasks CD,DC --seed 2 --out "$tmp/b"
ok train bc --model ompn --tasks AC,CD --hidden 16 --demos-per-task 40 \
    --batch 16 --updates 2 --eval-every 2 --return-every 2 \
    --return-episodes 2 $cpu --out "$tmp/ompn"

run="--policy compile --task DCA --total-timesteps 1500 --num-envs 4 --num-steps 16 --width 16 --eval-every 1 --eval-episodes 4 $cpu"
ok train ppo $run --init "$tmp/a/best.ckpt" --out "$tmp/one"
ok train ppo $run --init "$tmp/a/best.ckpt,$tmp/b/best.ckpt" --out "$tmp/two"
for d in one two; do
    for f in command config metrics.csv curves.png eval.replay best.ckpt last.ckpt; do
        [ -s "$tmp/$d/$f" ] || fail "$d: run folder lacks $f"
    done
    ok replay verify "$tmp/$d/eval.replay"
    grep -q '^kind compile_controller$' "$tmp/$d/config" || fail "$d: config kind"
done
grep -q '^models 2$' "$tmp/two/config" || fail "two: config lacks 'models 2'"
cp "$tmp/two/last.ckpt" "$tmp/last.copy"
ok train ppo $run --init "$tmp/a/best.ckpt,$tmp/b/best.ckpt" --out "$tmp/two" --resume
cmp -s "$tmp/two/last.ckpt" "$tmp/last.copy" || fail "resuming a finished run changed last.ckpt"

expect 2 "needs --init" train ppo --policy compile --task DCA $cpu --out "$tmp/x"
expect 1 "not a compILE checkpoint" train ppo --policy compile \
    --init "$tmp/ompn/best.ckpt" --task DCA $cpu --out "$tmp/x"
expect 2 "1..4 files" train ppo --policy compile \
    --init "$tmp/a/best.ckpt,$tmp/a/best.ckpt,$tmp/a/best.ckpt,$tmp/a/best.ckpt,$tmp/a/best.ckpt" \
    --task DCA $cpu --out "$tmp/x"
expect 2 "1..1 files" train ppo --policy ompn \
    --init "$tmp/ompn/best.ckpt,$tmp/ompn/best.ckpt" --task DCA $cpu --out "$tmp/x"

echo "test_compile_ppo_cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
