#!/usr/bin/env bash
# grove nlp classify train | eval as a user meets them: refusals of a wrong
# command line (one line, exit 2, no run folder left), a small ListOps run
# on generated data (run folder, metrics columns, the data summary, eval of
# best.ckpt equal to training's test accuracy and independent of the eval
# batch), --epochs 0, --resume continuing bit for bit, another kind of
# checkpoint refused; with ../shared/data, logic's per-length columns.
#   test_cli_classify.sh GROVE CKPT_DIGEST SHARED_DATA_DIR
set -u
grove=$1
digest=$2
data=$3
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

ct=(nlp classify train)
expect 2 "--task is required" "${ct[@]}" --out "$tmp/x"
expect 2 "--task 'nli' is not logic, listops, sst2, sst5 or snli" "${ct[@]}" --task nli --out "$tmp/x"
expect 2 "unknown model 'gru' \(known: lstm\|onlstm\|om" "${ct[@]}" --task listops --model gru --out "$tmp/x"
expect 2 "--out DIR .*is required" "${ct[@]}" --task listops
expect 2 "--task logic needs --data DIR" "${ct[@]}" --task logic --out "$tmp/x"
expect 2 "--split is for --task logic only" "${ct[@]}" --task listops --split A --out "$tmp/x"
expect 2 "--split 'D' is not full, A, B or C" "${ct[@]}" --task logic --split D --data "$tmp" --out "$tmp/x"
expect 2 "^grove nlp classify train: --dropouti 1.5 is out of range \(\[0, 1\)\)" "${ct[@]}" --task listops --dropouti 1.5 --out "$tmp/x"
expect 2 "--data .*nowhere.* does not exist" "${ct[@]}" --task logic --data "$tmp/nowhere" --out "$tmp/x"
expect 2 "--resume and --force exclude each other" "${ct[@]}" --task listops --resume --force --out "$tmp/x"
expect 2 "--checkpoint FILE is required" nlp classify eval
# every numeric flag typed out of its range is refused in one line naming
# it and its range; -1 (and -2) too, which the parser once kept as "not
# given" and replaced silently by the default (a flag the model does not
# read is refused for its range first, whatever the model)
while read -r flag value range; do
    expect 2 "^grove nlp classify train: --$flag $value is out of range \($range\) \(see" \
        "${ct[@]}" --task listops --model lstm --"$flag" "$value" --out "$tmp/x"
done <<'RANGES'
epochs -1 >= 0
batch -1 >= 1
max-batches -1 >= 0
test-every 0 >= 1
eval-batch -1 >= 1
eval-tokens -1 >= 0
emsize -1 1\.\.65536
emsize 65537 1\.\.65536
nhid -1 1\.\.65536
chunk-size -1 1\.\.65536
slots -1 >= 1
slots-eval 0 >= 1
layers -1 1\.\.64
heads -1 1\.\.65536
ffn -1 1\.\.262144
head-hidden -1 >= 0
head-hidden -2 >= 0
lr 0 > 0
lr -2147483648 > 0
clip -1 >= 0
wdecay -1 >= 0
dropouti -1 \[0, 1\)
dropout -1 \[0, 1\)
dropoutm -1 \[0, 1\)
dropouto -1 \[0, 1\)
dropout-attn -1 \[0, 1\)
RANGES
# --listops-n: below 1,001 no generated tree is left for training (1,000
# are held out for validation; all of them with --valid FILE, where 1 is
# the end); refused where nothing is generated or for another task
lo_min="is out of range \(>= 1001\): 1000 generated trees are held out for validation \(without --valid FILE\), and training needs at least one more \(see"
expect 2 "^grove nlp classify train: --listops-n 1000 $lo_min" "${ct[@]}" --task listops --model lstm --listops-n 1000 --out "$tmp/x"
expect 2 "^grove nlp classify train: --listops-n -1 $lo_min" "${ct[@]}" --task listops --model lstm --listops-n -1 --out "$tmp/x"
"$grove" nlp listops generate --n 20 --seed 9 --out "$tmp/lo20.tsv" --quiet >/dev/null || fail "listops generate --n 20"
expect 2 "^grove nlp classify train: --listops-n 0 is out of range \(>= 1\) \(see" \
    "${ct[@]}" --task listops --model lstm --listops-n 0 --valid "$tmp/lo20.tsv" --out "$tmp/x"
expect 0 "wrote the initial model" "${ct[@]}" --task listops --model lstm --listops-n 20 --valid "$tmp/lo20.tsv" \
    --emsize 4 --nhid 4 --epochs 0 --threads 1 --quiet --out "$tmp/lo-valid"
grep -qx "listops-n 20" "$tmp/lo-valid/config" || fail "--listops-n 20 --valid: the config lacks 'listops-n 20'"
expect 2 "^grove nlp classify train: --listops-n: nothing is generated with --train FILE" \
    "${ct[@]}" --task listops --model lstm --listops-n 2000 --train "$tmp/lo20.tsv" --out "$tmp/x"
mkdir -p "$tmp/lo-dir"
cp "$tmp/lo20.tsv" "$tmp/lo-dir/train_d20s.tsv"
expect 2 "^grove nlp classify train: --listops-n: nothing is generated: the training trees are read from .*lo-dir/train_d20s.tsv" \
    "${ct[@]}" --task listops --model lstm --listops-n 2000 --data "$tmp/lo-dir" --out "$tmp/x"
expect 2 "^grove nlp classify train: --listops-n is for --task listops .*, not logic" \
    "${ct[@]}" --task logic --listops-n 2000 --data "$tmp/lo-dir" --out "$tmp/x"
expect 2 "--listops-n is for --task listops .*, not sst2" "${ct[@]}" --task sst2 --listops-n 2000 --out "$tmp/x"
# above the minimum the seed decides whether a tree left for training has
# at most 50 tokens: with seed 1 the one tree of 1,001 left is longer
expect 1 "^grove nlp classify train: listops: no training examples: the 1 generated trees left after the 1000 held out for validation all have more than 50 tokens \(seed 1\); generate more trees \(--listops-n\)$" \
    "${ct[@]}" --task listops --model lstm --listops-n 1001 --seed 1 --emsize 4 --nhid 4 --epochs 0 --threads 1 --quiet --out "$tmp/x"
[ -e "$tmp/x" ] && fail "a refused --listops-n left $tmp/x behind"
# the values at the ends of the ranges are taken, and written to the config
expect 0 "wrote the initial model" "${ct[@]}" --task listops --model lstm --listops-n 1100 --emsize 1 --nhid 1 \
    --head-hidden 0 --dropouti 0 --dropouto 0 --epochs 0 --threads 1 --quiet --out "$tmp/ends"
for line in "enc-emsize 1" "enc-hidden 1" "head-hidden 0" "listops-n 1100"; do
    grep -qx "$line" "$tmp/ends/config" || fail "range ends: the config lacks '$line'"
done
# --chunk-size means something to the chunked cells only
expect 2 "--chunk-size is for --model onlstm, ft, cft, fft, hybrid or hybrid-san \(structformer has no chunked cell\)" \
    "${ct[@]}" --task listops --model structformer --chunk-size 4 --out "$tmp/x"
expect 2 "--chunk-size is for --model onlstm, ft, cft, fft, hybrid or hybrid-san \(lstm has no chunked cell\)" \
    "${ct[@]}" --task listops --model lstm --chunk-size 4 --out "$tmp/x"
# the other model-specific flags: one line naming the flag and its models
om_only="is for --model om \(lstm has no"
expect 2 "--slots $om_only memory slots\)" "${ct[@]}" --task listops --model lstm --slots 24 --out "$tmp/x"
expect 2 "--slots-eval $om_only memory slots\)" "${ct[@]}" --task listops --model lstm --slots-eval 24 --out "$tmp/x"
expect 2 "--dropoutm $om_only memory dropout\)" "${ct[@]}" --task listops --model lstm --dropoutm 0.1 --out "$tmp/x"
attn="is for --model transformer, ftt, ftt-conv, hybrid, hybrid-san or structformer"
expect 2 "--layers $attn \(om has no attention layers\)" "${ct[@]}" --task listops --layers 1 --out "$tmp/x"
expect 2 "--heads $attn \(onlstm has no attention layers\)" "${ct[@]}" --task listops --model onlstm --heads 2 --out "$tmp/x"
expect 2 "--ffn $attn \(childsum has no attention layers\)" "${ct[@]}" --task listops --model childsum --ffn 32 --out "$tmp/x"
expect 2 "--dropout-attn $attn \(lstm has no attention layers\)" "${ct[@]}" --task listops --model lstm --dropout-attn 0.1 --out "$tmp/x"
expect 2 "--post-norm is for --model transformer, ftt or ftt-conv \(hybrid has no post-norm option\)" \
    "${ct[@]}" --task listops --model hybrid --post-norm --out "$tmp/x"
expect 2 "--dropout is for --model om, transformer, ftt, ftt-conv, hybrid, hybrid-san or structformer \(ft has no cell or residual dropout" \
    "${ct[@]}" --task listops --model ft --dropout 0.1 --out "$tmp/x"
[ -e "$tmp/x" ] && fail "a refused command left $tmp/x behind"

# a small ListOps task: generated train (1,000 of it held out for
# validation), a test file
"$grove" nlp listops generate --n 1400 --max-depth 3 --seed 1 --out "$tmp/train.tsv" --quiet >/dev/null ||
    fail "listops generate"
"$grove" nlp listops generate --n 150 --max-depth 3 --seed 2 --out "$tmp/test.tsv" --quiet >/dev/null ||
    fail "listops generate (test)"
small=(--task listops --model lstm --train "$tmp/train.tsv" --test "$tmp/test.tsv"
       --emsize 16 --nhid 24 --batch 16 --lr 3e-3 --seed 4 --threads 1 --device cpu)
"$grove" "${ct[@]}" "${small[@]}" --epochs 3 --out "$tmp/run" >"$tmp/run.out" 2>"$tmp/run.err" ||
    { fail "classify train"; cat "$tmp/run.err"; }
grep -q "training examples\|train" "$tmp/run.err" || fail "no data summary on stderr"
for f in command config metrics.csv curves.png best.ckpt last.ckpt; do
    [ -s "$tmp/run/$f" ] || fail "run folder lacks $f"
done
[ "$(head -1 "$tmp/run/metrics.csv")" = "epoch,global_step,train_loss,train_acc,valid_acc,test_acc,lr,wall_s" ] ||
    fail "metrics.csv header: $(head -1 "$tmp/run/metrics.csv")"
[ "$(wc -l <"$tmp/run/metrics.csv")" -eq 4 ] || fail "metrics.csv has not 3 rows"
acc=$(sed -n 's/^test accuracy (best.ckpt) \([0-9.]*\) on 150 examples$/\1/p' "$tmp/run.out")
[ -n "$acc" ] || { fail "no test accuracy line"; cat "$tmp/run.out"; }
for b in 1 7 256; do
    expect 0 "^listops test: accuracy $acc on 150 examples" nlp classify eval \
        --checkpoint "$tmp/run/best.ckpt" --train "$tmp/train.tsv" --test "$tmp/test.tsv" --batch $b
done
# eval prints the data summary first, as train does: the file and the
# count of the examples it scores (stderr; stdout holds the results only);
# it reads no training data it does not use: --train is not read for the
# test split
grep -q "^listops: test $tmp/test.tsv: 150 examples (all lengths, .*); no training data read or generated$" "$tmp/err" ||
    fail "listops eval: no data summary naming the test file in: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/out")" -eq 1 ] || fail "listops eval: stdout is not the result line alone: $(cat "$tmp/out")"
# a token cap (batches of one at 1) is batching too: the same accuracy
for t in 1 40 0; do
    expect 0 "^listops test: accuracy $acc on 150 examples" nlp classify eval \
        --checkpoint "$tmp/run/best.ckpt" --train "$tmp/train.tsv" --test "$tmp/test.tsv" --max-tokens $t
done
expect 2 "--max-tokens >= 0" nlp classify eval --checkpoint "$tmp/run/best.ckpt" \
    --train "$tmp/train.tsv" --test "$tmp/test.tsv" --max-tokens -1
# --on valid: the validation part held out of --train with the run's seed
# (4), not another one (eval used seed 1111 whatever the run's, so that a
# part of the examples it scored were training examples)
vacc=$(sed -n 's/^best validation accuracy \([0-9.]*\) at epoch [0-9]* .*$/\1/p' "$tmp/run.out")
[ -n "$vacc" ] || { fail "no validation accuracy line"; cat "$tmp/run.out"; }
expect 0 "^listops valid: accuracy $vacc on 1000 examples" nlp classify eval \
    --checkpoint "$tmp/run/best.ckpt" --train "$tmp/train.tsv" --on valid --batch 64
grep -q "^listops: validation held out of train $tmp/train.tsv (1,400 examples, seed 4): 1,000 examples; test not read$" "$tmp/err" ||
    fail "listops eval --on valid: data summary: $(cat "$tmp/err")"
# the test split needs test data: refused before anything is generated
expect 2 "--task listops: the test split needs --test FILE or --data DIR" nlp classify eval \
    --checkpoint "$tmp/run/best.ckpt"
expect 0 "wrote $tmp/eval.csv" nlp classify eval --checkpoint "$tmp/run/best.ckpt" \
    --train "$tmp/train.tsv" --test "$tmp/test.tsv" --out "$tmp/eval.csv"
grep -q "^all,150,0\." "$tmp/eval.csv" || fail "eval.csv: $(cat "$tmp/eval.csv")"
expect 1 "exists \(use --force" nlp classify eval --checkpoint "$tmp/run/best.ckpt" \
    --train "$tmp/train.tsv" --test "$tmp/test.tsv" --out "$tmp/eval.csv"
# the folder exists: refused without --force
expect 1 "already exists" "${ct[@]}" "${small[@]}" --epochs 1 --quiet --out "$tmp/run"

# --resume: 1 epoch, then to 3, equals the 3 epochs straight
"$grove" "${ct[@]}" "${small[@]}" --epochs 1 --quiet --out "$tmp/cut" >/dev/null || fail "1 epoch"
"$grove" "${ct[@]}" "${small[@]}" --epochs 3 --quiet --out "$tmp/cut" --resume >/dev/null ||
    fail "--resume to 3 epochs"
for c in best last; do
    diff <("$digest" "$tmp/run/$c.ckpt" --ignore state-wall) <("$digest" "$tmp/cut/$c.ckpt" --ignore state-wall) >/dev/null ||
        fail "resumed $c.ckpt differs from the straight run's"
done
diff <(cut -d, -f1-7 "$tmp/run/metrics.csv") <(cut -d, -f1-7 "$tmp/cut/metrics.csv") >/dev/null ||
    fail "resumed metrics.csv differs"
expect 2 "--resume: the options differ from the run's \(first difference: 'lr 0.00300000003' in the run, 'lr 0.00100000005' now\)" \
    "${ct[@]}" "${small[@]/#3e-3/1e-3}" --epochs 4 --quiet --out "$tmp/cut" --resume

# --lr-patience 0: every epoch whose validation accuracy is not better than
# the best before it halves the learning rate of the next (the lr column is
# the rate an epoch trained with); the patience is an option --resume keeps
"$grove" "${ct[@]}" "${small[@]}" --epochs 5 --max-batches 5 --lr-patience 0 --quiet \
    --out "$tmp/pat0" >/dev/null || fail "--lr-patience 0"
checks=$((checks + 1))
grep -qx "plateau-patience 0" "$tmp/pat0/config" || fail "config lacks plateau-patience 0"
cuts=$(awk -F, 'NR == 2 { best = $5; lr = $7; next }
    NR > 2 { d = $7 - want; if (NR > 3 && (d < 0 ? -d : d) > 1e-6 * want) bad = 1
             if ($7 + 0 < lr + 0) n++
             want = ($5 + 0 > best + 0) ? $7 : $7 / 2
             if ($5 + 0 > best + 0) best = $5
             lr = $7 }
    END { print bad ? "wrong" : n }' "$tmp/pat0/metrics.csv")
case $cuts in
    wrong | "" | 0) fail "--lr-patience 0: learning rates not cut as the rule says: $(cut -d, -f1,5,7 "$tmp/pat0/metrics.csv")" ;;
esac
expect 2 "--resume: the options differ from the run's \(first difference: 'plateau-patience 0' in the run, 'plateau-patience 2' now\)" \
    "${ct[@]}" "${small[@]}" --epochs 6 --max-batches 5 --quiet --out "$tmp/pat0" --resume

# --epochs 0: the initial model
expect 0 "wrote the initial model" "${ct[@]}" "${small[@]}" --epochs 0 --out "$tmp/zero"
# an ON-LSTM takes it (24 = 6 chunks of 4)
expect 0 "wrote the initial model" "${ct[@]}" "${small[@]/#lstm/onlstm}" --chunk-size 4 --epochs 0 \
    --out "$tmp/chunk"
grep -q "^enc-chunk 4$" "$tmp/chunk/config" || fail "--chunk-size 4: the config says $(grep chunk "$tmp/chunk/config")"
# and the models that read the other flags take them into their config
expect 0 "wrote the initial model" "${ct[@]}" "${small[@]/#lstm/om}" --slots 7 --slots-eval 9 --dropoutm 0.15 \
    --dropout 0.25 --epochs 0 --out "$tmp/om"
for line in "enc-slots-train 7" "enc-slots-eval 9" "enc-dropout-mem 0.150000006" "enc-dropout-cell 0.25"; do
    grep -qx "$line" "$tmp/om/config" || fail "om flags: the config lacks '$line'"
done
expect 0 "wrote the initial model" "${ct[@]}" "${small[@]/#lstm/ftt}" --layers 1 --heads 2 --ffn 32 \
    --dropout-attn 0.05 --post-norm --epochs 0 --out "$tmp/attn"
for line in "enc-layers 1" "enc-heads 2" "enc-ffn 32" "enc-dropout-attn 0.0500000007" "enc-post-norm 1"; do
    grep -qx "$line" "$tmp/attn/config" || fail "attention flags: the config lacks '$line'"
done
# --device auto (the default) names the device it resolves to: cuda where
# grove version counts a GPU, else cpu (it used to say cpu whatever ran)
want_dev=cpu
"$grove" version 2>/dev/null | grep -q "^gpus: *[1-9]" && want_dev=cuda
"$grove" "${ct[@]}" "${small[@]/#cpu/auto}" --epochs 0 --out "$tmp/auto" >/dev/null 2>"$tmp/auto.err" ||
    fail "--device auto --epochs 0"
grep -q "^model: lstm, .*, on $want_dev, 0 epochs" "$tmp/auto.err" ||
    fail "--device auto: the model line does not say $want_dev: $(cat "$tmp/auto.err")"

# logic eval from a test file alone (the vocabulary is fixed): the same
# accuracy as with --train beside it; training still needs --train or --data
"$grove" nlp logic generate --n 300 --ops 1-3 --seed 1 --out "$tmp/ltrain.tsv" --quiet >/dev/null ||
    fail "logic generate"
"$grove" nlp logic generate --n 60 --ops 1-3 --seed 2 --out "$tmp/ltest.tsv" --quiet >/dev/null ||
    fail "logic generate (test)"
"$grove" "${ct[@]}" --task logic --model lstm --train "$tmp/ltrain.tsv" --test "$tmp/ltest.tsv" \
    --emsize 8 --nhid 8 --epochs 1 --threads 1 --device cpu --quiet --out "$tmp/lrun" >/dev/null 2>&1 ||
    fail "logic run from files"
lacc=$("$grove" nlp classify eval --checkpoint "$tmp/lrun/best.ckpt" --train "$tmp/ltrain.tsv" \
    --test "$tmp/ltest.tsv" 2>/dev/null | sed -n 's/^logic test: accuracy \([0-9.]*\) on 60 examples.*/\1/p')
[ -n "$lacc" ] || fail "logic eval with --train and --test: no accuracy line"
expect 0 "^logic test: accuracy $lacc on 60 examples" nlp classify eval \
    --checkpoint "$tmp/lrun/best.ckpt" --test "$tmp/ltest.tsv"
# its data summary: the test file, its pairs and their operator counts
grep -q "^logic: $tmp/ltest.tsv: test 60 pairs (k = 1-3) of the file's 60 (split full); no training data read" "$tmp/err" ||
    fail "logic eval: no data summary with the test file and its k range in: $(cat "$tmp/err")"
expect 0 "^logic test: accuracy $lacc on 60 examples" nlp classify eval \
    --checkpoint "$tmp/lrun/best.ckpt" --test "$tmp/ltest.tsv" --quiet
[ -s "$tmp/err" ] && fail "eval --quiet: stderr is not empty: $(cat "$tmp/err")"

# GROVE_CLASSIFY_TRACE (bench/nlp/om_compare.sh replays it in PyTorch):
# one record per training batch, its ids and labels as the encoder saw
# them, and the loss of each batch: their mean is the epoch's train_loss
checks=$((checks + 1))
GROVE_CLASSIFY_TRACE=$tmp/trace.txt "$grove" "${ct[@]}" --task logic --model om \
    --train "$tmp/ltrain.tsv" --test "$tmp/ltest.tsv" --emsize 8 --nhid 8 --batch 32 \
    --epochs 1 --max-batches 3 --threads 1 --device cpu --quiet --out "$tmp/trun" \
    >/dev/null 2>"$tmp/trun.err" || { fail "traced run"; cat "$tmp/trun.err"; }
bad=$(awk -v n=32 '
    /^batch / { if (NF != 7 || $2 != 1 || $3 != recs || $5 != 2 * $6 || $6 != n) { print "header " NR ": " $0; exit }
                T = $4; rows = $5; left = T; recs++; loss += $7; next }
    left > 0  { if (NF != rows) { print "line " NR ": " NF " ids, want " rows; exit }
                for (i = 1; i <= NF; i++) if ($i < 0 || $i > 11) { print "line " NR ": id " $i; exit }
                left--; if (left == 0) labels = 1; next }
    labels    { if (NF != n) { print "line " NR ": " NF " labels"; exit }
                for (i = 1; i <= NF; i++) if ($i < 0 || $i > 6) { print "line " NR ": label " $i; exit }
                labels = 0; next }
    { print "line " NR ": unexpected"; exit }
    END { if (recs != 3) print recs " records, want 3"; else printf "mean %.9g\n", loss / 3 }' "$tmp/trace.txt")
want=$(awk -F, 'NR == 2 { print $3 }' "$tmp/trun/metrics.csv")
echo "$bad" | awk -v w="$want" '$1 == "mean" && $2 - w < 2e-6 && w - $2 < 2e-6 { ok = 1 } END { exit !ok }' ||
    fail "trace: '$bad', metrics.csv train_loss: '$want'"
# never over an existing file: refused before the run folder is made
checks=$((checks + 1))
GROVE_CLASSIFY_TRACE=$tmp/trace.txt "$grove" "${ct[@]}" --task logic --model om \
    --train "$tmp/ltrain.tsv" --emsize 8 --nhid 8 --epochs 1 --threads 1 --quiet \
    --out "$tmp/trun2" >/dev/null 2>"$tmp/err" && fail "trace over an existing file: exit 0"
grep -q "GROVE_CLASSIFY_TRACE: cannot create $tmp/trace.txt (it must not exist)" "$tmp/err" ||
    fail "trace over an existing file: $(cat "$tmp/err")"
[ -e "$tmp/trun2" ] && fail "trace over an existing file: the run folder was made"
# a trace that cannot be written stops the run (here a 64 KiB file-size
# limit: the initial checkpoint, ~35 KiB, fits; the trace of 3,000 pairs
# does not)
checks=$((checks + 1))
"$grove" nlp logic generate --n 3000 --ops 1-3 --seed 3 --out "$tmp/ltrain3k.tsv" --quiet >/dev/null ||
    fail "logic generate (3,000)"
(trap '' XFSZ; ulimit -f 64; GROVE_CLASSIFY_TRACE=$tmp/trace3k.txt "$grove" "${ct[@]}" --task logic \
    --model om --train "$tmp/ltrain3k.tsv" --emsize 8 --nhid 8 --epochs 1 --threads 1 --quiet \
    --out "$tmp/trun3" >/dev/null 2>"$tmp/err") && fail "trace past the file-size limit: exit 0"
grep -q "GROVE_CLASSIFY_TRACE: writing failed" "$tmp/err" ||
    fail "trace past the file-size limit: $(cat "$tmp/err")"
expect 2 "--task logic needs --data DIR .* or --test FILE" nlp classify eval \
    --checkpoint "$tmp/lrun/best.ckpt"
expect 2 "--task logic needs --data DIR .* or --train FILE" "${ct[@]}" --task logic \
    --test "$tmp/ltest.tsv" --out "$tmp/x"

# ListOps batches never mix length buckets: a batch larger than a bucket
# (847 kept trees: chunks of 85) is cut to the bucket, so the epoch trains
# (it used to train 0 batches with a NaN loss)
"$grove" "${ct[@]}" --task listops --listops-n 2000 --batch 128 --model lstm --emsize 8 --nhid 8 \
    --epochs 1 --threads 1 --quiet --out "$tmp/bigbatch" >"$tmp/bigbatch.out" 2>"$tmp/bigbatch.err" ||
    fail "listops --batch 128 over 847 trees: $(cat "$tmp/bigbatch.err")"
checks=$((checks + 1))
awk -F, 'NR == 2 && $2 > 0 && $3 != "" && $3 !~ /nan/ { ok = 1 } END { exit !ok }' "$tmp/bigbatch/metrics.csv" ||
    fail "listops --batch 128: no step or no loss: $(cat "$tmp/bigbatch/metrics.csv")"
# eval --on valid of that run regenerates its 2,000 trees (the config's
# listops-n), not the default 90,000, and scores the 1,000 the run held
# out: the validation accuracy training reported
bvacc=$(sed -n 's/^best validation accuracy \([0-9.]*\) at epoch 1 .*$/\1/p' "$tmp/bigbatch.out")
[ -n "$bvacc" ] || fail "listops --listops-n 2000: no validation accuracy line: $(cat "$tmp/bigbatch.out")"
grep -q "^listops-n 2000$" "$tmp/bigbatch/config" || fail "the run's config has no listops-n 2000 line"
expect 0 "^listops valid: accuracy $bvacc on 1000 examples" nlp classify eval \
    --checkpoint "$tmp/bigbatch/best.ckpt" --on valid --threads 1
grep -q "^listops: validation held out of train generated (seed 1, .*) (2,000 examples, seed 1): 1,000 examples" "$tmp/err" ||
    fail "eval --on valid of generated trees: data summary: $(cat "$tmp/err")"
# and its test split generates no training trees at all (it used to
# generate the run's 2,000, or 90,000 for a run with the default count)
expect 0 "^listops test: accuracy [01]\.[0-9]+ on 150 examples" nlp classify eval \
    --checkpoint "$tmp/bigbatch/best.ckpt" --test "$tmp/test.tsv" --threads 1
grep -q "^listops: test $tmp/test.tsv: 150 examples .*; no training data read or generated$" "$tmp/err" ||
    fail "eval of generated trees' run on --test: data summary: $(cat "$tmp/err")"
grep -q "generated" <(grep -v "no training data read or generated" "$tmp/err") &&
    fail "eval on --test mentions generated trees: $(cat "$tmp/err")"
# and --resume with another count is refused (3,000: the default's 90,000
# trees would take seconds to generate under ASan; checked by hand, the
# same refusal)
expect 2 "--resume: the options differ from the run's \(first difference: 'listops-n 2000' in the run, 'listops-n 3000' now\)" \
    "${ct[@]}" --task listops --listops-n 3000 --batch 128 --model lstm --emsize 8 --nhid 8 --epochs 2 --threads 1 \
    --quiet --out "$tmp/bigbatch" --resume
# the default count writes no line (the configs of earlier runs, which
# --resume compares, are unchanged)
grep -q "^listops-n" "$tmp/run/config" && fail "a run on a --train file has a listops-n line"

# another kind of checkpoint: one line, exit 2
"$grove" train bc --tasks AC --options 2 --demos-per-task 10 --updates 0 --hidden 8 --width 8 \
    --return-every 0 --quiet --out "$tmp/bc" >/dev/null 2>&1 || fail "train bc --updates 0"
expect 2 "not a grove classifier checkpoint" nlp classify eval --checkpoint "$tmp/bc/last.ckpt" \
    --test "$tmp/test.tsv"

# eval on files with another vocabulary (SST-5, hand-made trees): the
# words go through the checkpoint's vocabulary, so the same test file
# scores the same whatever train and dev files come with it, and words the
# model never saw are read as unknown instead of failing
mkdir -p "$tmp/sa" "$tmp/sb" "$tmp/sc"
printf '%s\n' "(3 (2 the) (3 (3 good) (2 film)))" "(1 (2 a) (1 (1 bad) (2 plot)))" \
    "(4 (2 the) (4 (4 great) (2 cast)))" "(0 (2 a) (0 (0 awful) (2 film)))" >"$tmp/sa/train.txt"
printf '%s\n' "(3 (2 the) (3 (3 good) (2 cast)))" "(1 (2 a) (1 bad))" >"$tmp/sa/dev.txt"
printf '%s\n' "(4 (2 a) (4 (4 great) (2 plot)))" "(0 (2 the) (0 awful))" \
    "(3 (2 film) (3 good))" "(1 (2 cast) (1 (1 bad) (2 the)))" >"$tmp/sa/test.txt"
# other files first (their words take the low ids), the same test file
printf '%s\n' "(2 (2 zebra) (2 (2 quartz) (2 the)))" "(3 (2 yonder) (3 good))" >"$tmp/sb/train.txt"
cp "$tmp/sb/train.txt" "$tmp/sb/dev.txt"
cp "$tmp/sa/test.txt" "$tmp/sb/test.txt"
# a test file with words the checkpoint never saw
cp "$tmp/sb/train.txt" "$tmp/sc/train.txt"
cp "$tmp/sb/train.txt" "$tmp/sc/dev.txt"
printf '%s\n' "(4 (2 a) (4 (4 splendid) (2 plot)))" "(0 (2 xylophone) (0 awful))" >"$tmp/sc/test.txt"
"$grove" "${ct[@]}" --task sst5 --model lstm --data "$tmp/sa" --emsize 8 --nhid 8 --epochs 2 \
    --threads 1 --quiet --out "$tmp/sst" >/dev/null 2>"$tmp/sst.err" || { fail "sst5 run"; cat "$tmp/sst.err"; }
expect 0 "^sst5 test: accuracy [01]\.[0-9]+ on 4 examples" nlp classify eval --checkpoint "$tmp/sst/best.ckpt" \
    --data "$tmp/sa" --threads 1
grep -q "^sst5: $tmp/sa: test 4 sentences; vocabulary 9 words (that split's" "$tmp/err" ||
    fail "sst5 eval: no data summary in: $(cat "$tmp/err")"
sed 's/ (.*//' "$tmp/out" >"$tmp/sa.score"
# --sst-train phrases: every distinct labelled phrase of the train trees
# (4 trees, 20 nodes: "the", "a" and "film" repeat, so 17 distinct phrases),
# recorded in the config; refused off SST and for unknown units
"$grove" "${ct[@]}" --task sst5 --model lstm --data "$tmp/sa" --emsize 8 --nhid 8 --epochs 1 \
    --sst-train phrases --threads 1 --quiet --out "$tmp/sstp" >/dev/null 2>"$tmp/sstp.err" || fail "sst5 phrases run: $(cat "$tmp/sstp.err")"
grep -q "^sst-train phrases$" "$tmp/sstp/config" || fail "no sst-train line in the config of a phrases run"
"$grove" "${ct[@]}" --task sst5 --model lstm --data "$tmp/sa" --emsize 8 --nhid 8 --epochs 1 \
    --sst-train phrases --threads 1 --out "$tmp/sstp2" >/dev/null 2>"$tmp/sstp2.err"
grep -q "train 17 distinct phrases / dev 2 / test 4 sentences" "$tmp/sstp2.err" ||
    fail "phrases run: no summary with 17 distinct phrases in: $(cat "$tmp/sstp2.err")"
expect 2 "--sst-train is for --task sst2 or sst5, not listops" nlp classify train --task listops \
    --sst-train phrases --out "$tmp/x"
expect 2 "--sst-train 'words' is not sentences, phrases or nodes" nlp classify train --task sst2 \
    --data "$tmp/sa" --sst-train words --out "$tmp/x"
# an evaluation reads only the split it scores: the test file alone
# scores the same as with its folder, and without one it is asked for
expect 0 "^sst5 test: accuracy [01]\.[0-9]+ on 4 examples" nlp classify eval --checkpoint "$tmp/sst/best.ckpt" \
    --test "$tmp/sa/test.txt" --threads 1
sed 's/ (.*//' "$tmp/out" >"$tmp/sa_file.score"
cmp -s "$tmp/sa.score" "$tmp/sa_file.score" ||
    fail "the test file alone scores differently from its folder: $(cat "$tmp/sa_file.score") vs $(cat "$tmp/sa.score")"
expect 2 "the validation split needs --data DIR \(the SST trees\) or --valid FILE" nlp classify eval \
    --checkpoint "$tmp/sst/best.ckpt" --test "$tmp/sa/test.txt" --on valid --threads 1
expect 0 "^sst5 test: accuracy [01]\.[0-9]+ on 4 examples" nlp classify eval --checkpoint "$tmp/sst/best.ckpt" \
    --data "$tmp/sb" --threads 1
sed 's/ (.*//' "$tmp/out" >"$tmp/sb.score"
cmp -s "$tmp/sa.score" "$tmp/sb.score" ||
    fail "the same test file scores differently with other train/dev files: $(cat "$tmp/sa.score") vs $(cat "$tmp/sb.score")"
grep -q "of the data's words not among them" "$tmp/err" || fail "eval on sb: no vocabulary line in: $(cat "$tmp/err")"
expect 0 "^sst5 test: accuracy [01]\.[0-9]+ on 2 examples" nlp classify eval --checkpoint "$tmp/sst/best.ckpt" \
    --data "$tmp/sc" --threads 1
# the test file's own unknown words (splendid, xylophone): the train and
# dev files beside it are not read
grep -q " 2 of the data's words not among them" "$tmp/err" || fail "eval on sc: unknown words: $(cat "$tmp/err")"

if [ ! -d "$data/logic_inference" ]; then
    echo "cli_classify: $checks checks, $fails failed"
    test_skip DATA "$fails" "the logic run (no $data/logic_inference)"
fi
# logic: the per-length test columns (one short epoch, small model)
"$grove" "${ct[@]}" --task logic --model lstm --data "$data/logic_inference" --emsize 8 --nhid 8 \
    --epochs 1 --max-batches 2 --test-every 1 --eval-batch 1024 --threads 1 --quiet \
    --out "$tmp/logic" >"$tmp/logic.out" 2>"$tmp/logic.err" || { fail "logic run"; cat "$tmp/logic.err"; }
# the end of the run: best.ckpt's test accuracy for every number of operators
# in test0-12, each the value classify eval --per-length gives
checks=$((checks + 1))
by_ops=$(grep '^test accuracy by operators (best.ckpt):' "$tmp/logic.out")
[ "$(echo "$by_ops" | grep -o ' [0-9]*: [01]\.[0-9]*' | wc -l)" -eq 12 ] ||
    fail "logic run: per-operator line: '$by_ops'"
"$grove" nlp classify eval --checkpoint "$tmp/logic/best.ckpt" --data "$data/logic_inference" \
    --per-length --batch 1024 --threads 1 >"$tmp/logic_eval.out" 2>/dev/null || fail "logic eval"
for g in 7 12; do
    acc=$(grep -E "^  operators +$g: " "$tmp/logic_eval.out" | awk '{print $3}')
    [ -n "$acc" ] && echo "$by_ops" | grep -q " $g: $acc" || fail "logic run: $g operators '$acc' of eval not in '$by_ops'"
done
head -1 "$tmp/logic/metrics.csv" | grep -q ",test_acc_1,.*,test_acc_12$" ||
    fail "logic metrics.csv header: $(head -1 "$tmp/logic/metrics.csv")"
echo "cli_classify: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
