#!/usr/bin/env bash
# grove train ppo --policy ompn --init CKPT end to end, tiny (issue 26 §2):
# the run folder from an OMPN BC checkpoint; a run killed after its first
# last.ckpt and resumed equals the uninterrupted run (last.ckpt bytes and
# metrics); the refusals (no --init, --init with another policy, an OCN
# checkpoint as --init), one stderr line each.
#   test_ompn_ppo_cli.sh PATH/TO/grove
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
ok train bc --model ompn --tasks AC,CD --hidden 16 --demos-per-task 40 \
    --batch 16 --updates 4 --eval-every 4 --return-every 4 \
    --return-episodes 2 $cpu --out "$tmp/bc"
ok train bc --tasks AC,CD --hidden 16 --width 16 --demos-per-task 40 \
    --batch 16 --updates 2 --eval-every 2 --return-every 2 \
    --return-episodes 2 $cpu --out "$tmp/ocn"

run="--policy ompn --init $tmp/bc/best.ckpt --task DCA --total-timesteps 1536 --num-envs 4 --num-steps 32 --eval-every 1 --eval-episodes 4 $cpu"
ok train ppo $run --out "$tmp/straight"
for f in command config metrics.csv curves.png eval.replay best.ckpt last.ckpt; do
    [ -s "$tmp/straight/$f" ] || fail "run folder lacks $f"
done
checks=$((checks + 1))
[ "$(wc -l <"$tmp/straight/metrics.csv")" -eq 13 ] ||
    fail "metrics.csv: $(wc -l <"$tmp/straight/metrics.csv") lines, want 13"
grep -q '^kind ompn$' "$tmp/straight/config" || fail "config lacks 'kind ompn'"
grep -q '^tasks DCA$' "$tmp/straight/config" || fail "config lacks the task"
ok replay verify "$tmp/straight/eval.replay"

# kill -9 after the first last.ckpt, then --resume = uninterrupted
"$grove" train ppo $run --out "$tmp/killed" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 400); do
    [ -f "$tmp/killed/last.ckpt" ] && break
    sleep 0.01
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
ok train ppo $run --out "$tmp/killed" --resume
checks=$((checks + 1))
cmp -s "$tmp/straight/last.ckpt" "$tmp/killed/last.ckpt" ||
    fail "resumed last.ckpt differs from the uninterrupted run's"
diff <(cut -d, -f1-16 "$tmp/straight/metrics.csv") \
     <(cut -d, -f1-16 "$tmp/killed/metrics.csv") >/dev/null ||
    fail "resumed metrics.csv differs from the uninterrupted run's"

expect 2 "needs --init" train ppo --policy ompn --task DCA $cpu --out "$tmp/x"
expect 2 "is for --policy ompn" train ppo --policy flat --init "$tmp/bc/best.ckpt" \
    --task DCA $cpu --out "$tmp/x"
expect 1 "not an OMPN checkpoint" train ppo --policy ompn --init "$tmp/ocn/best.ckpt" \
    --task DCA $cpu --out "$tmp/x"
expect 2 "does not exist\|no such\|No such" train ppo --policy ompn --init "$tmp/none.ckpt" \
    --task DCA $cpu --out "$tmp/x"
# a fine-tuned OMPN is not for --init, nor for eval options' placement
expect 1 "is a fine-tuned (PPO) OMPN checkpoint, not a behaviour-cloning one" train ppo --policy ompn \
    --init "$tmp/straight/last.ckpt" --task DCA $cpu --out "$tmp/x"
expect 1 "is a fine-tuned (PPO) OMPN checkpoint, not a behaviour-cloning one" eval options \
    --checkpoint "$tmp/straight/last.ckpt" --demos-per-task 2

echo "test_ompn_ppo_cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
