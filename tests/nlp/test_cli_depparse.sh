#!/usr/bin/env bash
# grove nlp depparse (issue 24 §3) on a tiny generated corpus and a
# hand-written CoNLL file (no shared data needed): a tiny UDGN and a
# Transformer trained here; the §3 filtering (punctuation removed, counts);
# Chu-Liu gives one root per sentence; the UAS printed equals `grove nlp
# deps eval` on the CoNLL depparse writes; the left/right baselines equal
# deps eval's; the random baseline; a model without a parser and bad
# command lines: exit 2 with one line.
# With the shared data: the chain baselines on NLTK's sample equal deps
# eval's (right 27.9 / left 24.2 UAS); exits 77 after the rest without it.
#   test_cli_depparse.sh PATH/TO/grove [SHARED_DATA_DIR]
set -u
grove=$1
data=${2:-}
. "$(dirname "$0")/mlm_lib.sh"

checks=$((checks + 1))
"$grove" nlp mlm train --data "$tmp/ptb" --out "$tmp/a" $tiny --epochs 1 --max-batches 2 --quiet 2>"$tmp/err" || fail "train: $(cat "$tmp/err")"
"$grove" nlp mlm train --model transformer --data "$tmp/ptb" --out "$tmp/t" --nemb 16 --nlayers 1 --nheads 2 --batch-tokens 120 --eval-runs 1 --epochs 1 --max-batches 1 --quiet 2>"$tmp/err" || fail "transformer: $(cat "$tmp/err")"

# ---- depparse ----------------------------------------------------------------
expect 0 "UAS [0-9.]+  UUAS" nlp depparse --checkpoint "$tmp/a/best.ckpt" --trees "$tmp/gold.conll" --decoder chuliu
grep -q "2 sentences, 15 tokens" "$tmp/out" || fail "depparse counts (the '.' removed): $(cat "$tmp/out")"
cp "$tmp/out" "$tmp/d1"
expect 0 "UAS [0-9.]+  UUAS" nlp depparse --checkpoint "$tmp/a/best.ckpt" --trees "$tmp/gold_words.conll" --decoder chuliu --out "$tmp/pred.conll"
uas=$(grep -Eo "UAS [0-9.]+  UUAS [0-9.]+" "$tmp/out")
grep -q "$uas" "$tmp/d1" || fail "the punctuation changed the scores"
[ "$(grep -c . "$tmp/pred.conll")" -eq 15 ] || fail "pred.conll has $(grep -c . "$tmp/pred.conll") token lines"
[ "$(awk -F'\t' 'NF == 10 && $7 == 0' "$tmp/pred.conll" | wc -l)" -eq 2 ] || fail "chuliu: not one root per sentence"
expect 0 "UAS" nlp deps eval --gold "$tmp/gold_words.conll" --pred "$tmp/pred.conll"
grep -q "$uas" "$tmp/out" || fail "deps eval of depparse's CoNLL: $(grep UAS "$tmp/out") vs depparse's $uas"
expect 2 "exists" nlp depparse --checkpoint "$tmp/a/best.ckpt" --trees "$tmp/gold.conll" --out "$tmp/pred.conll"
expect 0 "UAS" nlp depparse --checkpoint "$tmp/a/best.ckpt" --trees "$tmp/gold.conll" --decoder argmax
for b in left right; do
    expect 0 "UAS" nlp depparse --baseline $b --trees "$tmp/gold.conll"
    got=$(grep -Eo "UAS [0-9.]+" "$tmp/out" | head -1)
    expect 0 "UAS" nlp deps eval --gold "$tmp/gold.conll" --baseline $b
    grep -q "$got" "$tmp/out" || fail "--baseline $b: depparse $got, deps eval $(grep UAS "$tmp/out")"
done
expect 0 "random, decoder eisner" nlp depparse --baseline random --trees "$tmp/gold.conll" --decoder eisner
expect 0 "drew sentence 2" nlp depparse --checkpoint "$tmp/a/best.ckpt" --trees "$tmp/gold.conll" --draw 2 --png "$tmp/t2.png"
[ "$(head -c 8 "$tmp/t2.png" | od -An -tx1 | tr -d ' ')" = "89504e470d0a1a0a" ] || fail "--png is not a PNG"
expect 0 "channel / label correlation \(Table 4.3; 13 gold arcs" nlp depparse --checkpoint "$tmp/a/best.ckpt" --trees "$tmp/gold_words.conll" --channels
grep -Eq "^  det +5  +[12]\.[12] +-?[01]\.[0-9][0-9]$" "$tmp/out" || fail "--channels det row: $(cat "$tmp/out")"
expect 2 "--channels needs --checkpoint" nlp depparse --baseline left --trees "$tmp/gold.conll" --channels
expect 2 "go together" nlp depparse --baseline left --trees "$tmp/gold.conll" --draw 2
expect 2 "exists" nlp depparse --baseline left --trees "$tmp/gold.conll" --draw 1 --png "$tmp/t2.png"
expect 1 "only 2 sentences" nlp depparse --baseline left --trees "$tmp/gold.conll" --draw 3 --png "$tmp/t3.png"
expect 2 "no parser" nlp depparse --checkpoint "$tmp/t/best.ckpt" --trees "$tmp/gold.conll"
expect 2 "exactly one" nlp depparse --checkpoint "$tmp/a/best.ckpt" --baseline left --trees "$tmp/gold.conll"
expect 2 "--decoder" nlp depparse --baseline left --trees "$tmp/gold.conll" --decoder best
expect 2 "--baseline" nlp depparse --baseline middle --trees "$tmp/gold.conll"

sample=$data/treebank_sample/treebank.zip
if [ -z "$data" ] || [ ! -f "$sample" ]; then
    echo "test_cli_depparse: $checks checks, $fails failed"
    . "$(dirname "$0")/../skip.sh"
    test_skip DATA "$fails" "no $sample: the sample's baselines not checked"
fi
expect 0 "NOT comparable" nlp depparse --baseline right --trees "$sample"
grep -q "3914 sentences, 82369 tokens" "$tmp/out" || fail "sample counts: $(cat "$tmp/out")"
grep -q "UAS 27.9  UUAS 52.0" "$tmp/out" || fail "right chain on the sample: $(grep UAS "$tmp/out")"
expect 0 "UAS 24.2  UUAS 51.8" nlp depparse --baseline left --trees "$sample"
expect 0 "NOT comparable" nlp depparse --checkpoint "$tmp/a/best.ckpt" --trees "$sample" --limit 20 --decoder eisner

echo "test_cli_depparse: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
