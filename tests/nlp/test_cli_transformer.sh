#!/usr/bin/env bash
# grove nlp classify train --model transformer as a user meets it (issue 23
# §2): a small ListOps run on generated data (run folder, the transformer's
# sizes in the config, eval of best.ckpt equal to training's test accuracy
# and independent of the eval batch), post-norm, and refusals of bad sizes
# (one line, exit 2, no run folder left); the ftt, ftt-conv and hybrid rows run too.
#   test_cli_transformer.sh GROVE
set -u
grove=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

ct=(nlp classify train)
"$grove" nlp listops generate --n 1100 --max-depth 3 --seed 1 --out "$tmp/train.tsv" --quiet >/dev/null ||
    fail "listops generate"
"$grove" nlp listops generate --n 60 --max-depth 3 --seed 2 --out "$tmp/test.tsv" --quiet >/dev/null ||
    fail "listops generate (test)"
small=(--task listops --model transformer --train "$tmp/train.tsv" --test "$tmp/test.tsv"
       --emsize 16 --nhid 16 --heads 2 --ffn 32 --layers 1 --batch 8 --max-batches 6
       --eval-batch 32 --lr 3e-3 --seed 4 --threads 1 --device cpu)
"$grove" "${ct[@]}" "${small[@]}" --epochs 1 --out "$tmp/run" >"$tmp/run.out" 2>"$tmp/run.err" ||
    { fail "classify train --model transformer"; cat "$tmp/run.err"; }
for f in command config metrics.csv best.ckpt last.ckpt; do
    [ -s "$tmp/run/$f" ] || fail "run folder lacks $f"
done
for line in "enc-model transformer" "enc-layers 1" "enc-heads 2" "enc-ffn 32" "enc-post-norm 0"; do
    grep -qx "$line" "$tmp/run/config" || fail "config lacks '$line'"
done
grep -q "model: transformer, emsize 16, D 16" "$tmp/run.err" || fail "no model line: $(cat "$tmp/run.err")"
acc=$(sed -n 's/^test accuracy (best.ckpt) \([0-9.]*\) on 60 examples$/\1/p' "$tmp/run.out")
[ -n "$acc" ] || { fail "no test accuracy line"; cat "$tmp/run.out"; }
for b in 1 13; do
    "$grove" nlp classify eval --checkpoint "$tmp/run/best.ckpt" --train "$tmp/train.tsv" \
        --test "$tmp/test.tsv" --batch $b >"$tmp/eval.out" 2>"$tmp/eval.err"
    grep -q "^listops test: accuracy $acc on 60 examples" "$tmp/eval.out" ||
        fail "eval --batch $b: $(cat "$tmp/eval.out" "$tmp/eval.err") (training said $acc)"
done

# post-norm
"$grove" "${ct[@]}" "${small[@]}" --epochs 1 --post-norm --quiet --out "$tmp/post" >/dev/null 2>"$tmp/post.err" ||
    { fail "--post-norm"; cat "$tmp/post.err"; }
grep -qx "enc-post-norm 1" "$tmp/post/config" 2>/dev/null || fail "--post-norm not in the config"

# the FastTrees-Transformer row
"$grove" "${ct[@]}" "${small[@]/#transformer/ftt}" --epochs 1 --quiet --out "$tmp/ftt" >/dev/null 2>"$tmp/ftt.err" ||
    { fail "--model ftt"; cat "$tmp/ftt.err"; }
grep -qx "enc-model ftt" "$tmp/ftt/config" 2>/dev/null || fail "--model ftt not in the config"
"$grove" "${ct[@]}" "${small[@]/#transformer/ftt-conv}" --epochs 1 --quiet --out "$tmp/fttc" >/dev/null 2>"$tmp/fttc.err" ||
    { fail "--model ftt-conv"; cat "$tmp/fttc.err"; }

# the hybrid ON-LSTM + SAN row
"$grove" "${ct[@]}" "${small[@]/#transformer/hybrid}" --chunk-size 4 --epochs 1 --quiet --out "$tmp/hybrid" >/dev/null 2>"$tmp/hybrid.err" ||
    { fail "--model hybrid"; cat "$tmp/hybrid.err"; }
grep -qx "enc-model hybrid" "$tmp/hybrid/config" 2>/dev/null || fail "--model hybrid not in the config"

# refusals
"$grove" "${ct[@]}" "${small[@]/#2/3}" --epochs 1 --quiet --out "$tmp/bad" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "--heads 3 with --nhid 16: exit $rc, want 2"
grep -q "not a multiple of --heads 3" "$tmp/err" || fail "--heads 3: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "--heads 3: stderr is not one line: $(cat "$tmp/err")"
"$grove" "${ct[@]}" --task listops --model transformer --dropout-attn 1 --out "$tmp/bad2" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q -- "--dropout-attn 1 is out of range (\[0, 1))" "$tmp/err" ||
    fail "--dropout-attn 1: exit $rc: $(cat "$tmp/err")"
{ [ -e "$tmp/bad" ] || [ -e "$tmp/bad2" ]; } && fail "a refused command left a run folder"

echo "transformer classify cli: $fails failed"
[ $fails -eq 0 ]
