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
fails=0
checks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect RC PATTERN ARGS...: exit status RC and PATTERN (grep -E) in stdout
# (RC 0) or in the single stderr line (RC != 0).
expect() {
    local want_rc=$1 pattern=$2
    shift 2
    checks=$((checks + 1))
    "$grove" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -ne "$want_rc" ]; then
        fail "grove $*: exit $rc, want $want_rc"; cat "$tmp/err"; return
    fi
    if [ "$want_rc" -eq 0 ]; then
        grep -Eq -- "$pattern" "$tmp/out" || { fail "grove $*: no /$pattern/ in stdout"; cat "$tmp/out"; }
    else
        [ "$(wc -l <"$tmp/err")" -eq 1 ] || { fail "grove $*: stderr is not one line"; cat "$tmp/err"; }
        grep -Eq -- "$pattern" "$tmp/err" || { fail "grove $*: no /$pattern/ in: $(cat "$tmp/err")"; }
    fi
}

# A tiny PTB-format corpus (one sentence a line) and gold trees over it.
mkdir -p "$tmp/ptb"
words="the a dog cat man saw chased big small red park in on with"
gen() { # gen N SEED -> N sentences
    awk -v n="$1" -v s="$2" -v w="$words" 'BEGIN { srand(s); k = split(w, W, " ");
        for (i = 0; i < n; i++) { m = 3 + int(rand() * 6); l = "";
            for (j = 0; j < m; j++) l = l (j ? " " : "") W[1 + int(rand() * k)];
            print l } }'
}
gen 120 1 >"$tmp/ptb/ptb.train.txt"
gen 20 2 >"$tmp/ptb/ptb.valid.txt"
gen 20 3 >"$tmp/ptb/ptb.test.txt"
cat >"$tmp/gold.conll" <<'EOF'
1	The	_	DT	DT	_	2	det	_	_
2	dog	_	NN	NN	_	3	nsubj	_	_
3	saw	_	VBD	VBD	_	0	root	_	_
4	a	_	DT	DT	_	5	det	_	_
5	cat	_	NN	NN	_	3	dobj	_	_
6	.	_	.	.	_	3	punct	_	_

1	A	_	DT	DT	_	3	det	_	_
2	big	_	JJ	JJ	_	3	amod	_	_
3	man	_	NN	NN	_	4	nsubj	_	_
4	chased	_	VBD	VBD	_	0	root	_	_
5	the	_	DT	DT	_	7	det	_	_
6	small	_	JJ	JJ	_	7	amod	_	_
7	cat	_	NN	NN	_	4	dobj	_	_
8	in	_	IN	IN	_	4	prep	_	_
9	the	_	DT	DT	_	10	det	_	_
10	park	_	NN	NN	_	8	pobj	_	_

EOF
grep -v $'\t[.]\t' "$tmp/gold.conll" >"$tmp/gold_words.conll"   # §3-filtered by hand
tiny="--nemb 16 --nlayers 2 --nheads 2 --head-size 4 --parser-layers 1 --batch-tokens 120 --eval-runs 2 --pos-classes 2"

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
