#!/usr/bin/env bash
# grove nlp mlm train | eval and grove nlp depparse (issue 24 §3) on a tiny
# hand-written corpus and CoNLL file (no shared data needed): the run
# folder and metrics.csv, --resume bit-identical to an uninterrupted run,
# a --resume with other options refused, the transformer row, the
# ablations, perplexity deterministic over maskings, bad command lines:
# exit 2 with one line. (depparse: test_cli_depparse.sh.)
#   test_cli_mlm.sh PATH/TO/grove
set -u
grove=$1
. "$(dirname "$0")/mlm_lib.sh"

# ---- a run folder -------------------------------------------------------
checks=$((checks + 1))
"$grove" nlp mlm train --data "$tmp/ptb" --trees "$tmp/gold.conll" --out "$tmp/r1" $tiny --epochs 2 --max-batches 3 --quiet 2>"$tmp/err" \
    || { fail "train: $(cat "$tmp/err")"; }
for f in command config vocab.txt metrics.csv curves.png best.ckpt last.ckpt; do
    [ -s "$tmp/r1/$f" ] || fail "run folder lacks $f"
done
[ "$(head -1 "$tmp/r1/metrics.csv")" = "epoch,train_loss,valid_ppl,uas,uuas,lr,wall_s" ] \
    || fail "metrics.csv header: $(head -1 "$tmp/r1/metrics.csv")"
[ "$(wc -l <"$tmp/r1/metrics.csv")" -eq 3 ] || fail "metrics.csv: $(cat "$tmp/r1/metrics.csv")"
# uas and uuas are numbers in [0, 100]; valid ppl below the vocabulary size
awk -F, 'NR > 1 { if ($4 == "" || $4 < 0 || $4 > 100 || $5 < $4 * 0 || $5 > 100 || $3 <= 1) bad = 1 } END { exit bad }' "$tmp/r1/metrics.csv" \
    || fail "metrics.csv values: $(cat "$tmp/r1/metrics.csv")"
[ "$(head -3 "$tmp/r1/vocab.txt" | tr '\n' ' ')" = "<unk> <pad> <mask> " ] || fail "vocab.txt specials"

# ---- --resume is bit-identical to an uninterrupted run -------------------
checks=$((checks + 1))
"$grove" nlp mlm train --data "$tmp/ptb" --out "$tmp/a" $tiny --epochs 3 --max-batches 2 --quiet 2>"$tmp/err" || fail "run a: $(cat "$tmp/err")"
"$grove" nlp mlm train --data "$tmp/ptb" --out "$tmp/b" $tiny --epochs 1 --max-batches 2 --quiet 2>"$tmp/err" || fail "run b: $(cat "$tmp/err")"
"$grove" nlp mlm train --data "$tmp/ptb" --out "$tmp/b" $tiny --epochs 3 --max-batches 2 --quiet --resume 2>"$tmp/err" || fail "resume b: $(cat "$tmp/err")"
cut -d, -f1-6 "$tmp/a/metrics.csv" >"$tmp/ma"
cut -d, -f1-6 "$tmp/b/metrics.csv" >"$tmp/mb"
cmp -s "$tmp/ma" "$tmp/mb" || { fail "resumed metrics differ"; diff "$tmp/ma" "$tmp/mb"; }
[ "$(wc -l <"$tmp/ma")" -eq 4 ] || fail "run a has $(wc -l <"$tmp/ma") lines"
cmp -s "$tmp/a/best.ckpt" "$tmp/b/best.ckpt" || fail "resumed best.ckpt differs from the uninterrupted run's"
# a different seed gives different numbers (the comparison can fail)
"$grove" nlp mlm train --data "$tmp/ptb" --out "$tmp/c" $tiny --epochs 1 --max-batches 2 --quiet --seed 2 2>/dev/null
[ "$(sed -n 2p "$tmp/c/metrics.csv" | cut -d, -f2)" != "$(sed -n 2p "$tmp/a/metrics.csv" | cut -d, -f2)" ] \
    || fail "seed 2 gave seed 1's training loss"

# SIGINT stops at a batch boundary with last.ckpt written; --resume from
# there matches an uninterrupted run of the same length.
checks=$((checks + 1))
"$grove" nlp mlm train --data "$tmp/ptb" --out "$tmp/s" $tiny --epochs 100000 --max-batches 1 --quiet 2>"$tmp/serr" &
pid=$!
for i in $(seq 1 200); do
    [ -f "$tmp/s/metrics.csv" ] && [ "$(wc -l <"$tmp/s/metrics.csv")" -ge 3 ] && break
    sleep 0.1
done
kill -INT $pid
wait $pid
src=$?
[ $src -eq 130 ] || fail "SIGINT: exit $src, want 130 (128 + SIGINT, as every trainer)"
grep -q "SIGINT: stopped at epoch" "$tmp/serr" || fail "SIGINT message: $(cat "$tmp/serr")"
k=$(tail -1 "$tmp/s/metrics.csv" | cut -d, -f1)
"$grove" nlp mlm train --data "$tmp/ptb" --out "$tmp/s" $tiny --epochs $((k + 1)) --max-batches 1 --quiet --resume 2>"$tmp/err" || fail "resume after SIGINT: $(cat "$tmp/err")"
"$grove" nlp mlm train --data "$tmp/ptb" --out "$tmp/u" $tiny --epochs $((k + 1)) --max-batches 1 --quiet 2>"$tmp/err" || fail "run u: $(cat "$tmp/err")"
cut -d, -f1-6 "$tmp/s/metrics.csv" >"$tmp/ms"
cut -d, -f1-6 "$tmp/u/metrics.csv" >"$tmp/mu"
cmp -s "$tmp/ms" "$tmp/mu" || { fail "metrics after SIGINT + resume differ"; diff "$tmp/ms" "$tmp/mu"; }

expect 2 "resume.*nemb" nlp mlm train --data "$tmp/ptb" --out "$tmp/b" --nemb 24 --nlayers 2 --nheads 2 --head-size 4 --parser-layers 1 --batch-tokens 120 --eval-runs 2 --pos-classes 2 --epochs 4 --resume
expect 1 "exists" nlp mlm train --data "$tmp/ptb" --out "$tmp/a" $tiny --epochs 1
[ -s "$tmp/a/best.ckpt" ] || fail "a refused run touched the folder"

# ---- the transformer and structformer rows, the ablations --------------------------------
checks=$((checks + 1))
"$grove" nlp mlm train --model transformer --data "$tmp/ptb" --out "$tmp/t" --nemb 16 --nlayers 1 --nheads 2 --batch-tokens 120 --eval-runs 1 --epochs 1 --max-batches 2 --quiet 2>"$tmp/err" \
    || fail "transformer: $(cat "$tmp/err")"
awk -F, 'NR == 2 { exit !($4 == "" && $3 > 1) }' "$tmp/t/metrics.csv" || fail "transformer metrics: $(cat "$tmp/t/metrics.csv")"
# udgn.md §7: the baseline's FFN is LeakyReLU, and the run says so
grep -q "^ffn_act leaky_relu$" "$tmp/t/config" || fail "transformer config lacks ffn_act leaky_relu"
# learned positions by default (the reference's --pos_emb), sinusoidal by flag
grep -q "^positions learned$" "$tmp/t/config" || fail "transformer config lacks positions learned"
checks=$((checks + 1))
"$grove" nlp mlm train --model transformer --positions sinusoidal --data "$tmp/ptb" --out "$tmp/ts" --nemb 16 --nlayers 1 --nheads 2 --batch-tokens 120 --eval-runs 1 --epochs 1 --max-batches 2 --quiet 2>"$tmp/err" \
    || fail "transformer --positions sinusoidal: $(cat "$tmp/err")"
grep -q "^positions sinusoidal$" "$tmp/ts/config" || fail "--positions sinusoidal not in the config"
[ "$(sed -n 2p "$tmp/ts/metrics.csv" | cut -d, -f2)" != "$(sed -n 2p "$tmp/t/metrics.csv" | cut -d, -f2)" ] \
    || fail "learned and sinusoidal positions trained to the same loss"
checks=$((checks + 1))
"$grove" nlp mlm train --model structformer --data "$tmp/ptb" --trees "$tmp/gold.conll" --out "$tmp/sf" --nemb 16 --nlayers 1 --nheads 2 --parser-layers 1 --batch-tokens 120 --eval-runs 1 --epochs 1 --max-batches 2 --quiet 2>"$tmp/err" \
    || fail "structformer: $(cat "$tmp/err")"
awk -F, 'NR == 2 { exit !($4 != "" && $3 > 1) }' "$tmp/sf/metrics.csv" || fail "structformer metrics: $(cat "$tmp/sf/metrics.csv")"
expect 0 "structformer test: masked-token perplexity" nlp mlm eval --checkpoint "$tmp/sf/best.ckpt" --eval-runs 1
expect 0 "structformer, decoder chuliu" nlp depparse --checkpoint "$tmp/sf/best.ckpt" --trees "$tmp/gold.conll"
# --decoder structformer (udgn.md §7: the highest token the root, the others
# their argmax parent): exactly one root per sentence of the CoNLL output;
# refused (exit 2) for a udgn checkpoint and for a baseline.
expect 0 "structformer, decoder structformer: 2 sentences" nlp depparse --checkpoint "$tmp/sf/best.ckpt" --trees "$tmp/gold.conll" --decoder structformer --out "$tmp/sf.conll"
awk -F'\t' 'NF < 7 { if (open && r != 1) bad = 1; open = 0; r = 0; next }
    { open = 1; n++; if ($7 == 0) r++; if ($7 < 0 || $7 > 99) bad = 1 }
    END { if (open && r != 1) bad = 1; exit bad || n == 0 }' "$tmp/sf.conll" \
    || fail "--decoder structformer: not one root per sentence: $(cat "$tmp/sf.conll")"
expect 2 "not structformer" nlp depparse --checkpoint "$tmp/a/best.ckpt" --trees "$tmp/gold.conll" --decoder structformer
expect 2 "structformer --checkpoint, not --baseline" nlp depparse --baseline left --trees "$tmp/gold.conll" --decoder structformer
checks=$((checks + 1))
"$grove" nlp mlm train --data "$tmp/ptb" --out "$tmp/abl" $tiny --epochs 1 --max-batches 2 --quiet \
    --no-nonlinear --no-gates --no-competition-sigmoid --single-channel --abs-pos 2>"$tmp/err" \
    || fail "ablations: $(cat "$tmp/err")"
grep -q "^single_channel 1" "$tmp/abl/config" || fail "config lacks single_channel 1"

# ---- perplexity ------------------------------------------------------------
expect 0 "udgn test: masked-token perplexity [0-9.]+ .*2 maskings" nlp mlm eval --checkpoint "$tmp/a/best.ckpt" --eval-runs 2
cp "$tmp/out" "$tmp/e1"
expect 0 "perplexity" nlp mlm eval --checkpoint "$tmp/a/best.ckpt" --eval-runs 2
cmp -s "$tmp/e1" "$tmp/out" || fail "mlm eval is not deterministic"
expect 0 "transformer valid: masked-token perplexity" nlp mlm eval --checkpoint "$tmp/t/best.ckpt" --split valid --eval-runs 1
expect 2 "--split" nlp mlm eval --checkpoint "$tmp/a/best.ckpt" --split train
expect 2 "does not exist" nlp mlm eval --checkpoint "$tmp/nope.ckpt"

# ---- bad command lines -----------------------------------------------------
expect 2 "--model 'bert'" nlp mlm train --model bert --data "$tmp/ptb" --out "$tmp/x"
expect 2 "^grove nlp mlm train: --mask-rate 1.5 is out of range \(\(0, 1\)\)" nlp mlm train --data "$tmp/ptb" --out "$tmp/x" --mask-rate 1.5
expect 2 "^grove nlp mlm train: --nemb 0 is out of range \(>= 1\)" nlp mlm train --data "$tmp/ptb" --out "$tmp/x" --nemb 0
expect 2 "^grove nlp mlm train: --pos-classes -1 is out of range \(>= 0\)" nlp mlm train --data "$tmp/ptb" --out "$tmp/x" --pos-classes -1
expect 2 "^grove nlp mlm train: --parser-dropout 1 is out of range \(\[0, 1\)\)" nlp mlm train --data "$tmp/ptb" --out "$tmp/x" --parser-dropout 1
expect 2 "^grove nlp mlm eval: --eval-runs 0 is out of range \(>= 1\)" nlp mlm eval --checkpoint "$tmp/a/best.ckpt" --eval-runs 0
expect 2 "data" nlp mlm train --out "$tmp/x"
expect 2 "does not exist" nlp mlm train --data "$tmp/none" --out "$tmp/x"
expect 2 "udgn only" nlp mlm train --model transformer --no-gates --data "$tmp/ptb" --out "$tmp/x"
expect 2 "--positions 'rope': expected learned or sinusoidal" nlp mlm train --model transformer --positions rope --data "$tmp/ptb" --out "$tmp/x"
expect 2 "transformer only" nlp mlm train --positions sinusoidal --data "$tmp/ptb" --out "$tmp/x"
expect 2 "twice|more than once|repeated" nlp mlm train --data "$tmp/ptb" --data "$tmp/ptb" --out "$tmp/x"
[ -e "$tmp/x" ] && fail "a refused command left $tmp/x"

echo "test_cli_mlm: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
