#!/usr/bin/env bash
# grove train bc --model ompn end to end, tiny: the run folder, metrics.csv
# with train bc's columns (nmi empty: OMPN has no options), --resume equal
# to the uninterrupted run (last.ckpt bytes and metrics), eval options'
# boundary placement of an OMPN checkpoint, and the refusals: a run of one
# model resumed as another, the OCN's flags with OMPN and --slots with the
# OCN (one stderr line each).
#   test_ompn_cli.sh PATH/TO/grove
set -u
grove=$1
# $tmp, $checks, $fails; fail, ok, expect
. "$(dirname "$0")/cli_lib.sh"

small="--model ompn --hidden 16 --demos-per-task 40 --batch 16 --eval-every 10 --return-every 20 --return-episodes 2 --device cpu --threads 1 --quiet"

ok train bc $small --updates 30 --out "$tmp/a"
for f in command config metrics.csv curves.png best.ckpt last.ckpt; do
    checks=$((checks + 1))
    [ -s "$tmp/a/$f" ] || fail "run folder lacks $f"
done
checks=$((checks + 1))
grep -q '^kind ompn$' "$tmp/a/config" && grep -q '^slots 3$' "$tmp/a/config" ||
    fail "config lacks kind ompn / slots 3: $(cat "$tmp/a/config")"
checks=$((checks + 1))
head -1 "$tmp/a/metrics.csv" | grep -q '^update,nll,action_acc,f1_tol0,f1_tol1,align_acc,nmi,train_nll,greedy_return,greedy_success,wall_s$' ||
    fail "metrics header: $(head -1 "$tmp/a/metrics.csv")"
checks=$((checks + 1))
[ "$(wc -l <"$tmp/a/metrics.csv")" -eq 5 ] || fail "metrics rows: $(cat "$tmp/a/metrics.csv")"
# every row: numbers in nll..align_acc, nmi empty
checks=$((checks + 1))
awk -F, 'NR > 1 && ($2 == "" || $6 == "" || $7 != "") { bad = 1 } END { exit bad }' \
    "$tmp/a/metrics.csv" || fail "metrics cells: $(cat "$tmp/a/metrics.csv")"
# the NLL falls over 30 updates
checks=$((checks + 1))
awk -F, 'NR == 2 { first = $2 } END { exit !($2 < first) }' "$tmp/a/metrics.csv" ||
    fail "nll does not fall: $(cut -d, -f1,2 "$tmp/a/metrics.csv")"

# stopped at 20, resumed to 30 = the straight run
ok train bc $small --updates 20 --out "$tmp/b"
ok train bc $small --updates 30 --out "$tmp/b" --resume
checks=$((checks + 1))
cmp -s "$tmp/a/last.ckpt" "$tmp/b/last.ckpt" || fail "resumed last.ckpt differs"
checks=$((checks + 1))
diff <(cut -d, -f1-10 "$tmp/a/metrics.csv") <(cut -d, -f1-10 "$tmp/b/metrics.csv") >/dev/null ||
    fail "resumed metrics differ"

# eval options: OMPN has no options, so where its boundaries fall; the
# shares of the predicted boundaries over the offsets sum to 1
ok eval options --checkpoint "$tmp/a/best.ckpt" --episodes 2 --demos-per-task 6
checks=$((checks + 1))
grep -q "is an OMPN checkpoint: it has no options" "$tmp/out" &&
    grep -q "^| offset | <=-4 | -3 | -2 | -1 | +0 | +1 | +2 | +3 | >=+4 |$" "$tmp/out" ||
    fail "eval options (OMPN): $(cat "$tmp/out")"
checks=$((checks + 1))
awk -F'|' '/^[|] share of predicted/ { for (i = 3; i <= 11; i++) s += $i; found = 1 }
    END { exit !(found && s > 0.99 && s < 1.01) }' "$tmp/out" ||
    fail "eval options (OMPN): shares do not sum to 1: $(grep share "$tmp/out")"
expect 2 "is an OMPN checkpoint, which has none" \
    eval options --checkpoint "$tmp/a/best.ckpt" --demos-per-task 6 --out "$tmp/m.csv"
# the OCN loaders say why they refuse it
expect 1 "an OMPN checkpoint (train bc --model ompn), not an OCN or MoE: OMPN has no options" \
    craft run --agent ocn --checkpoint "$tmp/a/best.ckpt" --episodes 1
# OMPN is fine-tuned by train ppo --policy ompn: the message says how
expect 1 "fine-tuned with grove train ppo --policy ompn --init $tmp/a/best.ckpt" \
    craft run --agent ocn --checkpoint "$tmp/a/best.ckpt" --episodes 1
# one model's run resumed as another
expect 2 "first difference: 'kind ompn' in the run, 'kind ocn' now" \
    train bc --hidden 16 --demos-per-task 40 --batch 16 --updates 30 --quiet --out "$tmp/a" --resume
ok train bc --model moe --hidden 16 --width 16 --demos-per-task 40 --batch 16 --updates 10 --eval-every 10 --return-every 0 --quiet --out "$tmp/m"
expect 2 "first difference: 'kind moe' in the run, 'kind ompn' now" \
    train bc $small --updates 20 --out "$tmp/m" --resume
# flags of the other model
expect 2 "are the OCN's; OMPN has --slots and --hidden" train bc $small --options 4 --out "$tmp/x"
expect 2 "are the OCN's; OMPN has --slots and --hidden" train bc $small --tau 1 --out "$tmp/x"
expect 2 "--slots is OMPN's" train bc --slots 4 --out "$tmp/x"
expect 2 "--slots 1 is outside 2..16" train bc $small --slots 1 --out "$tmp/x"
expect 2 "--model 'omp' is not ocn, moe, ompn or compile" train bc --model omp --out "$tmp/x"

echo "agents_ompn_cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
