#!/usr/bin/env bash
# grove nlp seq2seq train | eval | translate as a user meets them (issue 23
# §3) on a small parallel text made here (a toy language: each word
# spelled backwards, the sentence reversed): refusals of a wrong command
# line (one line, exit 2, no run folder left), a bad TSV line named by file
# and line, a short run (run folder, metrics, config, codes, vocabulary),
# eval of best.ckpt reproducing the best validation BLEU, beam search,
# translate with the truncation of a too-long source counted.
# --task mlu generated (determinism, targets by bash arithmetic); --resume
# bit-identical to a straight run (ckpt_digest); --average-last.
#   test_cli_seq2seq.sh GROVE CKPT_DIGEST
set -u
grove=$1
digest=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect RC PATTERN ARGS...: exit RC; PATTERN in stdout (0) or in the one
# stderr line (else)
expect() {
    local want_rc=$1 pattern=$2
    shift 2
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

words=(alpha bravo charlie delta echo foxtrot golf hotel)
rwords=(ahpla ovarb eilrahc atled ohce tortxof flog letoh) # each spelled backwards
make_pairs() { # N SEED FILE
    RANDOM=$2
    : >"$3"
    for ((i = 0; i < $1; i++)); do
        n=$((2 + RANDOM % 4))
        src=() tgt=() pick=()
        for ((k = 0; k < n; k++)); do pick+=($((RANDOM % 8))); src+=("${words[pick[k]]}"); done
        for ((k = n - 1; k >= 0; k--)); do tgt+=("${rwords[pick[k]]}"); done
        printf '%s\t%s\n' "${src[*]}" "${tgt[*]}" >>"$3"
    done
}
make_pairs 300 3 "$tmp/train.tsv"
make_pairs 30 4 "$tmp/valid.tsv"
"$grove" nlp listops generate --n 1050 --max-depth 2 --seed 1 --out "$tmp/lo.tsv" --quiet >/dev/null ||
    fail "listops generate"

st=(nlp seq2seq train)
expect 2 "--task tsv[|]mlu is required" "${st[@]}" --out "$tmp/x"
expect 2 "--task mlu takes both --train and --valid, or neither" "${st[@]}" --task mlu --train "$tmp/train.tsv" --out "$tmp/x"
expect 2 "--mlu-train/--mlu-valid size the generated MLU data" "${st[@]}" --task tsv --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" --mlu-train 10 --out "$tmp/x"
# every numeric flag typed out of its range: one line naming it and its
# range, exit 2; -1 too, which once meant "the task's default" (tsv or mlu)
while read -r flag value range; do
    expect 2 "^grove nlp seq2seq train: --$flag $value is out of range \($range\) \(see" \
        "${st[@]}" --task mlu --"$flag" "$value" --out "$tmp/x"
done <<'RANGES'
d 0 >= 1
layers -1 >= 1
heads 0 >= 1
ffn -1 >= 1
dropout -1 \[0, 1\)
dropout-attn 1 \[0, 1\)
bpe-merges -1 >= 0
max-len -1 >= 2
max-len 1 >= 2
batch -1 1\.\.4096
batch 4097 1\.\.4096
max-steps -1 >= 1
max-steps 0 >= 1
eval-every -1 >= 1
warmup -1 >= 1
adam-beta2 -1 \[0, 1\)
adam-beta2 1 \[0, 1\)
average-last -1 0\.\.64
average-last 65 0\.\.64
mlu-train -1 1\.\.24000000
mlu-valid -1 1\.\.24000000
mlu-valid 0 1\.\.24000000
lr 0 > 0
label-smoothing -1 \[0, 1\)
clip -1 >= 0
clip -2147483648 >= 0
RANGES
expect 2 "--mlu-train 20000000 and --mlu-valid 2000001: train \+ 2 x valid must be <= " "${st[@]}" --task mlu --mlu-train 20000000 --mlu-valid 2000001 --out "$tmp/x"
expect 2 "^grove nlp seq2seq eval: --beam 0 is out of range \(>= 1\)" nlp seq2seq eval --checkpoint c --test "$tmp/valid.tsv" --beam 0
expect 2 "^grove nlp seq2seq translate: --length-penalty -1 is out of range \(>= 0\)" nlp seq2seq translate --checkpoint c --input "$tmp/valid.tsv" --length-penalty -1
expect 2 "--task tsv needs --train FILE and --valid FILE" "${st[@]}" --task tsv --train "$tmp/train.tsv" --out "$tmp/x"
expect 2 "--valid .*nowhere.*: it does not exist" "${st[@]}" --task tsv --train "$tmp/train.tsv" --valid "$tmp/nowhere" --out "$tmp/x"
expect 2 "--d 32 is not a multiple of --heads 3" "${st[@]}" --task tsv --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" --d 32 --heads 3 --out "$tmp/x"
expect 2 "unknown seq2seq model 'hybrid'" "${st[@]}" --task tsv --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" --model hybrid --out "$tmp/x"
printf 'a b\tb a\nno tab here\n' >"$tmp/bad.tsv"
expect 1 "bad.tsv:2: want one TAB between source and target" "${st[@]}" --task tsv --train "$tmp/bad.tsv" --valid "$tmp/valid.tsv" --quiet --out "$tmp/x"
expect 2 "--checkpoint FILE is required" nlp seq2seq eval --test "$tmp/valid.tsv"
[ -e "$tmp/x" ] && fail "a refused command left $tmp/x behind"

small=(--task tsv --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" --d 32 --layers 1
       --heads 4 --ffn 64 --bpe-merges 30 --max-len 12 --warmup 50 --lr 1 --dropout 0
       --dropout-attn 0 --seed 2 --threads 1 --device cpu)
"$grove" "${st[@]}" "${small[@]}" --max-steps 100 --eval-every 50 --out "$tmp/run" \
    >"$tmp/run.out" 2>"$tmp/run.err" || { fail "seq2seq train"; cat "$tmp/run.err"; }
for f in command config metrics.csv best.ckpt last.ckpt bpe.codes vocab.txt; do
    [ -s "$tmp/run/$f" ] || fail "run folder lacks $f"
done
[ "$(head -1 "$tmp/run/metrics.csv")" = "step,train_loss,valid_bleu,valid_acc,lr,wall_s" ] ||
    fail "metrics.csv header: $(head -1 "$tmp/run/metrics.csv")"
[ "$(wc -l <"$tmp/run/metrics.csv")" -eq 3 ] || fail "metrics.csv has not 2 rows"
grep -qx "model transformer" "$tmp/run/config" || fail "config lacks the model"
grep -q "300 training pairs, 30 validation" "$tmp/run.err" || fail "no data line: $(cat "$tmp/run.err")"
best=$(tail -n +2 "$tmp/run/metrics.csv" | cut -d, -f3 | sort -g | tail -1)
want=$(printf '%.2f' "$best")
expect 0 "^seq2seq test: BLEU $want, sequence accuracy .* on 30 pairs \(beam 1\)" \
    nlp seq2seq eval --checkpoint "$tmp/run/best.ckpt" --test "$tmp/valid.tsv"
expect 0 "^seq2seq test: BLEU [0-9.]+, .* \(beam 3\)" \
    nlp seq2seq eval --checkpoint "$tmp/run/best.ckpt" --test "$tmp/valid.tsv" --beam 3
cut -f1 "$tmp/valid.tsv" | head -5 >"$tmp/in.txt"
echo "alpha bravo charlie delta echo foxtrot golf hotel alpha bravo charlie delta" >>"$tmp/in.txt"
"$grove" nlp seq2seq translate --checkpoint "$tmp/run/best.ckpt" --input "$tmp/in.txt" \
    >"$tmp/tr.out" 2>"$tmp/tr.err" || fail "translate: $(cat "$tmp/tr.err")"
[ "$(wc -l <"$tmp/tr.out")" -eq 6 ] || fail "translate: $(wc -l <"$tmp/tr.out") lines for 6"
grep -Eq "^grove nlp seq2seq translate: [1-6] of 6 sources truncated to 11 subwords$" "$tmp/tr.err" ||
    fail "translate: the truncation is not reported: $(cat "$tmp/tr.err")"
# eval counts the sides cut to the model's maximum too
{ head -3 "$tmp/valid.tsv"; printf '%s\t%s\n' "$(cat "$tmp/in.txt" | tail -1)" "ahpla ovarb"; } >"$tmp/long.tsv"
"$grove" nlp seq2seq eval --checkpoint "$tmp/run/best.ckpt" --test "$tmp/long.tsv" >"$tmp/ev.out" 2>"$tmp/ev.err" ||
    fail "eval of a long pair: $(cat "$tmp/ev.err")"
grep -Eq "^grove nlp seq2seq eval: [1-9] sides of 4 pairs truncated to 11 subwords" "$tmp/ev.err" ||
    fail "eval: the truncation is not reported: $(cat "$tmp/ev.err")"
expect 1 "already exists" "${st[@]}" "${small[@]}" --max-steps 1 --quiet --out "$tmp/run"
# a classifier checkpoint is not a seq2seq one
"$grove" nlp classify train --task listops --model lstm --train "$tmp/lo.tsv" --epochs 0 --quiet \
    --emsize 4 --nhid 4 --out "$tmp/cls" >/dev/null 2>&1 || fail "classify train --epochs 0"
expect 1 "not a grove seq2seq checkpoint" nlp seq2seq eval --checkpoint "$tmp/cls/last.ckpt" --test "$tmp/valid.tsv"
expect 1 "not a grove checkpoint" \
    nlp seq2seq eval --checkpoint "$tmp/run/bpe.codes" --test "$tmp/valid.tsv"

# --task mlu without files: generated from the seed into the run folder,
# the same files for the same seed, every target checked by bash's own
# arithmetic ("x=85,y=-523,x*y" is a comma expression whose value is the
# last), the tiny defaults in the config, eval on the generated test set
mlu=(--task mlu --mlu-train 300 --mlu-valid 20 --d 16 --layers 1 --heads 2 --ffn 32
     --max-steps 4 --eval-every 2 --batch 8 --seed 5 --threads 1 --device cpu --quiet)
"$grove" "${st[@]}" "${mlu[@]}" --out "$tmp/mlu1" 2>"$tmp/mlu.err" || fail "mlu train: $(cat "$tmp/mlu.err")"
"$grove" "${st[@]}" "${mlu[@]}" --out "$tmp/mlu2" 2>"$tmp/mlu.err" || fail "mlu train 2: $(cat "$tmp/mlu.err")"
for f in mlu_train mlu_valid mlu_test; do
    cmp -s "$tmp/mlu1/$f.tsv" "$tmp/mlu2/$f.tsv" || fail "$f.tsv differs between two runs of seed 5"
done
[ "$(wc -l <"$tmp/mlu1/mlu_train.tsv")" -eq 300 ] && [ "$(wc -l <"$tmp/mlu1/mlu_test.tsv")" -eq 20 ] ||
    fail "mlu sizes: $(wc -l "$tmp/mlu1"/mlu_*.tsv)"
wrong=0
while IFS=$'\t' read -r src tgt; do
    [[ $src =~ ^[xy]=-?[0-9]+,[xy]=-?[0-9]+,[xy][-+*][xy]$ ]] || { wrong=$((wrong + 1)); continue; }
    [ "$(( src ))" = "$tgt" ] || wrong=$((wrong + 1))
done < <(cat "$tmp/mlu1"/mlu_*.tsv)
[ $wrong -eq 0 ] || fail "mlu: $wrong malformed or wrong targets"
[ "$(sort -u "$tmp/mlu1"/mlu_*.tsv | wc -l)" -eq 340 ] || fail "mlu: repeated examples"
grep -qx "task mlu" "$tmp/mlu1/config" && grep -qx "warmup 8000" "$tmp/mlu1/config" &&
    awk '$1 == "adam-beta2" && ($2 - 0.997)^2 < 1e-12 { ok = 1 } END { exit !ok }' "$tmp/mlu1/config" && grep -qx "bpe-merges 0" "$tmp/mlu1/config" ||
    fail "mlu config: $(cat "$tmp/mlu1/config")"
expect 0 "^seq2seq test: BLEU [0-9.]+, sequence accuracy [0-9.]+ on 20 pairs" \
    nlp seq2seq eval --checkpoint "$tmp/mlu1/best.ckpt" --test "$tmp/mlu1/mlu_test.tsv"

# --resume: 20 steps, then on to 40, equals 40 straight (tensors, optimizer
# state, metrics); --average-last 2 keeps avg-30/avg-40 and averages them
rs=(--task mlu --mlu-train 300 --mlu-valid 20 --d 16 --layers 1 --heads 2 --ffn 32
    --eval-every 10 --batch 8 --warmup 20 --threads 1 --device cpu)
rs5=("${rs[@]}" --seed 5 --average-last 2)
"$grove" "${st[@]}" "${rs5[@]}" --max-steps 40 --out "$tmp/ra" 2>"$tmp/ra.err" || fail "40 steps: $(cat "$tmp/ra.err")"
"$grove" "${st[@]}" "${rs5[@]}" --max-steps 20 --quiet --out "$tmp/rb" || fail "20 steps"
expect 2 "--resume: the options differ from the run's \(first difference: 'seed 5' in the run, 'seed 6' now\)" \
    "${st[@]}" "${rs[@]}" --seed 6 --average-last 2 --max-steps 40 --quiet --out "$tmp/rb" --resume
expect 2 "--resume and --force exclude each other" "${st[@]}" "${rs5[@]}" --max-steps 40 --out "$tmp/rb" --resume --force
"$grove" "${st[@]}" "${rs5[@]}" --max-steps 40 --quiet --out "$tmp/rb" --resume || fail "--resume to 40 steps"
for c in best last averaged avg-000000030 avg-000000040; do
    diff <("$digest" "$tmp/ra/$c.ckpt" --ignore state-wall | grep -v '^config max-steps') \
         <("$digest" "$tmp/rb/$c.ckpt" --ignore state-wall | grep -v '^config max-steps') >/dev/null ||
        fail "resumed $c.ckpt differs from the straight run's"
done
diff <(cut -d, -f1-5 "$tmp/ra/metrics.csv") <(cut -d, -f1-5 "$tmp/rb/metrics.csv") >/dev/null ||
    fail "resumed metrics.csv differs"
[ "$(ls "$tmp/ra" | grep -c '^avg-')" -eq 2 ] || fail "--average-last 2 kept: $(ls "$tmp/ra" | grep '^avg-')"
grep -q "averaged the last 2 checkpoints (steps 30..40) -> .*averaged.ckpt: valid BLEU" "$tmp/ra.err" ||
    fail "no averaging line: $(tail -2 "$tmp/ra.err")"
params() { "$digest" "$1" | grep '^tensor .* param '; }
[ "$(params "$tmp/ra/averaged.ckpt")" != "$(params "$tmp/ra/last.ckpt")" ] ||
    fail "the average of two checkpoints equals the last"
[ "$(params "$tmp/ra/avg-000000040.ckpt")" = "$(params "$tmp/ra/last.ckpt")" ] ||
    fail "avg-40 is not the step-40 model"
expect 0 "^seq2seq test: BLEU" nlp seq2seq eval --checkpoint "$tmp/ra/averaged.ckpt" --test "$tmp/ra/mlu_test.tsv"
# one checkpoint averaged is that checkpoint
"$grove" "${st[@]}" "${rs[@]}" --seed 5 --average-last 1 --max-steps 20 --quiet --out "$tmp/r1" || fail "--average-last 1"
[ "$(params "$tmp/r1/averaged.ckpt")" = "$(params "$tmp/r1/last.ckpt")" ] ||
    fail "--average-last 1: averaged.ckpt is not the last model"
expect 2 "--average-last 65 is out of range \(0\.\.64\)" "${st[@]}" "${rs[@]}" --average-last 65 --out "$tmp/x"

# SIGINT: stops at a step boundary with last.ckpt, says how to resume, and
# exits 128 + SIGINT as every trainer does
"$grove" "${st[@]}" "${rs[@]}" --seed 5 --max-steps 1000000 --out "$tmp/sig" 2>"$tmp/sig.err" &
pid=$!
for i in $(seq 1 300); do
    [ -f "$tmp/sig/last.ckpt" ] && break
    sleep 0.1
done
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] || fail "SIGINT: exit $rc, want 130"
[ -f "$tmp/sig/last.ckpt" ] || fail "SIGINT: no last.ckpt"
grep -q -- "--resume" "$tmp/sig.err" || fail "SIGINT: no resume line: $(tail -2 "$tmp/sig.err")"

echo "seq2seq cli: $fails failed"
[ $fails -eq 0 ]
