#!/usr/bin/env bash
# grove nlp classify trees (issue 27 §3) on tiny models trained here in a
# second (om, onlstm, structformer): one tree per example over exactly the example's leaves (ListOps:
# the model tokens; logic: the expression without its parentheses, premise
# TAB hypothesis), binary (n - 1 brackets over n leaves), deterministic,
# and the printed corpus F1 equal to an independent count (awk, below) of
# the output's brackets against the files' own bracketing (formal_tasks.md
# §1.2, §2.3: the gold trees); an lstm checkpoint refused in one line with
# exit 2; bad command lines exit 2, an existing --out without --force 1.
# With the shared data, the same on the first examples of the released
# test sets read through --data (test_d20s.tsv; test0..test12).
#   test_cli_classify_trees.sh PATH/TO/grove [SHARED_DATA_DIR]
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
        [ -s "$tmp/out" ] && fail "grove $*: printed on stdout"
        grep -Eq -- "$pattern" "$tmp/err" || { fail "grove $*: no /$pattern/ in: $(cat "$tmp/err")"; }
    fi
}

# train ARGS...: a tiny classifier (must succeed)
train() {
    "$grove" nlp classify train --quiet --emsize 16 --nhid 16 "$@" >"$tmp/train.out" 2>&1 ||
        { fail "grove nlp classify train $*"; cat "$tmp/train.out"; }
}

# small MODEL: structformer's layer sizes cut to what a second allows;
# ON-LSTM chunks of 4 (--chunk-size is refused for the other models)
small() {
    [ "$1" = structformer ] && echo "--layers 1 --heads 2 --ffn 32"
    [ "$1" = onlstm ] && echo "--chunk-size 4"
}

# The corpus F1 of predicted trees against gold bracketings, both as
# "GOLD<TAB>PRED" lines of parenthesised leaves, sentences of < 2 leaves
# skipped, the whole-sentence bracket counted (formal_tasks.md §3); prints
# it with two decimals, or "leaves differ at line N".
ref_f1() {
    awk -F'\t' '
    function spans(s, set,   n, t, i, w, sp, st) {
        gsub(/\(/, " ( ", s); gsub(/\)/, " ) ", s)
        n = split(s, t, " "); w = 0; sp = 0
        for (i = 1; i <= n; i++) {
            if (t[i] == "(") st[++sp] = w
            else if (t[i] == ")") { if (w - st[sp] >= 2) set[st[sp] "," w] = 1; sp-- }
            else { w++; leaves = leaves " " t[i] }
        }
        return w
    }
    {
        delete G; delete P
        leaves = ""; ng = spans($1, G); lg = leaves
        leaves = ""; np = spans($2, P)
        if (ng != np || lg != leaves) { print "leaves differ at line " NR; bad = 1; exit }
        if (ng < 2) next
        for (k in P) { pred++; if (k in G) hit++ }
        for (k in G) gold++
    }
    END {
        if (bad) exit
        p = hit / pred; r = hit / gold
        printf "%.2f\n", (p + r > 0 ? 200 * p * r / (p + r) : 0)
    }'
}

# check_run WHAT GOLD_PRED_FILE: the printed F1s in [0, 100], the corpus
# one equal to ref_f1's
check_run() {
    local what=$1 pairs=$2
    checks=$((checks + 1))
    local f1 mean ref
    f1=$(sed -n 's/^corpus F1 \([0-9.]*\) %.*/\1/p' "$tmp/out")
    mean=$(sed -n 's/^sentence-level mean F1 \([0-9.]*\) %.*/\1/p' "$tmp/out")
    ref=$(ref_f1 <"$pairs")
    if [ -z "$f1" ] || [ -z "$mean" ]; then
        fail "$what: no F1 lines"; cat "$tmp/out"; return
    fi
    awk -v a="$f1" -v b="$mean" 'BEGIN { exit !(a >= 0 && a <= 100 && b >= 0 && b <= 100) }' ||
        fail "$what: F1 $f1 / $mean outside [0, 100]"
    [ "$f1" = "$ref" ] || fail "$what: corpus F1 $f1, the reference count gives $ref"
}

# check_binary WHAT FILE: every tree (TAB-separated sides too) has n - 1
# brackets over n leaves
check_binary() {
    checks=$((checks + 1))
    tr '\t' '\n' <"$2" | awk '{
        s = $0; o = gsub(/\(/, " ", s); gsub(/\)/, " ", s); n = split(s, t, " ")
        if (o != n - 1) { print "line " NR ": " o " brackets over " n " leaves: " $0; exit 1 }
    }' || fail "$1: not binary"
}

# ---- ListOps: five hand-written examples, a bare digit among them --------
printf '%s\n' \
    $'9\t( ( ( [MAX 2 ) 9 ) ] )' \
    $'3\t( ( ( ( [MIN 3 ) 7 ) 5 ) ] )' \
    $'4\t( ( ( ( [SM 5 ) ( ( ( [MAX 2 ) 9 ) ] ) ) 0 ) ] )' \
    $'7\t7' \
    $'5\t( ( ( [MED 5 ) 6 ) ] )' >"$tmp/lo.tsv"
for model in om onlstm structformer; do
    train --task listops --model $model $(small $model) --epochs 1 --train "$tmp/lo.tsv" \
        --valid "$tmp/lo.tsv" --test "$tmp/lo.tsv" --out "$tmp/lo-$model"
    expect 0 "^listops: trees of 5 examples induced by $model" nlp classify trees \
        --checkpoint "$tmp/lo-$model/best.ckpt" --test "$tmp/lo.tsv" --out "$tmp/lo-$model.txt"
    grep -q "^scored 4 sequences of >= 2 tokens .*(1 shorter ones skipped)" "$tmp/out" ||
        fail "listops $model: not 4 scored and 1 skipped: $(cat "$tmp/out")"
    [ "$(wc -l <"$tmp/lo-$model.txt")" -eq 5 ] || fail "listops $model: not 5 lines"
    cut -f2 "$tmp/lo.tsv" | paste - "$tmp/lo-$model.txt" >"$tmp/pairs"
    check_run "listops $model" "$tmp/pairs"
    check_binary "listops $model" "$tmp/lo-$model.txt"
    # deterministic, and --limit cuts
    expect 0 "trees of 2 examples" nlp classify trees --checkpoint "$tmp/lo-$model/best.ckpt" \
        --test "$tmp/lo.tsv" --limit 2 --out "$tmp/lo-$model-2.txt"
    head -2 "$tmp/lo-$model.txt" | cmp -s - "$tmp/lo-$model-2.txt" ||
        fail "listops $model: --limit 2 differs from the first two trees"
done

# ---- logic: 40 generated pairs, trained on, then parsed ------------------
"$grove" nlp logic generate --n 40 --ops 1-5 --seed 3 --out "$tmp/lg.tsv" >/dev/null 2>&1 ||
    fail "nlp logic generate"
for model in om onlstm structformer; do
    train --task logic --model $model $(small $model) --epochs 1 --train "$tmp/lg.tsv" \
        --test "$tmp/lg.tsv" --out "$tmp/lg-$model"
    expect 0 "^logic: trees of 40 pairs \(premise TAB hypothesis\) induced by $model" \
        nlp classify trees --checkpoint "$tmp/lg-$model/best.ckpt" --test "$tmp/lg.tsv" \
        --out "$tmp/lg-$model.txt"
    [ "$(wc -l <"$tmp/lg-$model.txt")" -eq 40 ] || fail "logic $model: not 40 lines"
    awk -F'\t' 'NF != 2 { exit 1 }' "$tmp/lg-$model.txt" || fail "logic $model: a line is not two trees"
    awk -F'\t' '{ print $2; print $3 }' "$tmp/lg.tsv" >"$tmp/gold"
    tr '\t' '\n' <"$tmp/lg-$model.txt" | paste "$tmp/gold" - >"$tmp/pairs"
    check_run "logic $model" "$tmp/pairs"
    check_binary "logic $model" "$tmp/lg-$model.txt"
    # the same numbers a second time
    cp "$tmp/out" "$tmp/first.out"
    expect 0 "^corpus F1" nlp classify trees --checkpoint "$tmp/lg-$model/best.ckpt" \
        --test "$tmp/lg.tsv" --out "$tmp/lg-$model.txt" --force
    sed 1d "$tmp/out" | cmp -s - <(sed 1d "$tmp/first.out") || fail "logic $model: not deterministic"
done

# ---- the released test sets through --data (when the data is there) --------
if [ -n "$data" ] && [ -f "$data/listops/test_d20s.tsv" ]; then
    expect 0 "^listops: trees of 40 examples" nlp classify trees --checkpoint "$tmp/lo-om/best.ckpt" \
        --data "$data/listops" --limit 40 --out "$tmp/real-lo.txt"
    head -40 "$data/listops/test_d20s.tsv" | cut -f2 | paste - "$tmp/real-lo.txt" >"$tmp/pairs"
    check_run "listops om, test_d20s.tsv" "$tmp/pairs"
    check_binary "listops om, test_d20s.tsv" "$tmp/real-lo.txt"
else
    echo "note: no $data/listops/test_d20s.tsv, the released ListOps part is not run"
fi
if [ -n "$data" ] && [ -f "$data/logic_inference/test12" ]; then
    expect 0 "^logic: trees of 300 pairs" nlp classify trees --checkpoint "$tmp/lg-onlstm/best.ckpt" \
        --data "$data/logic_inference" --limit 300 --out "$tmp/real-lg.txt"
    for k in 0 1 2 3 4 5 6 7 8 9 10 11 12; do cat "$data/logic_inference/test$k"; done |
        head -300 | awk -F'\t' '{ print $2; print $3 }' >"$tmp/gold"
    tr '\t' '\n' <"$tmp/real-lg.txt" | paste "$tmp/gold" - >"$tmp/pairs"
    check_run "logic onlstm, test0..12" "$tmp/pairs"
else
    echo "note: no $data/logic_inference, the released logic part is not run"
fi

# ---- refusals --------------------------------------------------------------
train --task listops --model lstm --epochs 0 --train "$tmp/lo.tsv" --valid "$tmp/lo.tsv" \
    --out "$tmp/lo-lstm"
expect 2 "model lstm induces no tree \(om, onlstm, ft, cft, fft and structformer do\)" nlp classify trees \
    --checkpoint "$tmp/lo-lstm/best.ckpt" --test "$tmp/lo.tsv" --out "$tmp/x.txt"
[ -e "$tmp/x.txt" ] && fail "lstm: an output was written"
expect 2 "--checkpoint FILE is required" nlp classify trees --test "$tmp/lo.tsv" --out "$tmp/x.txt"
expect 2 "--out FILE \(the trees\) is required" nlp classify trees --checkpoint "$tmp/lo-om/best.ckpt" --test "$tmp/lo.tsv"
expect 2 "--data DIR or --test FILE is required" nlp classify trees --checkpoint "$tmp/lo-om/best.ckpt" --out "$tmp/x.txt"
expect 2 "--limit must be 0" nlp classify trees --checkpoint "$tmp/lo-om/best.ckpt" --test "$tmp/lo.tsv" --out "$tmp/x.txt" --limit -1
expect 1 "lo-om.txt exists \(use --force" nlp classify trees --checkpoint "$tmp/lo-om/best.ckpt" --test "$tmp/lo.tsv" --out "$tmp/lo-om.txt"
expect 1 "not a grove classifier checkpoint|cannot|not a" nlp classify trees --checkpoint "$tmp/lo.tsv" --test "$tmp/lo.tsv" --out "$tmp/x.txt"
printf '9\t( ( ( [MAX 2 ) 9 ) ] \n' >"$tmp/bad.tsv"
expect 1 "bad.tsv:1" nlp classify trees --checkpoint "$tmp/lo-om/best.ckpt" --test "$tmp/bad.tsv" --out "$tmp/x.txt"
[ -e "$tmp/x.txt" ] && fail "bad input: an output was written"

echo "nlp_classify_trees_cli: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
