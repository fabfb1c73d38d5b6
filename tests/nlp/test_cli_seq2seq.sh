#!/usr/bin/env bash
# grove nlp seq2seq train | eval | translate as a user meets them (issue 23
# §3) on a small parallel text made here (a toy language: each word
# spelled backwards, the sentence reversed): refusals of a wrong command
# line (one line, exit 2, no run folder left), a bad TSV line named by file
# and line, a short run (run folder, metrics, config, codes, vocabulary),
# eval of best.ckpt reproducing the best validation BLEU, beam search,
# translate with the truncation of a too-long source counted.
#   test_cli_seq2seq.sh GROVE
set -u
grove=$1
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
expect 2 "--task mlu: the MLU generator is not built yet" "${st[@]}" --task mlu --out "$tmp/x"
expect 2 "--task tsv needs --train FILE and --valid FILE" "${st[@]}" --task tsv --train "$tmp/train.tsv" --out "$tmp/x"
expect 2 "--valid .*nowhere.*: it does not exist" "${st[@]}" --task tsv --train "$tmp/train.tsv" --valid "$tmp/nowhere" --out "$tmp/x"
expect 2 "a multiple of --heads" "${st[@]}" --task tsv --train "$tmp/train.tsv" --valid "$tmp/valid.tsv" --d 32 --heads 3 --out "$tmp/x"
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
expect 1 "already exists" "${st[@]}" "${small[@]}" --max-steps 1 --quiet --out "$tmp/run"
# a classifier checkpoint is not a seq2seq one
"$grove" nlp classify train --task listops --model lstm --train "$tmp/lo.tsv" --epochs 0 --quiet \
    --emsize 4 --nhid 4 --out "$tmp/cls" >/dev/null 2>&1 || fail "classify train --epochs 0"
expect 1 "not a grove seq2seq checkpoint" nlp seq2seq eval --checkpoint "$tmp/cls/last.ckpt" --test "$tmp/valid.tsv"
expect 1 "not a grove checkpoint" \
    nlp seq2seq eval --checkpoint "$tmp/run/bpe.codes" --test "$tmp/valid.tsv"

echo "seq2seq cli: $fails failed"
[ $fails -eq 0 ]
