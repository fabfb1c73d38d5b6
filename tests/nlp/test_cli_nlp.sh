#!/usr/bin/env bash
# grove nlp tasks | corpus | parse | syneval as a user meets them: results on
# stdout, the numbers of lm_and_parsing.md, honest set names, and one-line
# errors with exit 2 (command line) or 1 (bad data).
#   test_cli_nlp.sh PATH/TO/grove SHARED_DATA_DIR   (77 when the data is absent)
set -u
. "$(dirname "$0")/../skip.sh"
grove=$1
data=$2
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
        [ -s "$tmp/out" ] && fail "grove $*: printed on stdout"
        grep -Eq -- "$pattern" "$tmp/err" || { fail "grove $*: no /$pattern/ in: $(cat "$tmp/err")"; }
    fi
}

# Without data: the command line itself.
expect 0 "^parse +unsupervised" nlp tasks
expect 0 "syneval.*Marvin" nlp tasks
expect 0 "nlp parse --checkpoint FILE" nlp tasks
expect 2 "--trees PATH is required" nlp parse --baseline right
expect 2 "either --checkpoint FILE .* or --baseline NAME" nlp parse --trees x.zip
expect 2 "either --checkpoint FILE .* or --baseline NAME" nlp parse --trees x.zip --baseline left --checkpoint m.ckpt
expect 2 "--baseline expects right, left, balanced or random, got 'up'" nlp parse --trees x --baseline up
# numeric flags out of range, -1 included (--max-len -1 once meant all
# lengths, as when it is not given)
expect 2 "^grove nlp parse: --max-len 0 is out of range \(>= 1\)" nlp parse --trees x --baseline right --max-len 0
expect 2 "^grove nlp parse: --max-len -1 is out of range \(>= 1\)" nlp parse --trees x --baseline right --max-len -1
expect 2 "^grove nlp parse: --show -1 is out of range \(>= 0\)" nlp parse --trees x --baseline right --show -1
expect 2 "^grove nlp parse: --layer 0 is out of range \(>= 1\)" nlp parse --trees x --checkpoint m.ckpt --layer 0
expect 2 "--split expects all or test" nlp parse --trees x --baseline right --split dev
expect 2 "unknown option '--checkpoints'" nlp parse --trees x --checkpoints m.ckpt
expect 2 "--data DIR is required" nlp corpus
expect 2 "--model expects unigram" nlp syneval --data x --model onlstm --ptb y
expect 2 "--limit -1 is out of range \(>= 0\)" nlp syneval --data x --ptb y --limit -1
# --batch-size is checked without --checkpoint too (where it does nothing)
expect 2 "--batch-size 0 is out of range \(>= 1\)" nlp syneval --data x --ptb y --batch-size 0
expect 2 "--data x: it does not exist" nlp syneval --data x --ptb y
expect 1 "cannot read /nonexistent/trees.zip" nlp parse --trees /nonexistent/trees.zip --baseline left
printf 'PK\003\004 this is no zip archive, only its magic' >"$tmp/fake.zip"
expect 1 "fake.zip: not a zip archive" nlp parse --trees "$tmp/fake.zip" --baseline left
printf '( (S (NN a) (VB b) )\n' >"$tmp/open.mrg"
expect 1 "open.mrg:1: the tree begun here \(byte 0\) is not closed" nlp parse --trees "$tmp/open.mrg" --baseline right
printf '( (S (NN a) (VB b) (NN c)) )\n' >"$tmp/wsj_0101.mrg"
expect 0 "f1_sentence_mean +0\.00" nlp parse --trees "$tmp/wsj_0101.mrg" --baseline left
expect 0 "NLTK-sample WSJ, all lengths: 1 sentences" nlp parse --trees "$tmp/wsj_0101.mrg" --baseline left

if [ ! -d "$data/treebank_sample" ] || [ ! -d "$data/ptb" ] || [ ! -d "$data/syneval" ]; then
    echo "nlp_cli: $checks checks, $fails failed"
    test_skip DATA "$fails" "shared data absent ($data): data checks skipped"
fi
zip=$data/treebank_sample/treebank.zip

# run ARGS...: one successful run whose stdout the following `has` lines
# inspect (each data command runs once: the suite stays fast under ASan).
run() {
    checks=$((checks + 1))
    last="grove $*"
    "$grove" "$@" >"$tmp/run" 2>"$tmp/run_err" || { fail "$last: exit $?"; cat "$tmp/run_err"; }
}
has() {
    checks=$((checks + 1))
    grep -Eq -- "$1" "$tmp/run" || { fail "$last: no /$1/ in stdout"; cat "$tmp/run"; }
}

run nlp parse --trees "$zip" --baseline right --max-len 10 --show 1
has "^set: +NLTK-sample WSJ10: 555 sentences"
has "^f1_sentence_mean +58\.60 "
has "^f1_corpus_evalb +63\.26 "
has "^f1_corpus_nontrivial +55\.00 "
has "^  predicted: \(a \(lorillard"
# never a bare "WSJ10" for the sample
checks=$((checks + 1))
if grep -E "WSJ10" "$tmp/run" | grep -vq "NLTK-sample WSJ10"; then
    fail "the sample is called WSJ10 somewhere"; grep WSJ10 "$tmp/run"
fi
run nlp parse --trees "$zip" --baseline left --all-labels
has "^set: +NLTK-sample WSJ, all lengths: 3,914 sentences"
has "^f1_sentence_mean +8\.63 "
has "^f1_corpus_evalb +11\.69 "
has "^mean depth +10\.95 "
has "^  INTJ +33\.33 %  \(1 of 3\)"
has "^  SINV "
run nlp parse --trees "$zip" --baseline balanced --max-len 10
has "^f1_sentence_mean +42\.67 "
expect 1 "--split test needs WSJ section 23.*NLTK's sample is sections 00-01" nlp parse --trees "$zip" --baseline right --split test
run nlp parse --trees "$zip" --baseline random --seed 3
has "random baseline .*, seed 3"
run nlp corpus --data "$data/ptb"
has "10,000 types"
has "test +82,430 +3,761 +639\.30 +B=1: 82,430 rows"
has "train +929,589 .* B=20: 46,479 rows \(9 tokens dropped\)"
expect 1 "no ptb.train.txt or train.txt" nlp corpus --data "$tmp"
run nlp syneval --data "$data/syneval/marvin_linzen_2018.tsv" --ptb "$data/ptb" --quiet
has "30 word types .* 33,940 items collapse"
has "^NPI across a relative clause +10,560 +0 +0\.00 "
# --limit: items spread over the whole file, every case keeps its share
run nlp syneval --data "$data/syneval/marvin_linzen_2018.tsv" --ptb "$data/ptb" --quiet --limit 1000
has "1,000 of its 163,124 items, spread evenly"
has "^NPI across a relative clause +[1-9][0-9] "
has "^SVA simple +[1-9]"
expect 1 "ptb.test.txt:1: header" nlp syneval --data "$data/ptb/ptb.test.txt" --ptb "$data/ptb"

echo "nlp_cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
