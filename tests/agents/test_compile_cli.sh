#!/usr/bin/env bash
# grove train bc --model compile end to end, tiny: the run folder,
# metrics.csv with train bc's columns (nmi and the greedy returns empty:
# compILE has no options and no online policy), compILE's defaults in the
# config (batch 256, lr 1e-4), --resume equal to the uninterrupted run
# (last.ckpt bytes, with the noise counter, and metrics), what eval options
# says of a compILE checkpoint, and the refusals (one stderr line each).
#   test_compile_cli.sh PATH/TO/grove
set -u
grove=$1
# $tmp, $checks, $fails; fail, ok, expect
. "$(dirname "$0")/cli_lib.sh"

small="--model compile --hidden 16 --demos-per-task 40 --batch 16 --lr 0.003 --eval-every 10 --device cpu --threads 1 --quiet"

ok train bc $small --updates 30 --out "$tmp/a"
for f in command config metrics.csv curves.png best.ckpt last.ckpt; do
    checks=$((checks + 1))
    [ -s "$tmp/a/$f" ] || fail "run folder lacks $f"
done
checks=$((checks + 1))
grep -q '^kind compile$' "$tmp/a/config" && grep -q '^max_segs 4$' "$tmp/a/config" ||
    fail "config: $(cat "$tmp/a/config")"
checks=$((checks + 1))
head -1 "$tmp/a/metrics.csv" | grep -q '^update,nll,action_acc,f1_tol0,f1_tol1,align_acc,nmi,train_nll,greedy_return,greedy_success,wall_s$' ||
    fail "metrics header: $(head -1 "$tmp/a/metrics.csv")"
checks=$((checks + 1))
[ "$(wc -l <"$tmp/a/metrics.csv")" -eq 5 ] || fail "metrics rows: $(cat "$tmp/a/metrics.csv")"
checks=$((checks + 1))
awk -F, 'NR > 1 && ($2 == "" || $4 == "" || $6 == "" || $7 != "" || $9 != "") { bad = 1 } END { exit bad }' \
    "$tmp/a/metrics.csv" || fail "metrics cells: $(cat "$tmp/a/metrics.csv")"
checks=$((checks + 1))
awk -F, 'NR == 2 { first = $2 } END { exit !($2 < first) }' "$tmp/a/metrics.csv" ||
    fail "nll does not fall: $(cut -d, -f1,2 "$tmp/a/metrics.csv")"
# compILE's IL defaults when not given
ok train bc --model compile --hidden 8 --demos-per-task 20 --updates 0 --quiet --device cpu --out "$tmp/d"
checks=$((checks + 1))
grep -q '^batch 256$' "$tmp/d/config" && grep -q '^lr 9.99999975e-05$' "$tmp/d/config" ||
    fail "defaults: $(cat "$tmp/d/config")"

ok train bc $small --updates 20 --out "$tmp/b"
ok train bc $small --updates 30 --out "$tmp/b" --resume
checks=$((checks + 1))
cmp -s "$tmp/a/last.ckpt" "$tmp/b/last.ckpt" || fail "resumed last.ckpt differs"
checks=$((checks + 1))
diff <(cut -d, -f1-10 "$tmp/a/metrics.csv") <(cut -d, -f1-10 "$tmp/b/metrics.csv") >/dev/null ||
    fail "resumed metrics differ"

# eval options: compILE's counterpart of the option matrix (each
# subtask's mean latent played on each subtask), the same numbers twice,
# as CSV with --out
ok eval options --checkpoint "$tmp/a/best.ckpt" --episodes 4 --demos-per-task 10 \
    --threads 1 --out "$tmp/lat.csv"
checks=$((checks + 1))
grep -q "is a compILE checkpoint: no options, so its counterpart" "$tmp/out" &&
    grep -q '^| latent of (segments) | A | C | D |$' "$tmp/out" &&
    grep -q '^diagonal mean [0-9.]* ' "$tmp/out" || fail "eval options: $(cat "$tmp/out")"
checks=$((checks + 1))
[ "$(head -1 "$tmp/lat.csv")" = "latent,A,C,D" ] && [ "$(wc -l <"$tmp/lat.csv")" -eq 4 ] &&
    awk -F, 'NR > 1 { for (i = 2; i <= 4; i++) if ($i < 0 || $i > 1) bad = 1 } END { exit bad }' "$tmp/lat.csv" ||
    fail "latent matrix csv: $(cat "$tmp/lat.csv")"
cp "$tmp/lat.csv" "$tmp/lat1.csv"
ok eval options --checkpoint "$tmp/a/best.ckpt" --episodes 4 --demos-per-task 10 \
    --threads 1 --out "$tmp/lat.csv" --force
checks=$((checks + 1))
cmp -s "$tmp/lat.csv" "$tmp/lat1.csv" || fail "latent matrix differs between two runs"
expect 1 "exists (use --force to overwrite)" \
    eval options --checkpoint "$tmp/a/best.ckpt" --episodes 2 --out "$tmp/lat.csv"
# compILE is fine-tuned by train ppo --policy compile: the message says how
expect 1 "fine-tuned with grove train ppo --policy compile --init $tmp/a/best.ckpt" \
    craft run --agent ocn --checkpoint "$tmp/a/best.ckpt" --episodes 1
expect 2 "first difference: 'kind compile' in the run, 'kind ompn' now" \
    train bc --model ompn --hidden 16 --demos-per-task 40 --batch 16 --updates 30 --quiet --out "$tmp/a" --resume
expect 2 "are not compILE's; it has --max-segs" train bc $small --slots 4 --out "$tmp/x"
expect 2 "--max-segs, --beta-b and --beta-z are compILE's" train bc --max-segs 3 --out "$tmp/x"
expect 2 "--max-segs 1 is outside 2..16" train bc $small --max-segs 1 --out "$tmp/x"
expect 2 "--beta-b and --beta-z must be numbers >= 0" train bc $small --beta-z -1 --out "$tmp/x"

echo "agents_compile_cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
