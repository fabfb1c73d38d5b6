#!/usr/bin/env bash
# The FastTrees cells from the command line (issue 22): refusals (unknown
# --model lists the valid ones, --conv-axis without cft, a last.ckpt of one
# cell resumed as another), the exact parameter counts at the PTB size with
# --epochs 0 (initial model written, nothing evaluated), and a short run of
# each cell through train, eval, parse (layer 2's d^f) and syneval; the
# classifier harness with --model ft|cft|fft. Needs ../shared/data/ptb
# (skipped without).
#   test_cli_fasttrees.sh GROVE SHARED_DATA_DIR
set -u
grove=$1
data=$2
. "$(dirname "$0")/../skip.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
checks=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect RC PATTERN ARGS...: exit RC; PATTERN in stdout (0) or in the one
# stderr line (else)
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
        grep -Eq -- "$pattern" "$tmp/err" || fail "grove $*: no /$pattern/ in: $(cat "$tmp/err")"
    fi
}

expect 2 "--model expects one of onlstm\|lstm\|ft\|cft\|fft\|ftlstm, got 'fasttrees'" nlp lm train --data d --out "$tmp/x" --model fasttrees
expect 2 "--conv-axis applies to --model cft only" nlp lm train --data d --out "$tmp/x" --model ft --conv-axis time
expect 2 "--conv-axis expects time or batch_compat, got 'batch'" nlp lm train --data d --out "$tmp/x" --model cft --conv-axis batch
checks=$((checks + 1))
"$grove" nlp lm train --help | tr -s ' \n' ' ' | grep -q "batch_compat = the reference's convolution along the batch axis" ||
    fail "--help does not explain batch_compat"
[ -e "$tmp/x" ] && fail "a refused command left $tmp/x behind"

# bench nlp with the variants (quick sizes, no PyTorch): a row per model
# with its epoch time relative to grove's ON-LSTM
expect 0 "^\| small fft, time [0-9.]+ of onlstm" bench nlp --quick --models onlstm,cft,fft --cases small --rounds 1 --windows 1 --warmup 0 --no-baseline --threads 1
checks=$((checks + 1))
grep -Eq "^\| small cft, time [0-9.]+ of onlstm" "$tmp/out" || fail "bench nlp: no cft row"
expect 2 "--models: unknown model 'gru' \(expected one of onlstm" bench nlp --quick --models onlstm,gru --no-baseline

if [ ! -d "$data/ptb" ]; then
    echo "cli_fasttrees: $checks checks, $fails failed"
    test_skip DATA "$fails" "no $data/ptb: the rest is skipped"
fi

# --epochs 0: the exact count in digits (FFT with the reference's
# allocation beside it; the PTB counts, 24,670,640 / 24,895,580 /
# 13,439,840, are nlp_fasttrees's, at a small size here to stay quick:
# 10,000 x 40 + 10,000 + the layers 40 -> 60 -> 60 -> 40, chunk 10,
# counted by hand in Python),
# last.ckpt, no evaluation
for pair in "ft:481,792 parameters$" "cft:482,528 parameters$" "fft:445,952 parameters: 0.45M \(reference allocates 0.48M, 0.04M unused\)"; do
    m=${pair%%:*}
    expect 0 "^model: +$m, ${pair#*:}" nlp lm train --model "$m" --data "$data/ptb" --emsize 40 --nhid 60 --out "$tmp/z$m" --epochs 0 --threads 1
    checks=$((checks + 1))
    grep -q "nothing evaluated" "$tmp/out" || fail "$m --epochs 0: $(cat "$tmp/out")"
    checks=$((checks + 1))
    grep -q "^test:" "$tmp/out" && fail "$m --epochs 0 evaluated the test set"
    checks=$((checks + 1))
    [ -s "$tmp/z$m/last.ckpt" ] && [ ! -e "$tmp/z$m/best.ckpt" ] || fail "$m --epochs 0: want last.ckpt only"
done
# a last.ckpt of one cell resumed as another: one line
expect 1 "holds a ft model; --model fft cannot resume it" nlp lm train --model fft --data "$data/ptb" --out "$tmp/zft" --resume --epochs 1

# A slice of PTB: each cell trains, evaluates, parses, scores
mkdir -p "$tmp/ptb"
head -n 400 "$data/ptb/ptb.train.txt" >"$tmp/ptb/ptb.train.txt"
head -n 60 "$data/ptb/ptb.valid.txt" >"$tmp/ptb/ptb.valid.txt"
head -n 60 "$data/ptb/ptb.test.txt" >"$tmp/ptb/ptb.test.txt"
small=(--data "$tmp/ptb" --emsize 16 --nhid 24 --nlayers 3 --chunk-size 4
       --batch-size 8 --bptt 20 --max-batches 6 --test-batch-size 4 --threads 1)
printf 'task\tcondition\tgrammatical\tungrammatical\tungrammatical2\n' >"$tmp/syn.tsv"
printf 'simple_agrmt\tsing\tthe company says\tthe company say\t\n' >>"$tmp/syn.tsv"
printf 'simple_agrmt\tplur\tthe companies say\tthe companies says\t\n' >>"$tmp/syn.tsv"
for m in ft cft fft; do
    expect 0 "best valid: ppl" nlp lm train --model "$m" "${small[@]}" --out "$tmp/$m" --epochs 1
    checks=$((checks + 1))
    grep -q "^model $m$" "$tmp/$m/summary.txt" || fail "$m: summary.txt does not name the model"
    expect 0 "^perplexity +[0-9.]+ +exact mean" nlp lm eval --checkpoint "$tmp/$m/best.ckpt" --data "$tmp/ptb" --quiet
    if [ -e "$data/treebank_sample/treebank.zip" ]; then
        expect 0 "syntactic distances \(layer 2 of 3" nlp parse --checkpoint "$tmp/$m/best.ckpt" --trees "$data/treebank_sample/treebank.zip" --max-len 10 --quiet
    fi
    expect 0 "^SVA simple +2 +0 +(0\.[0-9]+|1\.00)" nlp syneval --checkpoint "$tmp/$m/best.ckpt" --data "$tmp/syn.tsv" --quiet
done
expect 0 "Conv. FastTrees syntactic distances" nlp parse --checkpoint "$tmp/cft/best.ckpt" --trees "$data/treebank_sample/treebank.zip" --max-len 10 --quiet
expect 0 "best valid: ppl" nlp lm train --model cft --conv-axis batch_compat "${small[@]}" --out "$tmp/cftb" --epochs 1
checks=$((checks + 1))
grep -q "^conv-axis batch_compat$" "$tmp/cftb/config" || fail "cft batch_compat: not in the run's config"

# the classifier harness: a small generated ListOps task (ft, fft here;
# cft on SNLI below)
"$grove" nlp listops generate --n 1100 --max-depth 3 --seed 1 --out "$tmp/lo.tsv" --quiet >/dev/null || fail "listops generate"
"$grove" nlp listops generate --n 100 --max-depth 3 --seed 2 --out "$tmp/lo_test.tsv" --quiet >/dev/null || fail "listops generate"
for m in ft fft; do
    expect 0 "test accuracy \(best.ckpt\) 0\.[0-9]+" nlp classify train --task listops --model "$m" --train "$tmp/lo.tsv" --test "$tmp/lo_test.tsv" --emsize 16 --nhid 24 --batch 16 --epochs 1 --seed 3 --threads 1 --out "$tmp/cls_$m"
done
expect 2 "cft: the convolution reads the first 2n = 256 input features, emsize is 16" nlp classify train --task listops --model cft --train "$tmp/lo.tsv" --test "$tmp/lo_test.tsv" --emsize 16 --nhid 128 --chunk-size 1 --quiet --out "$tmp/badcft"
checks=$((checks + 1))
[ -e "$tmp/badcft" ] && fail "a refused classify run left its folder"
# induced trees of a FastTrees classifier (its forget distances)
expect 0 "corpus F1" nlp classify trees --checkpoint "$tmp/cls_fft/best.ckpt" --test "$tmp/lo_test.tsv" --limit 20 --out "$tmp/trees.txt"
checks=$((checks + 1))
[ "$(wc -l <"$tmp/trees.txt")" -eq 20 ] || fail "classify trees: want 20 trees, got $(wc -l <"$tmp/trees.txt")"

# SNLI: the hand-written sample (tests/fixtures/snli) through the harness
snli=$(dirname "$0")/../fixtures/snli/snli_sample.jsonl
expect 0 "^run .*snli: snli with cft, 1 epochs" nlp classify train --task snli --model cft --train "$snli" --valid "$snli" --test "$snli" --emsize 16 --nhid 24 --epochs 1 --threads 1 --out "$tmp/snli"
expect 0 "test accuracy \(best.ckpt\) [01]\.[0-9]+ on 11 examples" nlp classify train --task snli --model fft --train "$snli" --valid "$snli" --test "$snli" --emsize 16 --nhid 24 --epochs 1 --threads 1 --out "$tmp/snli2"
expect 2 "--task snli needs --data DIR" nlp classify train --task snli --model ft --out "$tmp/snli3"
expect 0 "^snli +Stanford NLI" nlp tasks
echo "cli_fasttrees: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
