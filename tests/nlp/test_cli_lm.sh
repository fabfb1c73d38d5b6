#!/usr/bin/env bash
# grove nlp lm train | eval, and parse / syneval --checkpoint, as a user
# meets them: a tiny run on a slice of PTB (so that it is quick, also under
# ASan), its run folder, --resume, refusals, and one-line errors with exit 2
# (command line) or 1 (bad file).
#   test_cli_lm.sh PATH/TO/grove SHARED_DATA_DIR   (77 when the data is absent)
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

# The command line alone (no data needed).
expect 2 "--data DIR is required" nlp lm train --out "$tmp/x"
expect 2 "--out PATH is required" nlp lm train --data "$tmp"
expect 2 "--model expects one of onlstm\|lstm\|ft\|cft\|fft\|ftlstm, got 'gru'" nlp lm train --data d --out o --model gru
expect 2 "not a multiple of chunk-size 10" nlp lm train --data d --out o --nhid 1155
expect 2 "^grove nlp lm train: --dropouth 1.5 is out of range \(\[0, 1\)\)" nlp lm train --data d --out o --dropouth 1.5
expect 2 "--when: 'x' is not an epoch" nlp lm train --data d --out o --when 3,x
expect 2 "--resume and --force exclude each other" nlp lm train --data d --out o --resume --force
expect 2 "--checkpoint FILE is required" nlp lm eval --data d
# every numeric flag typed out of its range: one line naming it and its
# range, exit 2; -1 too (--finetuning -1 once meant the model's default,
# --batch-size -1 of lm eval the split's)
while read -r flag value range; do
    expect 2 "^grove nlp lm train: --$flag $value is out of range \($range\) \(see" \
        nlp lm train --data d --out o --"$flag" "$value"
done <<'RANGES'
emsize 0 >= 1
nhid -1 >= 1
nlayers 0 1\.\.8
nlayers 9 1\.\.8
chunk-size -1 >= 1
bptt 0 >= 1
batch-size -1 >= 1
lr 0 > 0
clip -1 >= 0
dropout -1 \[0, 1\)
dropouti 1 \[0, 1\)
dropoute -0.5 \[0, 1\)
wdrop -1 \[0, 1\)
wdecay -1 >= 0
alpha -1 >= 0
beta -1 >= 0
nonmono -1 >= 0
finetuning -1 >= 0
epochs -1 >= 0
max-batches -1 >= 0
eval-batch-size 0 >= 1
test-batch-size -1 >= 1
RANGES
# a flag of another model is still checked (--chunk-size -1 once passed
# for lstm, which reads no chunk size)
expect 2 "^grove nlp lm train: --chunk-size -1 is out of range" nlp lm train --data d --out o --model lstm --chunk-size -1
expect 2 "^grove nlp lm eval: --batch-size -1 is out of range \(>= 1\)" nlp lm eval --checkpoint c --data d --batch-size -1
expect 2 "^grove nlp lm eval: --bptt 0 is out of range \(>= 1\)" nlp lm eval --checkpoint c --data d --bptt 0
expect 2 "--split expects valid or test" nlp lm eval --checkpoint c --data d --split train
expect 1 "cannot read|No such file" nlp lm eval --checkpoint "$tmp/none.ckpt" --data "$tmp"

if [ ! -d "$data/ptb" ]; then
    echo "cli_lm: $checks checks, $fails failed"
    test_skip DATA "$fails" "no $data/ptb: the rest is skipped"
fi

# A slice of PTB: quick, with its own (smaller) vocabulary.
mkdir -p "$tmp/ptb"
head -n 400 "$data/ptb/ptb.train.txt" >"$tmp/ptb/ptb.train.txt"
head -n 60 "$data/ptb/ptb.valid.txt" >"$tmp/ptb/ptb.valid.txt"
head -n 60 "$data/ptb/ptb.test.txt" >"$tmp/ptb/ptb.test.txt"
small=(--data "$tmp/ptb" --emsize 16 --nhid 24 --nlayers 3 --chunk-size 4
       --batch-size 8 --bptt 20 --max-batches 15 --test-batch-size 4 --quiet)

expect 0 "best valid: ppl" nlp lm train "${small[@]}" --out "$tmp/run" --epochs 2
for f in best.ckpt last.ckpt metrics.csv summary.txt command config curves.png; do
    checks=$((checks + 1))
    [ -s "$tmp/run/$f" ] || fail "run folder lacks $f"
done
checks=$((checks + 1))
[ "$(wc -l <"$tmp/run/metrics.csv")" -eq 3 ] || fail "metrics.csv: want a header and 2 rows"
checks=$((checks + 1))
head -n 1 "$tmp/run/metrics.csv" | grep -q "^epoch,global_step,wall_s,phase,lr,train_loss,train_ppl,val_loss,val_ppl,val_ppl_compat" ||
    fail "metrics.csv header"
expect 0 "test: +ppl [0-9.]+ \(exact mean\)" nlp lm train "${small[@]}" --out "$tmp/run2" --epochs 1
expect 1 "exists.*--force" nlp lm train "${small[@]}" --out "$tmp/run" --epochs 2
expect 0 "run: .*3 epochs" nlp lm train "${small[@]}" --out "$tmp/run" --epochs 3 --resume
checks=$((checks + 1))
[ "$(wc -l <"$tmp/run/metrics.csv")" -eq 4 ] || fail "metrics.csv after --resume: want 3 rows"
expect 1 "resume.*last.ckpt|last.ckpt" nlp lm train "${small[@]}" --out "$tmp/nowhere" --resume

# --fixed-windows: whole epochs of windows of exactly --bptt steps, so the
# count is ceil((rows - 2) / bptt) with rows = tokens / batch (one <eos> a line).
expect 0 "best valid: ppl" nlp lm train --data "$tmp/ptb" --emsize 16 --nhid 24 --chunk-size 4 \
    --batch-size 8 --bptt 20 --fixed-windows --epochs 1 --test-batch-size 4 --finetuning 0 --quiet --out "$tmp/fixed"
tokens=$(($(wc -w <"$tmp/ptb/ptb.train.txt") + $(wc -l <"$tmp/ptb/ptb.train.txt")))
rows=$((tokens / 8))
want=$(((rows - 2 + 19) / 20))
got=$(tail -n 1 "$tmp/fixed/metrics.csv" | awk -F, '{print $13}')
checks=$((checks + 1))
[ "$got" = "$want" ] || fail "--fixed-windows: $got windows, want $want"
checks=$((checks + 1))
grep -q "^fixed-windows 1$" "$tmp/fixed/config" || fail "config lacks fixed-windows 1"
# --finetuning 0 (the end of its range) is taken; not given, the model's
# default (500 for onlstm)
checks=$((checks + 1))
grep -q "^finetuning 0$" "$tmp/fixed/config" || fail "--finetuning 0: config lacks finetuning 0"
checks=$((checks + 1))
grep -q "^finetuning 500$" "$tmp/run/config" || fail "no --finetuning: config lacks the default finetuning 500"

expect 0 "^perplexity +[0-9.]+ +exact mean" nlp lm eval --checkpoint "$tmp/run/best.ckpt" --data "$tmp/ptb" --quiet
expect 0 "reference-compatible" nlp lm eval --checkpoint "$tmp/run/best.ckpt" --data "$tmp/ptb" --compat --split valid --quiet
expect 1 "vocabulary" nlp lm eval --checkpoint "$tmp/run/best.ckpt" --data "$data/ptb" --quiet
head -c 300 "$tmp/run/best.ckpt" >"$tmp/cut.ckpt"
expect 1 "cut.ckpt" nlp lm eval --checkpoint "$tmp/cut.ckpt" --data "$tmp/ptb" --quiet

if [ -f "$data/treebank_sample/treebank.zip" ]; then
    expect 0 "NLTK-sample WSJ10: 555 sentences" nlp parse --checkpoint "$tmp/run/best.ckpt" --trees "$data/treebank_sample/treebank.zip" --max-len 10 --quiet
    expect 0 "ON-LSTM syntactic distances \(layer 3 of 3" nlp parse --checkpoint "$tmp/run/best.ckpt" --trees "$data/treebank_sample/treebank.zip" --max-len 10 --layer 3 --quiet
    expect 1 "--layer 4: the model has layers 1 to 3" nlp parse --checkpoint "$tmp/run/best.ckpt" --trees "$data/treebank_sample/treebank.zip" --layer 4 --quiet
    expect 0 "lstm|LSTM" nlp lm train "${small[@]}" --model lstm --out "$tmp/lstm" --epochs 1
    expect 1 "LSTM language model: parsing needs the ON-LSTM" nlp parse --checkpoint "$tmp/lstm/best.ckpt" --trees "$data/treebank_sample/treebank.zip" --quiet
fi

printf 'task\tcondition\tgrammatical\tungrammatical\tungrammatical2\n' >"$tmp/syn.tsv"
printf 'simple_agrmt\tsing\tthe company says\tthe company say\t\n' >>"$tmp/syn.tsv"
printf 'simple_agrmt\tplur\tthe companies say\tthe companies says\t\n' >>"$tmp/syn.tsv"
printf 'simple_agrmt\tplur\tthe unknownword say\tthe unknownword says\t\n' >>"$tmp/syn.tsv"
printf 'simple_agrmt\tplur\tthe company sayy\tthe company sayz\t\n' >>"$tmp/syn.tsv"
printf 'simple_npi_anim\tpast\tno company has ever been\tmost companies have ever been\tthe company has ever been\n' >>"$tmp/syn.tsv"
expect 0 "^SVA simple +4 +1 +(0\.[0-9]+|1\.00)" nlp syneval --checkpoint "$tmp/run/best.ckpt" --data "$tmp/syn.tsv" --quiet
expect 0 "scorer: +ON-LSTM language model" nlp syneval --checkpoint "$tmp/run/best.ckpt" --data "$tmp/syn.tsv" --quiet
expect 2 "--batch-size 0 is out of range \(>= 1\)" nlp syneval --checkpoint "$tmp/run/best.ckpt" --data "$tmp/syn.tsv" --batch-size 0

echo "cli_lm: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
