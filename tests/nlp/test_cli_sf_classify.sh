#!/usr/bin/env bash
# grove nlp classify train --model structformer as a user meets it: a small
# ListOps run on generated data (run folder, the sizes in the config, the
# model line), the checkpoint round trip (eval of best.ckpt gives training's
# test and validation accuracy, whatever the eval batch: the calibration is
# per sentence), a sentence-pair task (the SNLI sample), refusals of bad
# sizes (one line, exit 2, no run folder left), and an unknown --model
# listing the valid ones, structformer among them.
#   test_cli_sf_classify.sh GROVE
set -u
grove=$1
snli=$(dirname "$0")/../fixtures/snli/snli_sample.jsonl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

ct=(nlp classify train)
"$grove" nlp listops generate --n 1300 --max-depth 2 --seed 1 --out "$tmp/train.tsv" --quiet >/dev/null ||
    fail "listops generate"
"$grove" nlp listops generate --n 120 --max-depth 2 --seed 2 --out "$tmp/test.tsv" --quiet >/dev/null ||
    fail "listops generate (test)"
small=(--task listops --model structformer --train "$tmp/train.tsv" --test "$tmp/test.tsv"
       --emsize 16 --nhid 16 --heads 2 --ffn 32 --layers 1 --batch 16 --max-batches 8
       --eval-batch 32 --lr 3e-3 --seed 7 --threads 1 --device cpu)
"$grove" "${ct[@]}" "${small[@]}" --epochs 2 --out "$tmp/run" >"$tmp/run.out" 2>"$tmp/run.err" ||
    { fail "classify train --model structformer"; cat "$tmp/run.err"; }
for f in command config metrics.csv best.ckpt last.ckpt; do
    [ -s "$tmp/run/$f" ] || fail "run folder lacks $f"
done
for line in "enc-model structformer" "enc-layers 1" "enc-heads 2" "enc-ffn 32" "enc-hidden 16"; do
    grep -qx "$line" "$tmp/run/config" || fail "config lacks '$line'"
done
grep -q "model: structformer, emsize 16, D 16" "$tmp/run.err" || fail "no model line: $(cat "$tmp/run.err")"
acc=$(sed -n 's/^test accuracy (best.ckpt) \([0-9.]*\) on 120 examples$/\1/p' "$tmp/run.out")
[ -n "$acc" ] || { fail "no test accuracy line"; cat "$tmp/run.out"; }
vacc=$(sed -n 's/^best validation accuracy \([0-9.]*\) at epoch [0-9]* .*$/\1/p' "$tmp/run.out")
[ -n "$vacc" ] || { fail "no validation accuracy line"; cat "$tmp/run.out"; }
for b in 1 13; do
    "$grove" nlp classify eval --checkpoint "$tmp/run/best.ckpt" --train "$tmp/train.tsv" \
        --test "$tmp/test.tsv" --batch $b >"$tmp/eval.out" 2>"$tmp/eval.err"
    grep -q "^listops test: accuracy $acc on 120 examples" "$tmp/eval.out" ||
        fail "eval --batch $b: $(cat "$tmp/eval.out" "$tmp/eval.err") (training said $acc)"
done
# (eval holds the validation part out of --train with the run's seed, 7)
"$grove" nlp classify eval --checkpoint "$tmp/run/best.ckpt" --train "$tmp/train.tsv" \
    --test "$tmp/test.tsv" --on valid --batch 7 >"$tmp/eval.out" 2>"$tmp/eval.err"
grep -q "^listops valid: accuracy $vacc on " "$tmp/eval.out" ||
    fail "eval --on valid: $(cat "$tmp/eval.out" "$tmp/eval.err") (training said $vacc)"

# sentence pairs: premises and hypotheses in one encode
"$grove" "${ct[@]}" --task snli --model structformer --train "$snli" --valid "$snli" --test "$snli" \
    --emsize 16 --nhid 16 --heads 2 --ffn 32 --layers 1 --epochs 1 --threads 1 --out "$tmp/snli" \
    >"$tmp/snli.out" 2>"$tmp/snli.err" || { fail "--task snli --model structformer"; cat "$tmp/snli.err"; }
grep -Eq "test accuracy \(best.ckpt\) [01]\.[0-9]+ on 11 examples" "$tmp/snli.out" ||
    fail "snli: $(cat "$tmp/snli.out")"

# refusals
"$grove" "${ct[@]}" "${small[@]/#2/3}" --epochs 1 --quiet --out "$tmp/bad" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "--heads 3 with --nhid 16: exit $rc, want 2"
grep -q "structformer: --nhid 16 is not a multiple of --heads 3" "$tmp/err" || fail "--heads 3: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "--heads 3: stderr is not one line: $(cat "$tmp/err")"
"$grove" "${ct[@]}" --task listops --model structformer --train "$tmp/train.tsv" --test "$tmp/test.tsv" \
    --emsize 32 --out "$tmp/bad2" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q -- "--emsize 32 must equal --nhid 128" "$tmp/err" ||
    fail "--emsize 32: exit $rc: $(cat "$tmp/err")"
"$grove" "${ct[@]}" --task listops --model gru --out "$tmp/bad3" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "unknown model 'gru' (known: .*|structformer|" "$tmp/err" ||
    fail "--model gru: exit $rc: $(cat "$tmp/err")"
{ [ -e "$tmp/bad" ] || [ -e "$tmp/bad2" ] || [ -e "$tmp/bad3" ]; } && fail "a refused command left a run folder"

# grove nlp tasks names it
"$grove" nlp tasks >"$tmp/tasks" 2>&1 && grep -q "structformer (O(B\*T^3) memory" "$tmp/tasks" ||
    fail "grove nlp tasks does not list structformer for listops"

echo "structformer classify cli: $fails failed"
[ $fails -eq 0 ]
