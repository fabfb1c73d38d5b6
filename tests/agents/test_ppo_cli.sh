#!/usr/bin/env bash
# grove train ppo end to end, tiny (issue 20 §3, §6): a BC run gives the
# options; PPO (ocn) writes its run folder; its checkpoints play in craft
# run --agent ocn and eval options; eval.replay verifies; a run killed with
# SIGKILL after its first last.ckpt and resumed equals an uninterrupted run
# (last.ckpt bytes, metrics.csv but for sps and wall_s); errors: one line,
# exit 2 for a bad command line, 1 for a bad file, nothing overwritten.
#   test_ppo_cli.sh PATH/TO/grove
set -u
grove=$1
# $tmp, $checks, $fails; fail, ok, expect
. "$(dirname "$0")/cli_lib.sh"

common="--device cpu --threads 1 --quiet"
ok train bc --tasks AC,CD --updates 5 --demos-per-task 20 --hidden 16 \
    --width 16 --batch 8 --n-each 4 --eval-every 5 --return-every 0 \
    --out "$tmp/bc" $common
small="--task DCA --num-envs 4 --num-steps 16 --eval-every 2 --eval-episodes 5 $common"
ok train ppo --options "$tmp/bc/best.ckpt" $small --total-timesteps 2000 \
    --out "$tmp/ppo"
for f in command config metrics.csv curves.png eval.replay best.ckpt last.ckpt; do
    checks=$((checks + 1))
    [ -s "$tmp/ppo/$f" ] || fail "train ppo wrote no $f"
done
checks=$((checks + 1))
head -1 "$tmp/ppo/metrics.csv" | grep -q '^global_step,episodes,episodic_return,.*,explained_variance,decisions_per_episode,mean_option_duration,learning_rate,sps,wall_s$' ||
    fail "metrics.csv header: $(head -1 "$tmp/ppo/metrics.csv")"
ok replay verify "$tmp/ppo/eval.replay"
ok craft run --agent ocn --checkpoint "$tmp/ppo/best.ckpt" --task DCA --episodes 2
ok eval options --checkpoint "$tmp/ppo/last.ckpt" --episodes 2 --demos-per-task 4
# two pools concatenated
ok train ppo --options "$tmp/bc/best.ckpt,$tmp/bc/last.ckpt" $small \
    --total-timesteps 1000 --out "$tmp/ppo2"
checks=$((checks + 1))
grep -q '^options 6$' "$tmp/ppo2/config" || fail "the pool of two checkpoints is not 6 options"

# kill -9 after the first last.ckpt, then --resume = uninterrupted
run="--policy oracle --task DCA --reward sparse --hidden 16 --width 16 --num-envs 4 --num-steps 16 --eval-every 4 --eval-episodes 5 --total-timesteps 6000 $common"
ok train ppo $run --out "$tmp/straight"
"$grove" train ppo $run --out "$tmp/killed" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 2000); do
    [ -f "$tmp/killed/last.ckpt" ] && break
    sleep 0.005
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
checks=$((checks + 1))
[ "$(wc -l <"$tmp/killed/metrics.csv")" -lt "$(wc -l <"$tmp/straight/metrics.csv")" ] ||
    fail "the run was not killed before its end"
ok train ppo $run --out "$tmp/killed" --resume
checks=$((checks + 1))
cmp -s "$tmp/straight/last.ckpt" "$tmp/killed/last.ckpt" ||
    fail "resumed last.ckpt differs from the uninterrupted run's"
checks=$((checks + 1))
diff <(cut -d, -f1-16 "$tmp/straight/metrics.csv") \
     <(cut -d, -f1-16 "$tmp/killed/metrics.csv") >/dev/null ||
    fail "resumed metrics.csv differs from the uninterrupted run's"
expect 2 "differ" train ppo ${run/--total-timesteps 6000/--total-timesteps 7000} --out "$tmp/killed" --resume

# errors
expect 2 "--task" train ppo --policy oracle --out "$tmp/e1" $common
expect 2 "num_envs" train ppo --policy oracle --task DCA --num-envs 0 --out "$tmp/e1" $common
expect 2 "needs --options" train ppo --task DCA --out "$tmp/e1" $common
expect 2 "takes no --options" train ppo --policy flat --options "$tmp/bc/best.ckpt" --task DCA --out "$tmp/e1" $common
expect 2 "XYZ" train ppo --policy oracle --task XYZ --out "$tmp/e1" $common
expect 2 "policy" train ppo --policy nope --task DCA --out "$tmp/e1" $common
expect 1 "not a grove checkpoint" train ppo --options "$tmp/ppo/metrics.csv" --task DCA --out "$tmp/e1" $common
checks=$((checks + 1))
[ ! -e "$tmp/e1" ] || fail "a failed start left $tmp/e1"
ok train bc --tasks AC,CD --updates 2 --demos-per-task 20 --hidden 16 \
    --width 16 --batch 8 --eval-every 2 --return-every 0 --n-each 1 --out "$tmp/bc1" $common
expect 1 "another world" train ppo --options "$tmp/bc/best.ckpt,$tmp/bc1/best.ckpt" --task DCA --out "$tmp/e1" $common
before=$(md5sum <"$tmp/ppo/last.ckpt")
expect 1 "exists" train ppo --options "$tmp/bc/best.ckpt" $small --total-timesteps 1000 --out "$tmp/ppo"
checks=$((checks + 1))
[ "$before" = "$(md5sum <"$tmp/ppo/last.ckpt")" ] || fail "an existing run was overwritten"
# a task with a subtask no option learnt: warned, allowed
ok train ppo --options "$tmp/bc/best.ckpt" --task DBA --num-envs 4 --num-steps 16 --eval-episodes 2 --total-timesteps 500 --out "$tmp/dba" $common
checks=$((checks + 1))
grep -q "warning: task DBA has subtasks no option was trained on (get gold)" "$tmp/err" ||
    fail "no warning for DBA: $(cat "$tmp/err")"

echo "test_ppo_cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
