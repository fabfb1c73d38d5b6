#!/usr/bin/env bash
# grove nlp deps convert | eval as a user meets them: the loud "not
# comparable" note on converted trees, a conversion scoring 100 against
# itself, the chain baselines, hand-made CoNLL files with known scores,
# outputs never overwritten without --force, one-line errors with exit 2
# (command line) or 1 (bad data, naming file and line).
#   test_cli_deps.sh PATH/TO/grove SHARED_DATA_DIR
# Exits 77 after the hand-made part when the treebank sample is absent.
set -u
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

# Hand-made gold: The dog barks . (dog <- barks root; . removed by §3)
printf '1\tThe\t_\tDT\tDT\t_\t2\tdet\t_\t_\n2\tdog\t_\tNN\tNN\t_\t3\tnsubj\t_\t_\n3\tbarks\t_\tVBZ\tVBZ\t_\t0\troot\t_\t_\n4\t.\t_\t.\t.\t_\t3\tpunct\t_\t_\n\n' >"$tmp/gold.conll"
# Pred: The <- barks, dog <- barks, barks root, . <- dog: 2 of 3 kept
# tokens right; undirected {The,barks} wrong, {dog,barks} and {barks} right.
printf '1\tThe\t_\tDT\tDT\t_\t3\tx\t_\t_\n2\tdog\t_\tNN\tNN\t_\t3\tx\t_\t_\n3\tbarks\t_\tVBZ\tVBZ\t_\t0\tx\t_\t_\n4\t.\t_\t.\t.\t_\t2\tx\t_\t_\n\n' >"$tmp/pred.conll"
expect 0 "UAS 66.7  UUAS 66.7  root 100.0" nlp deps eval --gold "$tmp/gold.conll" --pred "$tmp/pred.conll"
expect 0 "det +1 +0.0" nlp deps eval --gold "$tmp/gold.conll" --pred "$tmp/pred.conll"
# All four tokens: . wrong too (2/4), UUAS {The,barks} and {dog,.} wrong.
expect 0 "UAS 50.0  UUAS 50.0  root 100.0" nlp deps eval --gold "$tmp/gold.conll" --pred "$tmp/pred.conll" --no-filter
# Right chain: The<-dog ok, dog<-barks ok, barks root ok (. removed): 100.
expect 0 "UAS 100.0" nlp deps eval --gold "$tmp/gold.conll" --baseline right
expect 0 "UAS 0.0  UUAS 66.7  root 0.0" nlp deps eval --gold "$tmp/gold.conll" --baseline left
grep -q "NOT comparable" "$tmp/out" && fail "the note printed for CoNLL gold"

# Command-line errors: exit 2, one line.
expect 2 "exactly one of --pred and --baseline" nlp deps eval --gold "$tmp/gold.conll"
expect 2 "exactly one of --pred and --baseline" nlp deps eval --gold "$tmp/gold.conll" --pred "$tmp/pred.conll" --baseline left
expect 2 "--baseline 'middle'" nlp deps eval --gold "$tmp/gold.conll" --baseline middle
expect 2 "--tag-column must be 0..10" nlp deps eval --gold "$tmp/gold.conll" --baseline left --tag-column 11
expect 2 "--coord applies to a treebank" nlp deps eval --gold "$tmp/gold.conll" --baseline left --coord
expect 2 "does not exist" nlp deps eval --gold "$tmp/none.conll" --baseline left
expect 2 "" nlp deps eval --gold "$tmp/gold.conll" --baseline left --baseline right
expect 2 "--trees" nlp deps convert --out "$tmp/x.conll"

# Bad data: exit 1 naming file and line.
printf '1\tThe\t_\tDT\tDT\t_\t2\tdet\t_\t_\n2\tdog\t_\tNN\tNN\t_\tq\tnsubj\t_\t_\n' >"$tmp/bad.conll"
expect 1 "bad.conll:2: HEAD 'q' is not a number" nlp deps eval --gold "$tmp/bad.conll" --baseline left
printf '1\tThe\t_\tDT\tDT\t_\t0\tdet\t_\t_\n\n' >"$tmp/short.conll"
expect 1 "short.conll:1: sentence 1 has 1 tokens, the gold's .*gold.conll:1. has 4" nlp deps eval --gold "$tmp/gold.conll" --pred "$tmp/short.conll"
printf '(S (NP (NN a))\n' >"$tmp/open.mrg"
expect 1 "open.mrg" nlp deps convert --trees "$tmp/open.mrg" --out "$tmp/o.conll"
[ -e "$tmp/o.conll" ] && fail "a failed conversion left its output"

# A hand tree through the converter (auxiliary heads the VP).
printf '( (S (NP-SBJ (NNP John)) (VP (MD will) (VP (VB see) (NP (NNP Mary)))) (. .)) )\n' >"$tmp/wsj_0001.mrg"
expect 0 "NOT comparable" nlp deps convert --trees "$tmp/wsj_0001.mrg" --out "$tmp/t.conll"
checks=$((checks + 1))
[ "$(cut -f7 "$tmp/t.conll" | tr '\n' ' ')" = "2 0 2 3 2  " ] || { fail "converted heads: $(cut -f7 "$tmp/t.conll" | tr '\n' ' ')"; }
expect 1 "already exists" nlp deps convert --trees "$tmp/wsj_0001.mrg" --out "$tmp/t.conll"
expect 0 "wrote 1 sentences, 4 tokens \(word tags only" nlp deps convert --trees "$tmp/wsj_0001.mrg" --out "$tmp/t.conll" --force --filter

sample="$data/treebank_sample/treebank.zip"
if [ ! -f "$sample" ]; then
    echo "deps cli: $checks checks, $fails failed; skip: $sample is absent"
    [ "$fails" -eq 0 ] || exit 1
    exit 77
fi
expect 0 "wrote 3914 sentences" nlp deps convert --trees "$sample" --out "$tmp/s.conll"
grep -q "NOT comparable" "$tmp/out" || fail "convert: no note"
expect 0 "UAS 100.0  UUAS 100.0  root 100.0" nlp deps eval --gold "$sample" --pred "$tmp/s.conll" --quiet
grep -q "NOT comparable" "$tmp/out" || fail "eval: no note"
expect 0 "3914 sentences, 82369 tokens" nlp deps eval --gold "$sample" --baseline right --quiet
echo "deps cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
